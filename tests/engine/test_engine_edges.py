"""The engine at its edges: which gold, attention or earlier label an injected position draws
(every gold and attention unit is a possible first pick, drawn from the annotator's seed and the
position; a label is repeatable from the first position its gap allows), and which leases the
sweep reclaims (only those past their time).

Added after the mutation run of annotation/services/assignment.py (bench/MUTATION.md), where each
of these could change without any test in the module's list noticing.
"""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from annotation.models import Assignment, Unit
from annotation.schemes import AnswerError
from annotation.services import assignment as engine
from annotation.services import setup
from tests.factories import enrol, make_study

pytestmark = pytest.mark.django_db


def injected_units(role: str, n: int = 8):
    study = make_study(n_prompts=n, systems=("alpha",), overlap=3)
    units = list(Unit.objects.filter(study=study))
    for i, unit in enumerate(units):
        setup.mark_gold(unit, "safe", role=role)
        # Evenly spread keys: each unit follows an equal share of the ring of start points.
        unit.shuffle_key = i * (1 << engine.KEY_BITS) // n + 12345
        unit.save(update_fields=["shuffle_key"])
    return study, {u.pk for u in units}, enrol(study).user


@pytest.mark.parametrize("role", [Unit.Role.GOLD, Unit.Role.ATTENTION])
def test_every_gold_and_attention_unit_can_be_drawn_first_whatever_the_seed_or_position(role):
    study, units, user = injected_units(role)
    cursor = connection.cursor()
    by_seed = {engine._gold_unit(cursor, study, role, user.id, seed, 11) for seed in range(200)}
    by_position = {engine._gold_unit(cursor, study, role, user.id, 5, pos) for pos in range(200)}
    assert by_seed == units
    assert by_position == units


def test_a_label_is_repeatable_from_the_first_position_its_gap_allows():
    study = make_study(n_prompts=2, repeat_rate=0.1, repeat_min_gap_units=5)
    user = enrol(study).user
    now = timezone.now()
    earlier = Assignment.objects.create(
        study=study,
        unit=Unit.objects.filter(study=study).first(),
        annotator=user,
        purpose="production",
        status="submitted",
        position=1,
        leased_at=now - timedelta(days=1),
        expires_at=now - timedelta(days=1) + timedelta(minutes=30),
        closed_at=now - timedelta(days=1),
    )
    cursor = connection.cursor()
    # Position 7 leaves 5 positions (2-6) between it and position 1; position 6 only 4.
    assert engine.repeatable(cursor, study, user.id, 3, 6, now) is None
    assert tuple(engine.repeatable(cursor, study, user.id, 3, 7, now)) == (
        earlier.id,
        earlier.unit_id,
    )


def test_only_leases_past_their_time_are_reclaimed_and_closed_then():
    make_study(n_prompts=4, systems=("alpha",))  # so that no unit id is also a lease id
    study = make_study(n_prompts=2, systems=("alpha",), overlap=1)
    lease = engine.next_assignment(enrol(study).user, study)
    assert engine.reclaim_expired(study, now=lease.expires_at) == 0
    lease.refresh_from_db()
    assert lease.status == Assignment.Status.LEASED
    later = lease.expires_at + timedelta(seconds=1)
    assert engine.reclaim_expired(study, now=later) == 1
    lease.refresh_from_db()
    assert (lease.status, lease.closed_at) == (Assignment.Status.EXPIRED, later)
    assert Unit.objects.get(pk=lease.unit_id).open_slots == 1  # its slot is back


def test_a_studys_sweep_leaves_other_studies_leases_and_a_full_sweep_takes_them():
    studies = [make_study(n_prompts=2, systems=("alpha",), overlap=1) for _ in range(2)]
    leases = [engine.next_assignment(enrol(s).user, s) for s in studies]
    later = max(a.expires_at for a in leases) + timedelta(seconds=1)
    assert engine.reclaim_expired(studies[0], now=later) == 1
    for lease in leases:
        lease.refresh_from_db()
    assert [a.status for a in leases] == [Assignment.Status.EXPIRED, Assignment.Status.LEASED]
    assert engine.reclaim_expired(now=later) == 1
    leases[1].refresh_from_db()
    assert leases[1].status == Assignment.Status.EXPIRED


def test_a_lease_given_back_without_a_reason_is_closed_then_with_none():
    study = make_study(n_prompts=2, systems=("alpha",), overlap=1)
    lease = engine.next_assignment(enrol(study).user, study)
    before = timezone.now()
    assert engine.abandon(lease)
    lease.refresh_from_db()
    assert (lease.status, lease.skip_reason) == (Assignment.Status.ABANDONED, "")
    assert before <= lease.closed_at <= timezone.now()


def test_a_skip_without_a_listed_reason_is_refused_on_the_reason_field():
    study = make_study(n_prompts=2, systems=("alpha",), overlap=1)
    user = enrol(study).user
    lease = engine.next_assignment(user, study)
    with pytest.raises(AnswerError) as refused:
        engine.skip(user, study, lease.token, "bored")
    assert (refused.value.field, refused.value.message) == (
        "_skip_reason",
        "choose why you skip this task",
    )
