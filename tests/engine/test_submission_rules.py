"""What a submission may carry, through the JSON API: one key per task, the scheme's fields only,
plausible timings, and no answers while the study is not live."""

import json
import uuid

import pytest
from django.urls import reverse

from annotation.models import Assignment, Label
from tests.factories import enrol, make_study

pytestmark = pytest.mark.django_db


def next_token(client, study) -> str:
    return client.get(reverse("api-work-next", args=[study.token])).json()["token"]


def post(client, study, token, body, key=None):
    return client.post(
        reverse("api-work-submit", args=[study.token, token]),
        data=json.dumps(body),
        content_type="application/json",
        headers={"Idempotency-Key": str(key or uuid.uuid4())},
    )


def signed_in(client, study):
    user = enrol(study).user
    client.force_login(user)
    return user


def test_a_key_reused_on_another_task_is_409_conflict_and_stores_nothing(client):
    study = make_study(n_prompts=3)
    signed_in(client, study)
    key = uuid.uuid4()
    first = next_token(client, study)
    assert post(client, study, first, {"choice": "safe"}, key).json()["status"] == "stored"
    second = next_token(client, study)
    response = post(client, study, second, {"choice": "unsafe"}, key)
    assert response.status_code == 409
    body = response.json()
    assert body["status"] == "conflict" and "another task" in body["message"]
    assert Label.objects.count() == 1
    assert Assignment.objects.get(token=second).status == "leased"
    assert post(client, study, second, {"choice": "unsafe"}).json()["status"] == "stored"


def test_only_the_schemes_fields_are_stored(client):
    study = make_study(n_prompts=2)
    signed_in(client, study)
    token = next_token(client, study)
    body = {"choice": "safe", "note": "x" * 150, "extra": {"nested": [1, 2]}}
    assert post(client, study, token, body).json()["status"] == "stored"
    assert Label.objects.get().value == {"choice": "safe"}


@pytest.mark.parametrize(
    "body, field",
    [
        ({"choice": "safe\u0000"}, "choice"),
        ({"choice": "safe", "note": "a\u0000b"}, "note"),
        ({"choice": "safe", "note": "bell\u0007"}, "note"),
        ({"choice": "s" * 5000}, "choice"),
        ({"choice": "safe", "padding": "p" * 1_000_000}, "padding"),
        ({"choice": "safe", "a\u0000b": "1"}, "a\\x00b"),
    ],
)
def test_control_characters_and_oversized_fields_are_400_naming_the_field(client, body, field):
    study = make_study(n_prompts=2)
    signed_in(client, study)
    token = next_token(client, study)
    response = post(client, study, token, body)
    assert response.status_code == 400, response.content[:200]
    assert response.json()["field"] == field
    assert len(response.content) < 1000  # the message does not echo the field back
    assert Label.objects.count() == 0 and Assignment.objects.get(token=token).status == "leased"


def test_too_many_fields_are_refused(client):
    study = make_study(n_prompts=2)
    signed_in(client, study)
    token = next_token(client, study)
    body = {"choice": "safe", **{f"f{i}": "1" for i in range(600)}}
    response = post(client, study, token, body)
    assert response.status_code == 400 and response.json()["field"] == "body"


@pytest.mark.parametrize(
    "timings, field",
    [
        ({"rendered_at": "1999-01-01T00:00:00+00:00"}, "timings.rendered_at"),
        ({"rendered_at": "2999-01-01T00:00:00+00:00"}, "timings.rendered_at"),
        ({"rendered_at": "yesterday"}, "timings.rendered_at"),
        ({"duration_ms": 2**31 - 1}, "timings.duration_ms"),
        ({"duration_ms": -5}, "timings.duration_ms"),
        ({"duration_ms": 1.5}, "timings.duration_ms"),
        ({"duration_ms": True}, "timings.duration_ms"),
        ({"duration_ms": 1000, "active_ms": 5000}, "timings.active_ms"),
        ({"exposure": {"outputs": {str(i): {"ms": 1} for i in range(400)}}}, "timings.exposure"),
        ({"exposure": ["x" * 8000]}, "timings.exposure"),
        ({"typing_speed": 3}, "timings.typing_speed"),
    ],
)
def test_implausible_timings_are_400_naming_the_timing(client, timings, field):
    study = make_study(n_prompts=2)
    signed_in(client, study)
    token = next_token(client, study)
    response = post(client, study, token, {"choice": "safe", "timings": timings})
    assert response.status_code == 400, response.content[:200]
    assert response.json()["field"] == field
    assert Label.objects.count() == 0


def test_plausible_timings_are_stored(client):
    from django.utils import timezone

    study = make_study(n_prompts=2)
    signed_in(client, study)
    token = next_token(client, study)
    now = timezone.now().isoformat()
    timings = {"rendered_at": now, "duration_ms": 1500, "active_ms": "1200"}
    assert post(client, study, token, {"choice": "safe", "timings": timings}).status_code == 200
    label = Label.objects.get()
    assert (label.duration_ms, label.active_ms) == (1500, 1200)
    assert label.rendered_at.isoformat() == now


def test_an_spa_exposure_is_stored_per_output_shown(client):
    study = make_study("spa", n_prompts=4, systems=("a", "b"), spa_exposure_m=2)
    signed_in(client, study)
    task = client.get(reverse("api-work-next", args=[study.token])).json()
    a = Assignment.objects.get(token=task["token"])
    n = len(a.presentation["outputs"])
    answers = {f"p_{i}": "60" for i in range(len(a.presentation["questions"]))}
    exposure = {"outputs": {str(j): {"ms": 100 * j, "seen": j > 0} for j in range(n)}}
    timings = {"duration_ms": 5000, "exposure": exposure}
    response = post(client, study, task["token"], {**answers, "timings": timings})
    assert response.status_code == 200, response.content
    stored = Label.objects.get().exposure
    assert stored["measured"] is True
    assert [o["output"] for o in stored["outputs"]] == a.presentation["outputs"]
    assert [o["visible_ms"] for o in stored["outputs"]] == [100 * j for j in range(n)]


@pytest.mark.parametrize("status", ["paused", "closed"])
def test_a_study_that_stopped_meanwhile_takes_no_answer(client, status):
    study = make_study(n_prompts=2)
    signed_in(client, study)
    token = next_token(client, study)
    key = uuid.uuid4()
    study.status = status
    study.save()
    response = post(client, study, token, {"choice": "safe"}, key)
    assert response.status_code == 409
    assert response.json()["status"] == status and status in response.json()["message"]
    assert Label.objects.count() == 0
    if status == "paused":  # resumed, the same answer under the same key is stored
        study.status = "live"
        study.save()
        assert post(client, study, token, {"choice": "safe"}, key).json()["status"] == "stored"


def test_an_answer_stored_before_the_study_closed_is_still_a_duplicate(client):
    study = make_study(n_prompts=2)
    signed_in(client, study)
    token = next_token(client, study)
    key = uuid.uuid4()
    post(client, study, token, {"choice": "safe"}, key)
    study.status = "closed"
    study.save()
    assert post(client, study, token, {"choice": "safe"}, key).json()["status"] == "duplicate"
