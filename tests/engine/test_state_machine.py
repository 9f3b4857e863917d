"""A hypothesis state machine over claim, submit, abandon, expire, reclaim and injected gold and
repeats: the engine's invariants hold after every step."""

import uuid
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from annotation.services import assignment as engine
from annotation.services import setup
from annotation.services.submission import submit_label
from tests.engine.invariants import assert_invariants
from tests.factories import enrol, make_study

pytestmark = pytest.mark.django_db

N_PEOPLE = 3


class EngineMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.study = make_study(
            n_prompts=4,
            overlap=2,
            systems=("a", "b"),
            repeat_min_gap_units=1,
            repeat_min_gap_minutes=0,
        )
        for unit in list(self.study.units.order_by("id"))[:2]:
            setup.mark_gold(unit, {"choice": "safe"})
        self.people = [enrol(self.study).user for _ in range(N_PEOPLE)]
        self.now = engine.timezone.now()
        self.leases = []  # every assignment handed out, for late and stale submits

    def _claim(self, i, gold=0.0, repeat=0.0):
        study = self.study
        study.gold_rate, study.repeat_rate = gold, repeat
        a = engine.next_assignment(self.people[i], study, now=self.now)
        if a is not None:
            self.leases.append((i, a))

    @rule(i=st.integers(0, N_PEOPLE - 1))
    def claim(self, i):
        self._claim(i)

    @rule(i=st.integers(0, N_PEOPLE - 1))
    def claim_injecting_gold(self, i):
        self._claim(i, gold=0.95)

    @rule(i=st.integers(0, N_PEOPLE - 1))
    def claim_injecting_repeat(self, i):
        self._claim(i, repeat=0.95)

    @rule(pick=st.integers(0, 10_000), same_key=st.booleans())
    def submit(self, pick, same_key):
        if not self.leases:
            return
        i, a = self.leases[pick % len(self.leases)]
        key = uuid.uuid5(uuid.NAMESPACE_OID, a.token) if same_key else uuid.uuid4()
        result = submit_label(
            annotator=self.people[i],
            assignment_token=a.token,
            data={"choice": "safe"},
            idempotency_key=key,
        )
        assert result.status in {"stored", "duplicate", "reassigned"}
        assert (result.label is None) == (result.status == "reassigned")

    @rule(pick=st.integers(0, 10_000))
    def abandon(self, pick):
        if self.leases:
            engine.abandon(self.leases[pick % len(self.leases)][1])

    @rule()
    def expire(self):
        self.now += timedelta(seconds=self.study.lease_seconds + 1)

    @rule()
    def reclaim(self):
        engine.reclaim_expired(self.study, now=self.now)

    @invariant()
    def holds(self):
        assert_invariants(self.study, now=self.now)


def test_engine_invariants_hold_after_every_step():
    run_state_machine_as_test(
        EngineMachine,
        settings=settings(
            max_examples=25,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
