"""The engine at its limits: an SPA batch (a kind the one-statement claim does not take) picked on
PostgreSQL, the periodic sweep's cap of a thousand leases, and the fallback repeat draw of a sparse
history, which must depend on the annotator's seed.

Added after the mutation runs of annotation/services/assignment.py (bench/MUTATION.md), where each
of these could change without any test noticing."""

from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone
from scipy import stats

from annotation.models import Assignment, Enrolment, Unit
from annotation.services import assignment as engine
from tests.engine.invariants import assert_invariants
from tests.engine.test_one_statement import LEASE_FIELDS, SEED, WALK_FIELDS, lay_out_keys
from tests.engine.test_repeat_draw import earlier_labels
from tests.factories import enrol, make_study

pytestmark = pytest.mark.django_db

# What `_maybe_reclaim_all` reclaims at most in one sweep (it bounds one request's work).
SWEEP_CAP = 1000


# --- an SPA batch on PostgreSQL ---------------------------------------------------------------


def spa_claims(study, user, start):
    """Claim and give back each batch in turn; what was served, stored and left open at each."""
    seen = []
    for i in range(3):
        now = start + timedelta(minutes=i)
        a = engine.next_assignment(user, study, now=now)
        stored = Assignment.objects.get(pk=a.pk)
        e = Enrolment.objects.get(study=study, user=user)
        seen.append(
            (
                [getattr(stored, f) for f in LEASE_FIELDS if f not in ("id", "token")],
                [getattr(a, f) for f in LEASE_FIELDS] == [getattr(stored, f) for f in LEASE_FIELDS],
                a.texts,
                [getattr(e, f) for f in WALK_FIELDS],
                dict(Unit.objects.filter(study=study).values_list("id", "open_slots")),
            )
        )
        assert_invariants(study, now=now)
        assert engine.abandon(stored)
    return seen


@pytest.mark.postgres
def test_an_spa_batch_picked_by_the_one_statement_claim_is_served_as_the_python_path_serves_it(
    monkeypatch,
):
    # The claim's first probe picks and locks the batch but does not take it (SPA is not drawn in
    # SQL); the engine goes on in Python with the unit and key that probe returned.
    study = make_study(
        "spa", n_prompts=6, systems=("a", "b", "c"), spa_exposure_m=2, spa_fixed_sample=False
    )
    batches = list(Unit.objects.filter(study=study).order_by("shuffle_key"))
    assert [u.kind for u in batches] == ["spa_batch"] * 3
    lay_out_keys(study, "walk")  # every first probe finds a batch
    user = enrol(study, queue_seed=SEED).user  # no quota: the one-statement claim
    start = timezone.now().replace(microsecond=0)
    monkeypatch.setattr(engine, "_maybe_reclaim_all", lambda now: None)
    runs = []
    for python in (False, True):
        with monkeypatch.context() as m:
            if python:
                m.setattr(engine, "_pg", lambda: False)
            with transaction.atomic():
                runs.append(spa_claims(study, user, start))
                transaction.set_rollback(True)
    one_statement, python = runs
    assert one_statement == python
    keys = dict(Unit.objects.filter(study=study).values_list("id", "shuffle_key"))
    served = [lease[1] for lease, *_ in one_statement]
    assert served == sorted(keys, key=keys.get)  # the walk, in key order
    for (lease, same, texts, walk, slots), unit_id in zip(one_statement, served, strict=True):
        assert same  # the lease returned is the stored row
        assert lease[3] == "production" and lease[6]["kind"] == "spa_batch"
        assert walk[-1] == keys[unit_id] + 1  # the walk resumes just past the batch
        assert slots == {u: study.overlap - (u == unit_id) for u in keys}
        assert set(texts) == set(lease[6]["outputs"])


# --- the periodic sweep's cap -----------------------------------------------------------------


def test_one_periodic_sweep_reclaims_a_thousand_leases_the_oldest_first_and_the_next_the_rest(
    monkeypatch,
):
    # A sweep bounds the work of the request that runs it: past the cap, the leases that expired
    # last wait for the next sweep (30 s later), and each slot still comes back exactly once.
    elsewhere = make_study(n_prompts=SWEEP_CAP + 1, systems=("alpha",), overlap=1)
    holder = enrol(elsewhere).user
    units = list(Unit.objects.filter(study=elsewhere).order_by("id"))
    past = timezone.now() - timedelta(hours=2)
    Assignment.objects.bulk_create(
        Assignment(
            study=elsewhere,
            unit=unit,
            annotator=holder,
            purpose="production",
            position=i + 1,
            leased_at=past,
            expires_at=past + timedelta(seconds=i),  # the last unit's lease expired last
        )
        for i, unit in enumerate(units)
    )
    Unit.objects.filter(study=elsewhere).update(open_slots=0)
    study = make_study(n_prompts=2, systems=("alpha",))
    user = enrol(study).user

    def states():
        leases = Assignment.objects.filter(study=elsewhere).order_by("expires_at")
        slots = dict(Unit.objects.filter(study=elsewhere).values_list("id", "open_slots"))
        return [(status, slots[unit]) for status, unit in leases.values_list("status", "unit_id")]

    monkeypatch.setattr(engine, "_last_sweep", [0.0])  # the sweep is due
    assert engine.next_assignment(user, study) is not None
    assert states() == [("expired", 1)] * SWEEP_CAP + [("leased", 0)]
    assert_invariants(elsewhere)

    monkeypatch.setattr(engine, "_last_sweep", [0.0])  # the next sweep
    assert engine.next_assignment(user, study) is not None  # the same open lease
    assert states() == [("expired", 1)] * (SWEEP_CAP + 1)
    assert_invariants(elsewhere)


# --- the fallback repeat draw -----------------------------------------------------------------


def test_annotators_with_one_sparse_history_draw_their_repeats_by_their_own_seed(monkeypatch):
    # Ten labels among 1,500 positions: the eight probed positions mostly miss, and the draw
    # falls back to the k-th repeatable label. Annotators with the same history (they differ only
    # by their seed) must not all repeat the same label at the same position: over their seeds
    # the draw is uniform among the ten.
    study = make_study(n_prompts=10, repeat_rate=0.1, repeat_min_gap_units=5)
    user = enrol(study).user
    now = timezone.now()
    made = earlier_labels(study, user, now)
    ran = []
    execute = engine._execute
    monkeypatch.setattr(
        engine,
        "_execute",
        lambda c, sql, params, **kw: ran.append(sql) or execute(c, sql, params, **kw),
    )
    cursor = connection.cursor()
    draws = Counter(
        engine.repeatable(cursor, study, user.id, seed, 1500, now)[0] for seed in range(1000)
    )
    assert ran.count(engine._REPEATABLE_SQL) > 900  # the fallback made most draws
    observed = [draws[a.id] for a in made]
    assert sum(observed) == 1000
    assert stats.chisquare(observed).pvalue > 0.001, observed
