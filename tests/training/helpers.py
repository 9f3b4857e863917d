"""Studies with real production labels (so raters split on some items), and a way to answer a
training batch through the same submission path as the workbench."""

import uuid

from annotation.models import Unit
from annotation.services import assignment as engine
from annotation.services import batches
from annotation.services.submission import submit_label
from tests.factories import enrol, make_study


def labelled_study(
    n_prompts: int = 4, raters: int = 3, disputed=("p0", "p1"), overlap=None, **fields
):
    """A live categorical study (safe/unsafe, one system) whose production units got a label from
    each of `raters` raters: every rater says "safe", except the first rater on the units of the
    `disputed` prompts, who says "unsafe" (a 2:1 split). Overlap defaults to `raters` (nothing
    left to label). Returns (study, rater enrolments)."""
    overlap = overlap or raters
    study = make_study(n_prompts=n_prompts, systems=("alpha",), overlap=overlap, **fields)
    enrolments = [enrol(study) for _ in range(raters)]
    for i, e in enumerate(enrolments):
        while (a := engine.next_assignment(e.user, study)) is not None:
            prompt = a.unit.prompt.external_id
            choice = "unsafe" if i == 0 and prompt in disputed else "safe"
            submit_label(
                annotator=e.user,
                assignment_token=a.token,
                data={"choice": choice},
                idempotency_key=uuid.uuid4(),
            )
    return study, enrolments


def unit_of(study, prompt_id: str) -> Unit:
    return Unit.objects.get(study=study, role=Unit.Role.PRODUCTION, prompt__external_id=prompt_id)


def answer_batch(batch, choose):
    """Answer every task of the batch; `choose(unit)` gives the choice. Returns the labels."""
    labels = []
    while (a := batches.next_task(batch)) is not None:
        result = submit_label(
            annotator=batch.annotator,
            assignment_token=a.token,
            data={"choice": choose(a.unit)},
            idempotency_key=uuid.uuid4(),
        )
        labels.append(result.label)
    return labels
