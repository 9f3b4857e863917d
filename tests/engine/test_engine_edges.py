"""The engine at its edges: which gold, attention or earlier label an injected position draws
(every gold and attention unit is a possible first pick, drawn from the annotator's seed and the
position; a label is repeatable from the first position its gap allows), which positions are
injected (as the seeded draw says, never the first nor the last a quota allows), how a task is
presented (as drawn, with its outputs' texts), where the walk resumes, the seed of an enrolment
made without one, and which leases the sweep reclaims (only those past their time).

Added after the mutation runs of annotation/services/assignment.py (bench/MUTATION.md), where each
of these could change without any test in the module's list noticing."""

import itertools
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection
from django.utils import timezone

from annotation import presentation
from annotation.models import Assignment, Comparison, Unit, UnitOutput
from annotation.presentation import SALT_ROLE, Member, uniform
from annotation.schemes import AnswerError
from annotation.services import assignment as engine
from annotation.services import setup
from tests.engine.test_next_and_submit import answer, label_all
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


@pytest.mark.parametrize(
    "kind,systems,fields",
    [
        ("categorical", ("alpha",), {}),
        ("pairwise", ("alpha", "beta"), {}),
        (
            "spa",
            ("a", "b", "c"),
            {"spa_exposure_m": 2, "spa_both_directions": True, "spa_fixed_sample": False},
        ),
    ],
)
def test_a_task_is_served_as_drawn_for_its_position_with_the_texts_of_its_outputs(
    kind, systems, fields
):
    study = make_study(task_kind=kind, n_prompts=4, systems=systems, **fields)
    # Comparisons asked in the lead's order (position), not in the order they were added.
    for comparison, position in zip(
        Comparison.objects.filter(study=study).order_by("id"), (2, 1), strict=False
    ):
        Comparison.objects.filter(pk=comparison.pk).update(position=position)
    e = enrol(study)
    for _ in range(2):  # two positions: a pair's sides are drawn per position
        a = engine.next_assignment(e.user, study)
        members = list(
            UnitOutput.objects.filter(unit_id=a.unit_id)
            .order_by("position")
            .select_related("output__prompt")
        )
        comparisons = Comparison.objects.filter(study=study).order_by("position", "id")
        drawn = presentation.draw(
            Unit.objects.get(pk=a.unit_id).kind,
            [Member(m.output_id, m.output.system_id, m.output.prompt_id) for m in members],
            e.queue_seed,
            a.position,
            tuple(comparisons.values_list("id", "system_x_id", "system_y_id")),
            both_directions=study.spa_both_directions,
        )
        assert a.presentation == drawn
        assert Assignment.objects.get(pk=a.pk).presentation == drawn
        assert a.texts == {
            m.output_id: (
                m.output.prompt_id,
                m.output.prompt.text,
                m.output.text,
                m.output.system_id,
            )
            for m in members
        }
        engine.abandon(a)


def test_an_enrolment_without_a_seed_gets_a_62_bit_seed_of_its_own():
    study = make_study(n_prompts=3, systems=("alpha",))
    seeds = []
    for e in (enrol(study, queue_seed=0), enrol(study, queue_seed=0)):
        assert engine.next_assignment(e.user, study) is not None
        e.refresh_from_db()
        assert 0 < e.queue_seed < 1 << 62
        seeds.append(e.queue_seed)
    assert seeds[0] != seeds[1]


GOLD_RATE = 0.5


def gold_heavy_study(**fields):
    study = make_study(n_prompts=24, systems=("alpha",), gold_rate=GOLD_RATE, **fields)
    for unit in Unit.objects.filter(study=study).order_by("id")[:12]:
        setup.mark_gold(unit, {"choice": "safe"})
    return study


def drawn_gold(seed: int, position: int) -> bool:
    return uniform(seed, position, SALT_ROLE) < GOLD_RATE


# A seed whose draw says gold at positions 1, 2 and 3.
GOLDEN_SEED = next(s for s in itertools.count(1) if all(drawn_gold(s, p) for p in (1, 2, 3)))


def purposes(user, study, n: int = 20) -> list[str]:
    return [a.purpose for a in label_all(user, study, limit=n)]


