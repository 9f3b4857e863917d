"""The admin: same validation as the builder, engine state read-only, status through the service."""

import json

import pytest
from django.urls import reverse

from annotation.models import Study
from tests.factories import UserFactory, WorkspaceFactory, enrol, make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


def add_study(client, scheme):
    ws = WorkspaceFactory()
    data = {
        "workspace": ws.pk,
        "name": "From admin",
        "task_kind": "likert",
        "label_scheme": json.dumps(scheme),
        "overlap": 3,
        "gold_rate": 0,
        "repeat_rate": 0,
        "repeat_min_gap_units": 10,
        "repeat_min_gap_minutes": 30,
        "attention_rate": 0,
        "lease_seconds": 1800,
        "qualification_pass_score": 0.8,
        "qualification_attempts": 2,
        "spa_exposure_m": 5,
        "spa_fixed_sample": "on",
        "allowed_pools": "[]",
        "crowd_platform": "",
        "comparisons-TOTAL_FORMS": 0,
        "comparisons-INITIAL_FORMS": 0,
    }
    return client.post(reverse("admin:annotation_study_add"), data)


def test_admin_refuses_an_empty_likert_scheme_like_the_builder(staff):
    response = add_study(staff, {})
    assert response.status_code == 200
    assert "points: add at least 2 points" in response.content.decode()
    assert not Study.objects.exists()


def test_admin_saves_a_valid_scheme_as_a_draft(staff):
    points = [{"value": v, "text": str(v)} for v in (1, 2, 3)]
    assert add_study(staff, {"points": points}).status_code == 302
    assert Study.objects.get().status == "draft"


def test_admin_shows_engine_state_without_inputs(staff):
    study = make_study(n_prompts=1)
    unit = study.units.first()
    enrolment = enrol(study)
    page = staff.get(reverse("admin:annotation_unit_change", args=[unit.pk])).content.decode()
    for name in ("shuffle_key", "open_slots", "overlap"):
        assert f'name="{name}"' not in page
    page = staff.get(
        reverse("admin:annotation_enrolment_change", args=[enrolment.pk])
    ).content.decode()
    for name in ("queue_seed", "walk_cursor", "positions_issued"):
        assert f'name="{name}"' not in page


def test_admin_locks_a_live_studys_scheme_and_status(staff):
    study = make_study("likert", n_prompts=1)
    page = staff.get(reverse("admin:annotation_study_change", args=[study.pk])).content.decode()
    for name in ("label_scheme", "task_kind", "overlap", "status"):
        assert f'name="{name}"' not in page


def test_admin_go_live_action_runs_the_launch_checklist(staff):
    study = make_study(n_prompts=1, status="draft")
    response = staff.post(
        reverse("admin:annotation_study_changelist"),
        {"action": "go_live", "_selected_action": [study.pk]},
        follow=True,
    )
    assert "Enough annotators" in response.content.decode()
    study.refresh_from_db()
    assert study.status == "draft"
