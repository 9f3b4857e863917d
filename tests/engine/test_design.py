"""Order, balance and blinding by design: checked with statistics that could fail."""

import uuid
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from annotation.models import Assignment, Label, Study, Unit
from annotation.presentation import left_is_first
from annotation.services import assignment as engine
from annotation.services import setup
from annotation.services.submission import submit_label
from tests.factories import enrol, make_study

pytestmark = pytest.mark.django_db


def work_through(user, study, limit, choice="safe"):
    served = []
    for _ in range(limit):
        a = engine.next_assignment(user, study)
        if a is None:
            break
        submit_label(
            annotator=user,
            assignment_token=a.token,
            data={"choice": choice},
            idempotency_key=uuid.uuid4(),
        )
        served.append(a)
    return served


def test_orders_of_two_annotators_are_unrelated():
    # Three pairs, each on its own study (200 units, both annotators get all). One pair's rank
    # correlation has an SD of about 0.1 over the walks' seeds (0.24 and 0.28 were seen), so a
    # single pair against 0.25 failed about once in a hundred runs; the mean of three has an SD
    # of about 0.06. The same order for everyone would give 1.
    rhos = []
    for _ in range(3):
        study = make_study(n_prompts=100, overlap=2)
        first, second = enrol(study).user, enrol(study).user
        a = [x.unit_id for x in work_through(first, study, 300)]
        b = [x.unit_id for x in work_through(second, study, 300)]
        assert sorted(a) == sorted(b) and len(set(a)) == len(a) == 200
        rank_b = {unit: i for i, unit in enumerate(b)}
        rhos.append(stats.spearmanr(range(len(a)), [rank_b[u] for u in a]).statistic)
        # Not one sequence started at two places: few units are followed by the same unit.
        next_a = dict(zip(a, a[1:], strict=False))
        shared = sum(next_a.get(u) == v for u, v in zip(b, b[1:], strict=False))
        assert shared < 0.15 * len(b)
    assert abs(np.mean(rhos)) < 0.25 and max(abs(r) for r in rhos) < 0.45, rhos


def test_order_follows_no_id_or_import_order():
    study = make_study(n_prompts=100, overlap=1)
    user = enrol(study).user
    order = [x.unit_id for x in work_through(user, study, 300)]
    assert abs(stats.spearmanr(range(len(order)), order).statistic) < 0.25


def injected_positions(purpose, **rates):
    """Positions of injected units over several annotators' sessions of 60 tasks."""
    study = make_study(
        n_prompts=150,
        overlap=4,
        systems=("a", "b"),
        repeat_min_gap_units=3,
        repeat_min_gap_minutes=0,
        **rates,
    )
    units = list(study.units.order_by("id"))
    for unit in units[:60]:
        setup.mark_gold(unit, {"choice": "safe"})
    sessions = []
    for _ in range(4):
        user = enrol(study).user
        served = work_through(user, study, 60)
        assert served[0].purpose == "production"
        sessions.append([a.position for a in served if a.purpose == purpose])
    return sessions


@pytest.mark.parametrize(
    "purpose,rates",
    [("gold", {"gold_rate": 0.2}), ("repeat", {"repeat_rate": 0.2})],
)
def test_injected_positions_are_uniform_over_the_session(purpose, rates):
    sessions = injected_positions(purpose, **rates)
    positions = [p for session in sessions for p in session]
    # Repeats need an earlier label min_gap + 1 positions back; count from where they can start.
    start = 2 if purpose == "gold" else 5
    assert len(positions) > 25
    bins = np.histogram(positions, bins=5, range=(start, 61))[0]
    assert stats.chisquare(bins).pvalue > 0.001
    gaps = {g for session in sessions for g in np.diff(session).tolist()}
    assert len(gaps) > 3, "injections look periodic"


def test_no_injection_when_it_would_be_the_last_task():
    study = make_study(n_prompts=10, overlap=1, systems=("a",), gold_rate=0.5)
    for unit in list(study.units.order_by("id"))[:5]:
        setup.mark_gold(unit, {"choice": "safe"})
    user = enrol(study).user
    served = work_through(user, study, 50)
    assert served[-1].purpose == "production" and served[0].purpose == "production"
    assert Counter(a.purpose for a in served)["production"] == 5


def test_quota_leaves_no_injection_at_the_end():
    study = make_study(
        n_prompts=20, overlap=1, systems=("a",), gold_rate=0.9, quota_per_annotator=6
    )
    for unit in list(study.units.order_by("id"))[:10]:
        setup.mark_gold(unit, {"choice": "safe"})
    served = work_through(enrol(study).user, study, 20)
    assert len(served) == 6 and served[-1].purpose == "production"