def test_each_task_after_the_first_is_what_its_seeded_draw_says_when_one_is_available():
    rates = {"gold_rate": 0.2, "repeat_rate": 0.2, "attention_rate": 0.2}
    study = make_study(
        n_prompts=40, systems=("alpha",), repeat_min_gap_units=0, repeat_min_gap_minutes=0, **rates
    )
    units = list(Unit.objects.filter(study=study).order_by("id"))
    for unit in units[:10]:
        setup.mark_gold(unit, {"choice": "safe"})
    for unit in units[10:20]:
        setup.mark_gold(unit, {"choice": "safe"}, role=Unit.Role.ATTENTION)
    # A seed whose first draw would inject.
    seed = next(s for s in itertools.count(1) if uniform(s, 1, SALT_ROLE) < 0.6)
    user = enrol(study, queue_seed=seed).user
    expected, labels, repeats = [], 0, 0
    for position in range(1, 16):
        u = uniform(seed, position, SALT_ROLE)
        if position == 1 or u >= 0.6:
            purpose = "production"
        elif u < 0.2:
            purpose = "gold"
        elif u < 0.4:  # a repeat needs a production label not repeated yet
            purpose = "repeat" if labels > repeats else "production"
        else:
            purpose = "attention"
        labels += purpose == "production"
        repeats += purpose == "repeat"
        expected.append(purpose)
    assert {"gold", "repeat", "attention"} <= set(expected)
    served = label_all(user, study, limit=15)
    assert [a.purpose for a in served] == expected
    # Each from its own pool: gold from the gold units, attention checks from theirs.
    roles = dict(Unit.objects.filter(study=study).values_list("id", "role"))
    pools = {"production": "production", "repeat": "production"}
    assert [roles[a.unit_id] for a in served] == [pools.get(p, p) for p in expected]


def test_the_last_task_a_quota_allows_is_never_injected():
    study = gold_heavy_study(quota_per_annotator=3)
    user = enrol(study, queue_seed=GOLDEN_SEED).user
    # Gold drawn at all three positions: the first is never injected, nor the last.
    assert purposes(user, study) == ["production", "gold", "production"]


def on_one_stretch(units, good_seed=lambda seed: True) -> int:
    """Key the production units one after another at the start of the first stretch of an
    annotator's walk, and return the seed of that walk (the first that `good_seed` accepts)."""

    def wide(seed):
        entry, hi = engine.segment(seed, 0, 0)
        return hi - entry > engine.BLOCK_SIZE // 4

    seed = next(s for s in range(1, 10_000) if wide(s) and good_seed(s))  # bounded: no hang
    entry, _ = engine.segment(seed, 0, 0)
    for i, unit in enumerate(units, start=1):
        Unit.objects.filter(pk=unit.pk).update(shuffle_key=entry + i)
    return seed


def hold(study, unit) -> Assignment:
    """Someone else's live lease on the unit's only slot."""
    now = timezone.now()
    Unit.objects.filter(pk=unit.pk).update(open_slots=0)
    return Assignment.objects.create(
        study=study,
        unit=unit,
        annotator=enrol(study).user,
        purpose="production",
        status="leased",
        position=1,
        leased_at=now,
        expires_at=now + timedelta(minutes=30),
    )


def test_the_walk_resumes_after_the_last_unit_served_and_comes_back_for_a_reopened_one():
    study = make_study(n_prompts=4, systems=("alpha",), overlap=1)
    units = list(Unit.objects.filter(study=study).order_by("id"))
    user = enrol(study, queue_seed=on_one_stretch(units)).user
    held = hold(study, units[0])
    first = engine.next_assignment(user, study)
    assert first.unit_id == units[1].pk
    answer(user, first)
    assert engine.abandon(held)  # the first unit is open again, behind the annotator's cursor
    served = [a.unit_id for a in label_all(user, study)]
    assert served == [units[2].pk, units[3].pk, units[0].pk]


def test_the_production_unit_an_injected_task_displaced_comes_next():
    study = make_study(n_prompts=7, systems=("alpha",), gold_rate=0.5, overlap=1)
    gold, *units = Unit.objects.filter(study=study).order_by("id")
    setup.mark_gold(gold, {"choice": "safe"})
    seed = on_one_stretch(units, good_seed=lambda seed: uniform(seed, 2, SALT_ROLE) < 0.5)
    user = enrol(study, queue_seed=seed).user
    held = hold(study, units[0])
    served = label_all(user, study, limit=2)
    assert [(a.purpose, a.unit_id) for a in served] == [
        ("production", units[1].pk),
        ("gold", gold.pk),
    ]
    engine.abandon(held)  # open again, behind the unit the gold task displaced
    served += label_all(user, study)
    production = [a.unit_id for a in served if a.purpose == "production"]
    assert production == [u.pk for u in units[1:]] + [units[0].pk]


def test_the_walk_goes_stretch_by_stretch_and_on_into_the_next_pass():
    def stretch(seed, walk_pass, step):
        lo, hi = engine.segment(seed, walk_pass, step)
        return lo if hi - lo > 100 else None

    places = ((7, engine.SEGMENTS - 2), (7, engine.SEGMENTS - 1), (8, 0))
    seed = next(s for s in range(1, 10_000) if all(stretch(s, *p) for p in places))
    study = make_study(n_prompts=3, systems=("alpha",))
    units = list(Unit.objects.filter(study=study).order_by("id"))
    for unit, place in zip(units, places, strict=True):
        Unit.objects.filter(pk=unit.pk).update(shuffle_key=stretch(seed, *place) + 1)
    e = enrol(study, queue_seed=seed, walk_pass=7, walk_step=engine.SEGMENTS - 2)
    for unit, place in zip(units, places, strict=True):
        assert answer(e.user, engine.next_assignment(e.user, study)).status == "stored"
        e.refresh_from_db()
        assert (e.walk_pass, e.walk_step) == place
        assert (
            Assignment.objects.get(annotator=e.user, position=e.positions_issued).unit_id == unit.pk
        )


