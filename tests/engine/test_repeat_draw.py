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
