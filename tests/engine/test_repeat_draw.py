"""Which earlier label a blind repeat repeats: uniform among the eligible ones, any gaps."""

from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from scipy import stats

from annotation.models import Assignment, Unit
from annotation.services import assignment as engine
from tests.factories import enrol, make_study

pytestmark = pytest.mark.django_db

# Earlier production labels at very uneven gaps: a draw that walks forward from a random
# position would favour the label after the longest gap (and the first, on wrapping).
POSITIONS = [1, 2, 3, 4, 40, 41, 90, 150, 151, 152]


def earlier_labels(study, user, now):
    units = list(Unit.objects.filter(study=study).order_by("id"))
    made = []
    for unit, position in zip(units, POSITIONS, strict=False):
        made.append(
            Assignment.objects.create(
                study=study,
                unit=unit,
                annotator=user,
                purpose="production",
                status="submitted",
                position=position,
                leased_at=now - timedelta(days=1),
                expires_at=now - timedelta(days=1) + timedelta(minutes=30),
                closed_at=now - timedelta(days=1),
            )
        )
    return made


def test_the_repeat_draw_is_uniform_among_the_eligible_labels():
    study = make_study(n_prompts=5, repeat_rate=0.1, repeat_min_gap_units=5)
    user = enrol(study).user
    now = timezone.now()
    made = earlier_labels(study, user, now)
    assert len(made) == len(POSITIONS)
    seed = 20261201
    cursor = connection.cursor()
    draws = Counter(
        engine.repeatable(cursor, study, user.id, seed, position, now)[0]
        for position in range(200, 200 + 4000)
    )
    observed = [draws[a.id] for a in made]
    assert sum(observed) == 4000
    assert stats.chisquare(observed).pvalue > 0.001, observed


def test_only_eligible_labels_are_drawn():
    study = make_study(n_prompts=5, repeat_rate=0.1, repeat_min_gap_units=5)
    user = enrol(study).user
    now = timezone.now()
    made = earlier_labels(study, user, now)
    recent = made[-1]
    recent.closed_at = now  # too recent for a 30-minute gap
    recent.save()
    under_repeat = made[0]
    Assignment.objects.create(
        study=study,
        unit=under_repeat.unit,
        annotator=user,
        purpose="repeat",
        repeat_of=under_repeat,
        position=300,
        leased_at=now,
        expires_at=now + timedelta(minutes=30),
    )
    cursor = connection.cursor()
    drawn = {
        engine.repeatable(cursor, study, user.id, 7, position, now)[0]
        for position in range(400, 1400)
    }
    assert drawn == {a.id for a in made[1:-1]}
    # At position 46 (gap 5) only labels at positions <= 40 are eligible.
    near = {engine.repeatable(cursor, study, user.id, s, 46, now)[0] for s in range(200)}
    assert near == {a.id for a in made[1:5]}


def dense_history(study, user, now, n=120):
    """n earlier labels at positions 1..n, every 7th position a gold task and every 11th label
    still leased: the repeatable ones are most positions, with gaps."""
    units = list(Unit.objects.filter(study=study).order_by("id"))
    made = []
    for position, unit in zip(range(1, n + 1), units, strict=False):
        gold = position % 7 == 0
        made.append(
            Assignment.objects.create(
                study=study,
                unit=unit,
                annotator=user,
                purpose="gold" if gold else "production",
                status="leased" if position % 11 == 0 else "submitted",
                position=position,
                leased_at=now - timedelta(days=1),
                expires_at=now + timedelta(days=1),
                closed_at=None if position % 11 == 0 else now - timedelta(days=1),
            )
        )
    return [a for a in made if a.purpose == "production" and a.status == "submitted"]


def test_a_dense_history_is_drawn_uniformly_by_a_few_lookups(monkeypatch):
    # Rejection sampling over positions: each probe lands on a position, and only repeatable
    # labels are kept. The labels right after a gap must not be favoured.
    study = make_study(n_prompts=130, repeat_rate=0.1, repeat_min_gap_units=5)
    user = enrol(study).user
    now = timezone.now()
    repeatable = dense_history(study, user, now)
    assert 90 < len(repeatable) < 110
    ran = []
    execute = engine._execute
    monkeypatch.setattr(
        engine,
        "_execute",
        lambda c, sql, params, **kw: ran.append(sql) or execute(c, sql, params, **kw),
    )
    cursor = connection.cursor()
    # The next position after the history, as the annotator's walk goes (positions are dense).
    draws = Counter(
        engine.repeatable(cursor, study, user.id, seed, 126, now)[0] for seed in range(5000)
    )
    assert set(draws) == {a.id for a in repeatable}
    assert stats.chisquare([draws[a.id] for a in repeatable]).pvalue > 0.001
    # Every draw found its label among the probes: none read the whole history.
    assert ran.count(engine._REPEAT_PROBE_SQL) == 5000 and engine._REPEATABLE_SQL not in ran


def test_a_draw_is_the_same_for_the_same_seed_and_position_and_differs_across_seeds():
    study = make_study(n_prompts=130, repeat_rate=0.1, repeat_min_gap_units=5)
    user = enrol(study).user
    now = timezone.now()
    dense_history(study, user, now)
    cursor = connection.cursor()
    first = [engine.repeatable(cursor, study, user.id, 5, p, now)[0] for p in range(300, 340)]
    again = [engine.repeatable(cursor, study, user.id, 5, p, now)[0] for p in range(300, 340)]
    other = [engine.repeatable(cursor, study, user.id, 6, p, now)[0] for p in range(300, 340)]
    assert first == again
    assert sum(a != b for a, b in zip(first, other, strict=True)) > 30
