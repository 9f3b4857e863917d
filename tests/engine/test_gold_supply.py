"""Gold circulates no more widely than real work, fresh gold first, and the lead is told when the
pool is too small for the gold rate and the crowd."""

import re
import uuid
from collections import Counter

import pytest
from django.urls import reverse

from annotation import diagnostics
from annotation.models import Assignment, Membership, Unit
from annotation.services import assignment as engine
from annotation.services import setup
from annotation.services.submission import submit_label
from tests.engine.invariants import assert_invariants
from tests.factories import MembershipFactory, UserFactory, enrol, make_study

pytestmark = pytest.mark.django_db


def gold_study(n_prompts: int, n_gold: int, overlap: int, gold_rate: float, **fields):
    study = make_study(n_prompts=n_prompts, overlap=overlap, gold_rate=gold_rate, **fields)
    for unit in Unit.objects.filter(study=study).order_by("id")[:n_gold]:
        setup.mark_gold(unit, {"choice": "safe"})
    return study


def work(study, people: int, tasks: int):
    for _ in range(people):
        user = enrol(study).user
        for _ in range(tasks):
            a = engine.next_assignment(user, study)
            if a is None:
                break
            submit_label(
                annotator=user,
                assignment_token=a.token,
                data={"choice": "safe"},
                idempotency_key=uuid.uuid4(),
            )


def exposures(study) -> Counter:
    gold = Unit.objects.filter(study=study, role="gold").values_list("id", flat=True)
    shown = Counter(
        Assignment.objects.filter(study=study, purpose="gold").values_list("unit_id", flat=True)
    )
    return Counter({unit: shown[unit] for unit in gold})


def test_no_gold_unit_is_shown_to_more_annotators_than_the_overlap():
    study = gold_study(n_prompts=30, n_gold=4, overlap=2, gold_rate=0.3)
    work(study, people=8, tasks=15)
    shown = exposures(study)
    assert max(shown.values()) == 2 and sum(shown.values()) == 8, shown
    assert all(u.open_slots == 0 for u in Unit.objects.filter(study=study, role="gold"))
    assert_invariants(study)


def test_the_least_shown_gold_comes_first():
    study = gold_study(n_prompts=40, n_gold=8, overlap=4, gold_rate=0.25)
    work(study, people=6, tasks=12)
    shown = exposures(study)
    assert 0 < sum(shown.values()) < 8 * 4, shown  # the pool was never exhausted
    assert max(shown.values()) - min(shown.values()) <= 1, shown


def test_the_gold_supply_diagnostic_follows_its_formula():
    # 24 production units, overlap 3, gold 10%, nothing else injected: share 0.9,
    # T = min(24 * 3 / 0.9, n * 24 / 0.9) = 80 for n >= 3; needed = 8; one annotator
    # does min(80 / n, 26.7) tasks, so needs ceil(0.1 * 26.7) = 3 distinct units for n = 3.
    study = gold_study(n_prompts=13, n_gold=2, overlap=3, gold_rate=0.1)
    supply = diagnostics.gold_supply(study, annotators=3)
    assert (supply.gold_units, supply.cap, supply.exposures_left) == (2, 3, 6)
    assert (supply.needed, supply.per_annotator, supply.units_needed) == (8, 3, 3)
    assert not supply.enough
    assert "too small" in supply.message and "Add 1 gold units" in supply.message
    # With a quota of 10 tasks, 5 annotators do T = min(80, 5 * 10) = 50 tasks: 5 gold.
    study.quota_per_annotator = 10
    assert diagnostics.gold_supply(study, annotators=5).needed == 5
    # A big pool is enough.
    for unit in Unit.objects.filter(study=study, role="production").order_by("id")[:20]:
        setup.mark_gold(unit, {"choice": "safe"})
    assert diagnostics.gold_supply(study, annotators=3).enough


def test_when_the_pool_is_too_small_fewer_gold_tasks_are_served_as_said():
    study = gold_study(n_prompts=30, n_gold=3, overlap=2, gold_rate=0.3)
    supply = diagnostics.gold_supply(study, annotators=6)
    assert not supply.enough
    work(study, people=6, tasks=20)
    assert sum(exposures(study).values()) == supply.gold_units * supply.cap


def test_the_study_overview_shows_the_gold_pool_line(client):
    study = gold_study(n_prompts=13, n_gold=2, overlap=3, gold_rate=0.1)
    for _ in range(3):
        enrol(study)
    lead = UserFactory()
    MembershipFactory(user=lead, workspace=study.workspace, role=Membership.Role.LEAD)
    client.force_login(lead)
    page = client.get(reverse("study-overview", args=[study.token])).content.decode()
    line = re.search(r'<dd id="gold-pool"[^>]*>(.*?)</dd>', page, re.S).group(1)
    assert line == diagnostics.gold_supply(study).message and "too small" in line