def test_gold_is_served_once_per_annotator_and_not_counted_in_overlap():
    study = make_study(n_prompts=30, overlap=1, systems=("a",), gold_rate=0.5)
    gold = list(study.units.order_by("id"))[:3]
    for unit in gold:
        setup.mark_gold(unit, {"choice": "safe"})
    user = enrol(study).user
    served = work_through(user, study, 100)
    gold_served = [a.unit_id for a in served if a.purpose == "gold"]
    assert sorted(gold_served) == sorted(u.id for u in gold)
    # A gold unit's slots count its exposures left; production units are all fully labelled.
    assert all(u.open_slots == u.overlap - 1 for u in Unit.objects.filter(role="gold"))
    production = Label.objects.filter(study=study, purpose="production")
    assert production.count() == Unit.objects.filter(study=study, role="production").count()


def test_repeats_come_back_late_enough_under_a_new_token():
    study = make_study(
        n_prompts=40,
        overlap=1,
        systems=("a",),
        repeat_rate=0.3,
        repeat_min_gap_units=5,
        repeat_min_gap_minutes=0,
    )
    served = work_through(enrol(study).user, study, 100)
    repeats = [a for a in served if a.purpose == "repeat"]
    assert repeats
    for r in repeats:
        assert r.position - r.repeat_of.position - 1 >= 5
        assert r.token != r.repeat_of.token and r.unit_id == r.repeat_of.unit_id
    assert Label.objects.filter(purpose="production").count() == 40


def test_repeats_wait_the_minimum_time():
    study = make_study(
        n_prompts=40,
        overlap=1,
        systems=("a",),
        repeat_rate=0.5,
        repeat_min_gap_units=1,
        repeat_min_gap_minutes=30,
    )
    served = work_through(enrol(study).user, study, 100)
    assert not [a for a in served if a.purpose == "repeat"]


def test_always_left_annotator_gives_each_system_half_the_wins():
    study = make_study(Study.TaskKind.PAIRWISE, n_prompts=200, overlap=1)
    user = enrol(study).user
    served = work_through(user, study, 250, choice="left")
    assert len(served) == 200
    wins = Counter(Label.objects.values_list("winner__name", flat=True))
    assert abs(wins["alpha"] / 200 - 0.5) <= 0.02
    for a in Assignment.objects.select_related("label"):
        left = a.unit.members.get(output_id=a.presentation["left"]).output
        assert a.label.winner_id == left.system_id


def test_left_right_is_counterbalanced_per_annotator_and_unpredictable():
    for seed in range(50):
        sides = [left_is_first(seed, p) for p in range(1, 101)]
        assert sum(sides) == 50
    runs = [left_is_first(7, p) for p in range(1, 2001)]
    # After two lefts in a block the next is right, but the sequence is not a fixed pattern.
    assert len({tuple(runs[i : i + 4]) for i in range(0, 2000, 4)}) == 6


def test_spa_letters_and_orders_are_drawn_per_annotator():
    study = make_study(
        Study.TaskKind.SPA,
        n_prompts=5,
        systems=("a", "b", "c", "d"),
        spa_exposure_m=5,
        spa_both_directions=True,
        overlap=40,
    )
    letters, prompt_orders = set(), set()
    for _ in range(12):
        a = engine.next_assignment(enrol(study).user, study)
        p = a.presentation
        letters.add(tuple(sorted(p["letters"].items())))
        prompt_orders.add(tuple(p["prompts"]))
        n = len(p["questions"]) // 2
        forward, reverse = p["questions"][:n], p["questions"][n:]
        assert not any(q["reverse"] for q in forward) and all(q["reverse"] for q in reverse)
        assert forward[-1]["comparison"] != reverse[0]["comparison"]
        assert sorted(q["comparison"] for q in forward) == sorted(q["comparison"] for q in reverse)
    assert len(letters) > 6 and len(prompt_orders) > 6


def test_balanced_keys_give_every_stretch_of_the_ring_the_study_mix():
    study = make_study(n_prompts=120, systems=("a", "b", "c"), overlap=1)
    engine.balance_shuffle_keys(study, seed=3)
    ring = list(
        Unit.objects.filter(study=study)
        .order_by("shuffle_key")
        .values_list("members__output__system__name", flat=True)
    )
    for start in range(0, len(ring) - 30, 7):
        counts = Counter(ring[start : start + 30])
        assert all(9 <= counts[s] <= 11 for s in "abc"), counts
