"""What the progress bar says (`work_state`): the planned total, whose work it counts, the quota,
the gates, and when it sweeps expired leases; and the walk's segments (`segment`).

Added after the mutation run of annotation/services/assignment.py (bench/MUTATION.md), where each
of these could change without any test in the module's list noticing.
"""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Assignment, Enrolment, GuideVersion, Study, Unit
from annotation.services import assignment as engine
from annotation.services import setup
from annotation.services.api_tokens import create_token
from tests.engine.test_next_and_submit import answer, label_all
from tests.factories import UserFactory, enrol, make_study

pytestmark = pytest.mark.django_db

RATES = {"gold_rate": 0.2, "repeat_rate": 0.1, "attention_rate": 0.1}


def injecting_study(n_production: int, n_gold: int = 8, n_attention: int = 4) -> Study:
    """A study of `n_production` production units, `n_gold` gold and `n_attention` attention
    units, injecting at RATES."""
    n = n_production + n_gold + n_attention
    study = make_study(n_prompts=n, systems=("alpha",), **RATES)
    units = list(Unit.objects.filter(study=study).order_by("id"))
    for unit in units[:n_gold]:
        setup.mark_gold(unit, {"choice": "safe"})
    for unit in units[n_gold : n_gold + n_attention]:
        setup.mark_gold(unit, {"choice": "safe"}, role=Unit.Role.ATTENTION)
    return study


def progress(user, study) -> dict:
    """The progress endpoint of the JSON API, as the annotator's client reads it."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {create_token(user, 'tests').secret}")
    response = client.get(reverse("api-work-progress", args=[study.token]))
    assert response.status_code == 200
    return response.json()


def expire(*leases) -> None:
    """Put the leases' time behind them, without the sweep that would reclaim them."""
    past = timezone.now() - timedelta(minutes=1)
    Assignment.objects.filter(pk__in=[a.pk for a in leases]).update(expires_at=past)


def test_a_fresh_annotators_total_is_planned_from_their_supply_and_the_injection_rates():
    study = injecting_study(n_production=28)
    user = enrol(study).user
    # share = 1 - 0.4 = 0.6; gold 28 * 0.2 / 0.6 = 9.3, capped at the 8 gold units; repeats
    # 28 * 0.1 / 0.6 = 4.67 (cap 28); attention 4.67, capped at the 4 attention units. Plus one
    # standard deviation of the kinds not at their cap (repeats only): sqrt(28 * 0.1) / 0.6 =
    # 2.79. 28 + round(8 + 4.67 + 4 + 2.79) = 28 + 19.
    assert progress(user, study) == {"done": 0, "assigned": 47, "blocked": ""}


def test_one_production_unit_left_plans_its_share_of_injected_tasks_and_none_plans_nothing():
    study = injecting_study(n_production=1)
    # 1 * 0.2 / 0.6 + 2 * (1 * 0.1 / 0.6) + sqrt(1 * 0.4) / 0.6 = 1.72: two injected tasks.
    assert engine.work_state(enrol(study).user, study) == engine.WorkState(0, 3, "")
    assert engine.planned_total(study, 1, 8, 4) == 3
    assert engine.planned_total(study, 0, 8, 4) == 0


def test_the_total_counts_only_this_annotators_work_in_this_study():
    study = make_study(n_prompts=5, systems=("alpha", "beta"))  # 10 units, overlap 3
    other_study = make_study(n_prompts=2, systems=("alpha",))
    user, someone_else = enrol(study).user, enrol(study).user
    enrol(other_study, user)
    label_all(someone_else, study, limit=3)
    label_all(user, other_study, limit=1)
    label_all(user, study, limit=2)
    assert engine.work_state(user, study) == engine.WorkState(2, 10, "")


def test_the_quota_counts_every_task_but_the_skipped_ones():
    study = make_study(n_prompts=5, systems=("alpha", "beta"), quota_per_annotator=3)
    user = enrol(study).user
    assert engine.work_state(user, study) == engine.WorkState(0, 3, "")
    skipped = engine.next_assignment(user, study)
    assert engine.skip(user, study, skipped.token, "cannot_judge") == "skipped"
    # The skipped task is done, and the quota still leaves three to answer.
    assert engine.work_state(user, study) == engine.WorkState(1, 4, "")
    label_all(user, study, limit=2)
    assert engine.work_state(user, study) == engine.WorkState(3, 4, "")
    last = engine.next_assignment(user, study)
    assert last is not None
    answer(user, last)
    assert engine.next_assignment(user, study) is None
    assert engine.work_state(user, study) == engine.WorkState(4, 4, "quota")


def test_other_annotators_and_other_studies_do_not_use_up_an_annotators_quota():
    study = make_study(n_prompts=5, systems=("alpha", "beta"), quota_per_annotator=2)
    other_study = make_study(n_prompts=2, systems=("alpha",), quota_per_annotator=2)
    user, someone_else = enrol(study).user, enrol(study).user
    enrol(other_study, user)
    label_all(someone_else, study)
    label_all(user, other_study)
    assert engine.next_assignment(user, study) is not None


def test_a_quota_lowered_under_the_work_done_keeps_the_task_on_screen_within_the_total():
    study = make_study(n_prompts=5, systems=("alpha", "beta"))
    e = enrol(study, quota=5)
    label_all(e.user, study, limit=3)
    assert engine.next_assignment(e.user, study) is not None
    e.quota = 2
    e.save(update_fields=["quota"])
    # Three done and a fourth on screen: the bar says 3 of 4, not 3 of 2 (nor 3 of 5).
    assert engine.work_state(e.user, study) == engine.WorkState(3, 4, "")


