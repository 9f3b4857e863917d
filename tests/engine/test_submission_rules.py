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
