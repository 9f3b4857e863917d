"""Studies for the workbench tests: neutral texts, so a system's name can only leak by mistake."""

import re

from annotation.models import Study
from annotation.services import setup
from tests.factories import StudyFactory, enrol

SYSTEMS = ("zephyr-secret", "quokka-secret", "marlin-secret")


def blind_study(task_kind: str, n_prompts: int = 4, systems=SYSTEMS[:2], **fields) -> Study:
    """A live study whose texts never mention the systems that wrote them."""
    study = StudyFactory(task_kind=task_kind, **fields)
    setup.add_content(
        study,
        (
            {
                "prompt_id": f"p{i}",
                "prompt": f"Question {i}: what is worth knowing?",
                "system": name,
                "output": f"Answer {s} to question {i}, plainly written.",
            }
            for i in range(n_prompts)
            for s, name in enumerate(systems)
        ),
    )
    if task_kind in (Study.TaskKind.SPA, Study.TaskKind.PAIRWISE):
        setup.add_comparisons(
            study, [(systems[i], systems[i + 1], "") for i in range(len(systems) - 1)]
        )
    setup.build_units(study)
    return study


def signed_in(client, study, **enrolment):
    user = enrol(study, **enrolment).user
    client.force_login(user)
    return user


def form_fields(html: str) -> dict:
    """The hidden fields of the task form in a page or partial."""
    return dict(re.findall(r'<input type="hidden" name="(_\w+)" value="([^"]*)"', html))


HTMX = {"HTTP_HX_REQUEST": "true"}


def task_form(html: str) -> str:
    """The task form's markup alone."""
    start = html.index('<form id="task-form"')
    return html[start : html.index("</form>", start)]
