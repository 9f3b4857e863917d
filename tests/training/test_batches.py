"""Training batches: when a batch counts as complete, the order and fields it is made with, and
its answered tasks. Added after the mutation run of annotation/services/batches.py."""

import pytest

from annotation.models import TrainingBatch, Unit
from annotation.services import batches
from annotation.services.training_items import training_copy
from tests.factories import enrol, make_study
from tests.training.helpers import answer_batch

pytestmark = pytest.mark.django_db


def batch_of(n_items, **fields):
    study = make_study(n_prompts=3, systems=("alpha",))
    user = enrol(study).user
    units = [training_copy(u, Unit.Role.QUALIFICATION) for u in Unit.objects.filter(study=study)]
    return batches.create_batch(
        study=study,
        annotator=user,
        kind=TrainingBatch.Kind.QUALIFICATION,
        units=units[:n_items],
        seed=3,
        **fields,
    )


def test_an_empty_batch_is_never_complete():
    assert batches.is_complete(batch_of(0)) is False


def test_a_one_task_batch_is_complete_once_answered():
    batch = batch_of(1)
    assert batches.progress(batch) == (0, 1) and not batches.is_complete(batch)
    labels = answer_batch(batch, lambda unit: "safe")
    assert batches.progress(batch) == (1, 1) and batches.is_complete(batch)
    assert [(t.position, label) for t, label in batches.answered(batch)] == [(1, labels[0])]


def test_tasks_are_numbered_from_one_in_the_seeded_order_with_the_fields_given():
    batch = batch_of(3, attempt=2)
    again = batch_of(3)
    assert batch.attempt == 2
    positions = list(batch.tasks.order_by("position").values_list("position", flat=True))
    assert positions == [1, 2, 3]
    sources = [
        [t.unit.prompt.external_id for t in b.tasks.order_by("position")] for b in (batch, again)
    ]
    assert sources[0] == sources[1]  # the same seed, the same order
    labels = answer_batch(batch, lambda unit: "unsafe")
    assert [(t.position, lab.choice) for t, lab in batches.answered(batch)] == [
        (1, "unsafe"),
        (2, "unsafe"),
        (3, "unsafe"),
    ]
    assert [lab for _, lab in batches.answered(batch)] == labels
