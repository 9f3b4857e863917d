"""Skipping through the engine: only the annotator's own task in that study, and an expired lease
is closed with its reason like an open one.

Added after the mutation run of annotation/services/assignment.py `skip` (bench/MUTATION.md):
the workbench tests skip their own open task only, so a skip that found another annotator's task
by its token, or a task of another study, and a skip of an expired lease, were never tried.
"""

from datetime import timedelta

import pytest

from annotation.models import Assignment
from annotation.services import assignment as engine
from tests.factories import enrol, make_study

pytestmark = pytest.mark.django_db


def test_a_skip_finds_only_the_annotators_own_task_in_that_study():
    study = make_study(n_prompts=3, systems=("alpha",), overlap=2)
    other_study = make_study(n_prompts=3, systems=("alpha",), overlap=2)
    owner, stranger = enrol(study).user, enrol(study).user
    enrol(other_study, user=owner)
    lease = engine.next_assignment(owner, study)

    assert engine.skip(stranger, study, lease.token, "cannot_judge") == "not_found"
    assert engine.skip(owner, other_study, lease.token, "cannot_judge") == "not_found"
    lease.refresh_from_db()
    assert (lease.status, lease.skip_reason) == (Assignment.Status.LEASED, "")

    assert engine.skip(owner, study, lease.token, "cannot_judge") == "skipped"
    lease.refresh_from_db()
    assert (lease.status, lease.skip_reason) == (Assignment.Status.ABANDONED, "cannot_judge")


def test_an_expired_lease_is_skipped_with_its_reason_and_no_other_expired_lease_changes():
    study = make_study(n_prompts=3, systems=("alpha",), overlap=2)
    owner, other = enrol(study).user, enrol(study).user
    lease, others = engine.next_assignment(owner, study), engine.next_assignment(other, study)
    later = max(lease.expires_at, others.expires_at) + timedelta(seconds=1)
    assert engine.reclaim_expired(study, now=later) == 2

    assert engine.skip(owner, study, lease.token, "unreadable") == "skipped"
    lease.refresh_from_db()
    others.refresh_from_db()
    assert (lease.status, lease.skip_reason) == (Assignment.Status.ABANDONED, "unreadable")
    assert (others.status, others.skip_reason) == (Assignment.Status.EXPIRED, "")
