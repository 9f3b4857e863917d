"""factory_boy factories for Concord's models, shared by every test module."""

import factory
from django.contrib.auth import get_user_model

from annotation import models as m
from annotation.services import setup


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw-for-tests-1")


class WorkspaceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = m.Workspace

    name = factory.Sequence(lambda n: f"Workspace {n}")
    slug = factory.Sequence(lambda n: f"ws-{n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = m.Membership

    workspace = factory.SubFactory(WorkspaceFactory)
    user = factory.SubFactory(UserFactory)
    role = m.Membership.Role.LEAD


class StudyFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = m.Study

    workspace = factory.SubFactory(WorkspaceFactory)
    name = factory.Sequence(lambda n: f"Study {n}")
    task_kind = m.Study.TaskKind.CATEGORICAL
    label_scheme = factory.LazyAttribute(
        lambda o: {
            "categorical": {
                "labels": [
                    {"value": "safe", "text": "Safe", "key": "s"},
                    {"value": "unsafe", "text": "Unsafe", "key": "u"},
                ]
            },
            "ordinal": {
                "labels": [
                    {"value": "fully", "text": "Fully", "key": "f"},
                    {"value": "partially", "text": "Partially", "key": "p"},
                    {"value": "not", "text": "Does not answer", "key": "n"},
                ]
            },
            "likert": {"points": [{"value": v, "text": str(v)} for v in range(1, 6)]},
            "continuous": {"min_text": "Worst", "max_text": "Best"},
            "pairwise": {"tie_allowed": True},
            "spa": {"likert_points": [{"value": v, "text": str(v)} for v in range(1, 6)]},
        }[o.task_kind]
    )
    status = m.Study.Status.LIVE
    overlap = 3


class EnrolmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = m.Enrolment

    study = factory.SubFactory(StudyFactory)
    user = factory.SubFactory(UserFactory)
    queue_seed = factory.Sequence(lambda n: 1000 + n)


def make_study(
    task_kind: str = m.Study.TaskKind.CATEGORICAL,
    n_prompts: int = 6,
    systems: tuple[str, ...] = ("alpha", "beta"),
    build: bool = True,
    **study_fields,
) -> m.Study:
    """A study with content (one output per prompt and system) and, by default, its units."""
    study = StudyFactory(task_kind=task_kind, **study_fields)
    setup.add_content(
        study,
        (
            {
                "prompt_id": f"p{i}",
                "prompt": f"Prompt number {i}",
                "system": name,
                "output": f"Output of {name} for prompt {i}",
            }
            for i in range(n_prompts)
            for name in systems
        ),
    )
    if task_kind in (m.Study.TaskKind.SPA, m.Study.TaskKind.PAIRWISE) and len(systems) > 1:
        setup.add_comparisons(
            study, [(systems[i], systems[i + 1], "") for i in range(len(systems) - 1)]
        )
    if build:
        setup.build_units(study)
    return study


def enrol(study: m.Study, user=None, **fields) -> m.Enrolment:
    """Enrol a user (a new one by default); like `annotation.services.people.enrol`, access also
    needs a membership of the study's workspace, made here as annotator if the user has none."""
    user = user or UserFactory()
    m.Membership.objects.get_or_create(
        workspace_id=study.workspace_id, user=user, defaults={"role": m.Membership.Role.ANNOTATOR}
    )
    return EnrolmentFactory(study=study, user=user, **fields)
