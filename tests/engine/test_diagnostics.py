"""Design diagnostics: annotator x system counts and the few-raters warning."""

import uuid

import pytest

from annotation.diagnostics import design_balance
from annotation.models import Assignment, Label, Unit
from tests.factories import enrol, make_study

pytestmark = pytest.mark.django_db


def label(user, unit, position):
    a = Assignment.objects.create(
        study=unit.study,
        unit=unit,
        annotator=user,
        purpose="production",
        position=position,
        leased_at="2026-01-01T00:00Z",
        expires_at="2026-01-01T01:00Z",
        status="submitted",
    )
    Label.objects.create(
        assignment=a,
        study=unit.study,
        unit=unit,
        annotator=user,
        purpose="production",
        idempotency_key=uuid.uuid4(),
        choice="safe",
    )


def by_system(study, name):
    return list(Unit.objects.filter(study=study, members__output__system__name=name))


def test_a_balanced_design_has_no_warnings():
    study = make_study(n_prompts=6)
    people = [enrol(study).user for _ in range(3)]
    for i, user in enumerate(people):
        for j, unit in enumerate(by_system(study, "alpha")[:2] + by_system(study, "beta")[:2]):
            label(user, unit, 10 * i + j + 1)
    report = design_balance(study)
    assert report.warnings == ()
    alpha = study.systems.get(name="alpha").id
    assert report.counts[(people[0].id, alpha)] == 2 and report.per_system[alpha] == 6


def test_a_system_labelled_by_other_raters_is_flagged():
    study = make_study(n_prompts=6)
    week1 = [enrol(study).user for _ in range(2)]
    week2 = [enrol(study).user for _ in range(2)]
    for i, user in enumerate(week1):
        for j, unit in enumerate(by_system(study, "alpha")):
            label(user, unit, 100 * i + j + 1)
    for i, user in enumerate(week2):
        for j, unit in enumerate(by_system(study, "beta")):
            label(user, unit, 100 * i + j + 1)
    warnings = design_balance(study).warnings
    assert any("alpha" in w and "differ" in w for w in warnings)
    assert any("beta" in w and "differ" in w for w in warnings)