def test_the_total_stays_above_the_tasks_done_when_injected_work_outgrew_the_plan():
    study = make_study(n_prompts=5, systems=("alpha",), gold_rate=0.1)
    units = list(Unit.objects.filter(study=study).order_by("id"))
    for unit in units[:3]:
        setup.mark_gold(unit, {"choice": "safe"})
    user = enrol(study).user
    now = timezone.now()
    for position, unit in enumerate(units[:3], start=1):
        Assignment.objects.create(
            study=study,
            unit=unit,
            annotator=user,
            purpose="gold",
            status="submitted",
            position=position,
            leased_at=now,
            expires_at=now + timedelta(minutes=30),
            closed_at=now,
        )
    # Two production units planned as 2 + round(2 * 0.1 / 0.9 + sqrt(0.2) / 0.9) = 3 tasks,
    # three gold tasks done already: the total is one more than done while work remains.
    assert engine.work_state(user, study) == engine.WorkState(3, 4, "")


def test_a_gated_annotator_sees_done_plus_their_live_lease_not_an_expired_one():
    study = make_study(n_prompts=5, systems=("alpha",))
    user = enrol(study).user
    label_all(user, study, limit=2)
    stale = engine.next_assignment(user, study)
    expire(stale)
    assert engine.next_assignment(user, study) is not None  # a live lease beside the stale one
    Study.objects.filter(pk=study.pk).update(status=Study.Status.PAUSED)
    study.refresh_from_db()
    assert engine.work_state(user, study) == engine.WorkState(2, 3, "paused")


def test_the_last_unit_held_by_an_expired_lease_is_reclaimed_before_saying_done():
    study = make_study(n_prompts=2, systems=("alpha",), overlap=1)
    elsewhere = make_study(n_prompts=2, systems=("alpha",), overlap=1)
    holder, user = enrol(study).user, enrol(study).user
    held = engine.next_assignment(holder, study)
    label_all(user, study)
    elsewheres = engine.next_assignment(enrol(elsewhere).user, elsewhere)
    expire(held, elsewheres)
    # Nothing open to `user` but the unit of a lease past its time: that one comes back.
    assert engine.work_state(user, study) == engine.WorkState(1, 2, "")
    held.refresh_from_db()
    elsewheres.refresh_from_db()
    assert held.status == Assignment.Status.EXPIRED
    assert elsewheres.status == Assignment.Status.LEASED  # another study's sweep is not ours


def test_progress_leaves_expired_leases_alone_while_work_remains():
    study = make_study(n_prompts=3, systems=("alpha",), overlap=1)
    holder, user = enrol(study).user, enrol(study).user
    held = engine.next_assignment(holder, study)
    expire(held)
    assert engine.work_state(user, study) == engine.WorkState(0, 2, "")
    held.refresh_from_db()
    assert held.status == Assignment.Status.LEASED


def test_an_annotator_outside_the_studys_pools_gets_nothing_and_is_told_why():
    study = make_study(n_prompts=2, allowed_pools=[Enrolment.Pool.EXPERT])
    trained = enrol(study, pool=Enrolment.Pool.TRAINED).user
    assert engine.next_assignment(trained, study) is None
    assert engine.work_state(trained, study) == engine.WorkState(0, 0, "pool")
    expert = enrol(study, pool=Enrolment.Pool.EXPERT).user
    assert engine.next_assignment(expert, study) is not None


def test_someone_not_enrolled_gets_nothing_as_from_a_closed_study():
    study = make_study(n_prompts=2)
    stranger = UserFactory()
    assert engine.next_assignment(stranger, study) is None
    assert engine.work_state(stranger, study) == engine.WorkState(0, 0, "closed")


def test_a_first_guide_that_requires_recalibration_gates_who_never_calibrated():
    study = make_study(n_prompts=2)
    user = enrol(study).user
    GuideVersion.objects.create(study=study, number=1, body="v1", requires_recalibration=True)
    assert engine.next_assignment(user, study) is None
    assert engine.work_state(user, study) == engine.WorkState(0, 0, "recalibration")


def test_a_walks_segments_cover_the_ring_once_from_entry_points_drawn_per_annotator_and_pass():
    def entries(seed, walk_pass):
        """Each block's entry point, as an offset into the block."""
        segments = [engine.segment(seed, walk_pass, step) for step in range(engine.SEGMENTS)]
        covered = sorted((lo, hi) for lo, hi in segments if lo < hi)
        assert covered[0][0] == 0 and covered[-1][1] == 1 << engine.KEY_BITS
        assert all(a[1] == b[0] for a, b in zip(covered, covered[1:], strict=False))
        # Even steps run from the entry point to the block's end, odd ones from its start.
        firsts = segments[::2]
        assert all(isinstance(lo, int) for lo, _ in firsts)
        assert len({hi for _, hi in firsts}) == engine.BLOCKS
        return {hi: (lo - (hi - engine.BLOCK_SIZE)) / engine.BLOCK_SIZE for lo, hi in firsts}

    first = entries(7, 0)
    assert 0.4 < sum(first.values()) / engine.BLOCKS < 0.6  # spread over the blocks
    assert len(set(first.values())) == engine.BLOCKS
    for other in (entries(8, 0), entries(7, 1)):  # another annotator, the next pass
        assert all(other[block] != first[block] for block in first)