def test_the_walks_fallback_jumps_to_a_point_drawn_per_annotator_pass_and_step():
    study = make_study(n_prompts=8, systems=("alpha",))
    units = set(Unit.objects.filter(study=study).values_list("id", flat=True))
    for i, unit in enumerate(sorted(units)):  # evenly spread over the ring
        Unit.objects.filter(pk=unit).update(shuffle_key=i * (1 << engine.KEY_BITS) // 8 + 12345)
    user = enrol(study).user
    cursor = connection.cursor()

    def first_pick(seed, walk_pass, step):
        walk = engine.Walk(seed, walk_pass, step, None)
        return engine.pick_production(cursor, study.id, user.id, walk)[0]

    for picks in (
        Counter(first_pick(seed, 0, 0) for seed in range(200)),
        Counter(first_pick(5, walk_pass, 0) for walk_pass in range(200)),
        Counter(first_pick(5, 0, step) for step in range(200)),
    ):
        assert set(picks) == units and min(picks.values()) >= 8, picks


def test_a_lease_served_is_the_stored_row_as_django_sees_it():
    study = make_study(n_prompts=2, systems=("alpha",))
    lease = engine.next_assignment(enrol(study).user, study)
    lease.validate_unique()  # a new row would clash with itself on its token


def test_the_periodic_sweep_expires_every_studys_leases_past_the_claims_time(monkeypatch):
    monkeypatch.setattr(engine, "_last_sweep", [0.0])  # the sweep is due
    elsewhere = make_study(n_prompts=2, systems=("alpha",))
    elsewheres = engine.next_assignment(enrol(elsewhere).user, elsewhere)
    monkeypatch.setattr(engine, "_last_sweep", [0.0])
    study = make_study(n_prompts=2, systems=("alpha",))
    later = elsewheres.expires_at + timedelta(seconds=1)
    assert engine.next_assignment(enrol(study).user, study, now=later) is not None
    elsewheres.refresh_from_db()
    assert (elsewheres.status, elsewheres.closed_at) == (Assignment.Status.EXPIRED, later)


def test_a_claim_that_finds_nothing_reclaims_its_own_studys_expired_leases_and_serves_one(
    monkeypatch,
):
    monkeypatch.setattr(engine, "_last_sweep", [time.monotonic()])  # between periodic sweeps
    study = make_study(n_prompts=6, systems=("alpha",), overlap=2)
    units = list(Unit.objects.filter(study=study).order_by("id"))
    for i, unit in enumerate(units):  # one stretch of the ring, the held unit last
        Unit.objects.filter(pk=unit.pk).update(shuffle_key=1000 + i)
    held = units[-1]
    past = timezone.now() - timedelta(minutes=1)
    for _ in range(2):
        Assignment.objects.create(
            study=study,
            unit=held,
            annotator=enrol(study).user,
            purpose="production",
            status="leased",
            position=1,
            leased_at=past - timedelta(minutes=30),
            expires_at=past,
        )
    Unit.objects.filter(pk=held.pk).update(open_slots=0)
    user = enrol(study).user
    served = {a.unit_id for a in label_all(user, study, limit=5)}
    assert served == {u.pk for u in units[:-1]}
    elsewhere = make_study(n_prompts=1, systems=("alpha",))
    elsewheres = engine.next_assignment(enrol(elsewhere).user, elsewhere)
    Assignment.objects.filter(pk=elsewheres.pk).update(expires_at=past)
    # Nothing is open to them but the held unit, whose leases are past their time.
    assert engine.next_assignment(user, study).unit_id == held.pk
    elsewheres.refresh_from_db()
    assert elsewheres.status == Assignment.Status.LEASED  # another study's lease waits its sweep


def test_a_claim_that_lost_a_race_is_tried_again_three_times_in_all(monkeypatch):
    """An IntegrityError only comes from a parallel request of the same annotator (PostgreSQL);
    here the claim is made to lose that race."""
    study = make_study(n_prompts=2, systems=("alpha",))
    user = enrol(study).user
    claim, calls = engine._claim, []

    def losing(times):
        def attempt(*args):
            calls.append(1)
            if len(calls) <= times:
                raise IntegrityError("a parallel claim took it")
            return claim(*args)

        return attempt

    monkeypatch.setattr(engine, "_claim", losing(1))
    assert engine.next_assignment(user, study) is not None
    calls.clear()
    monkeypatch.setattr(engine, "_claim", losing(3))
    with pytest.raises(IntegrityError):
        engine.next_assignment(user, study)
    assert len(calls) == 3
