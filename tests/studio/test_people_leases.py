"""Ending someone's access releases their open leases: only theirs, only open ones, only in the
workspace they leave (or everywhere when the account is deactivated), each production slot back
once and no slot for training work.

Added after the mutation run of annotation/services/people.py (bench/MUTATION.md).
"""

import uuid

import pytest

from annotation.models import Assignment, TrainingBatch, Unit
from annotation.services import batches, people
from annotation.services.assignment import next_assignment
from annotation.services.submission import submit_label
from annotation.services.training_items import training_copy
from tests.factories import UserFactory, enrol, make_study

pytestmark = pytest.mark.django_db


def slots(unit):
    return Unit.objects.get(pk=unit.pk).open_slots


def status(assignment):
    return Assignment.objects.get(pk=assignment.pk).status


def test_removal_releases_the_open_leases_in_that_workspace_only():
    here, there = make_study(n_prompts=2), make_study(n_prompts=2)
    user, colleague = UserFactory(), UserFactory()
    for study in (here, there):
        enrol(study, user)
    enrol(here, colleague)
    lease_here, lease_there = next_assignment(user, here), next_assignment(user, there)
    colleagues = next_assignment(colleague, here)
    before = {a.pk: slots(a.unit) for a in (lease_here, lease_there, colleagues)}
    assert people.remove_membership(here.workspace, user) == 1
    assert status(lease_here) == Assignment.Status.EXPIRED
    assert Assignment.objects.get(pk=lease_here.pk).closed_at is not None
    assert slots(lease_here.unit) == before[lease_here.pk] + 1
    assert status(lease_there) == status(colleagues) == Assignment.Status.LEASED
    assert slots(lease_there.unit) == before[lease_there.pk]
    if colleagues.unit_id != lease_here.unit_id:
        assert slots(colleagues.unit) == before[colleagues.pk]


def test_submitted_work_is_left_alone_and_nothing_open_releases_nothing():
    study = make_study(n_prompts=2)
    user = enrol(study).user
    lease = next_assignment(user, study)
    submit_label(
        annotator=user,
        assignment_token=lease.token,
        data={"choice": "safe"},
        idempotency_key=uuid.uuid4(),
    )
    before = slots(lease.unit)
    assert people.release_open_leases(user) == 0
    assert status(lease) == Assignment.Status.SUBMITTED and slots(lease.unit) == before


def test_deactivation_releases_every_open_lease_and_training_leases_return_no_slot():
    study, other = make_study(n_prompts=2), make_study(n_prompts=2)
    user = UserFactory()
    enrol(study, user)
    enrol(other, user)
    production = next_assignment(user, other)
    copy = training_copy(Unit.objects.filter(study=study).first(), Unit.Role.QUALIFICATION)
    batch = batches.create_batch(
        study=study, annotator=user, kind=TrainingBatch.Kind.QUALIFICATION, units=[copy]
    )
    training = batches.next_task(batch)
    assert training.purpose == Assignment.Purpose.QUALIFICATION
    before = slots(production.unit)
    assert people.deactivate_user(user) == 2
    assert status(production) == status(training) == Assignment.Status.EXPIRED
    assert slots(production.unit) == before + 1
    assert slots(copy) == 0  # a training copy never gets production slots
    user.refresh_from_db()
    assert not user.is_active
