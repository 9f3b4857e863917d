"""What the JSON work API reads from a submit's body: JSON objects or forms, the key from the
header or a field, timings only as an object, and a clear 400 for anything else.

Found by the mutation run of annotation/api.py (bench/MUTATION.md): the API's own body reading
(`_body`, `_answer`) and its 401 answer were only reached through well-formed JSON.
"""

import json
import uuid

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Assignment, Label, Study
from tests.factories import enrol, make_study

pytestmark = pytest.mark.django_db


def next_url(study):
    return reverse("api-work-next", args=[study.token])


def submit_url(study, token):
    return reverse("api-work-submit", args=[study.token, token])


def leased(client, study=None):
    study = study or make_study(n_prompts=2)
    client.force_login(enrol(study).user)
    return study, client.get(next_url(study)).json()["token"]


def post_raw(client, study, token, body: str):
    return client.post(
        submit_url(study, token),
        data=body,
        content_type="application/json",
        headers={"Idempotency-Key": str(uuid.uuid4())},
    )


def refused(response) -> tuple[str, str]:
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    assert body["status"] == "invalid"
    return body["field"], body["message"].lower()


def test_a_body_that_is_not_json_is_400_naming_the_body(client):
    study, token = leased(client)
    assert refused(post_raw(client, study, token, '{"choice": "safe"')) == (
        "body",
        "is not valid json",
    )
    assert not Label.objects.exists()
    assert Assignment.objects.get(token=token).status == "leased"


@pytest.mark.parametrize("body", ['["safe"]', '"safe"', "3", "null"])
def test_json_that_is_not_an_object_is_400_naming_the_body(client, body):
    study, token = leased(client)
    assert refused(post_raw(client, study, token, body)) == ("body", "must be a json object")
    assert not Label.objects.exists()


def test_an_empty_json_body_is_an_empty_answer(client):
    study, token = leased(client)
    # The test client drops the content type of an empty body; a browser's fetch keeps it.
    response = client.post(
        submit_url(study, token),
        data="",
        content_type="application/json",
        CONTENT_TYPE="application/json",
        headers={"Idempotency-Key": str(uuid.uuid4())},
    )
    assert response.wsgi_request.content_type == "application/json"
    assert response.wsgi_request.body == b""
    assert refused(response) == ("choice", "choose a label")


@pytest.mark.parametrize("choice", ["5", '["safe"]', '{"label": "safe"}', "true"])
def test_a_choice_that_is_not_text_is_read_as_its_json_and_refused(client, choice):
    study, token = leased(client)
    field, message = refused(post_raw(client, study, token, '{"choice": ' + choice + "}"))
    assert field == "choice" and message.startswith(repr(json.dumps(json.loads(choice))))


def test_a_number_from_a_json_literal_is_stored_as_its_text(client):
    study, token = leased(client, make_study(Study.TaskKind.CONTINUOUS, n_prompts=2))
    response = post_raw(client, study, token, '{"score": 42.5}')
    assert response.status_code == 200, response.content
    label = Label.objects.get()
    assert label.value == {"score": "42.5"} and label.score == 42.5


def test_timings_sent_as_an_object_are_stored(client):
    study, token = leased(client)
    now = timezone.now().isoformat()
    body = {"choice": "safe", "timings": {"rendered_at": now, "duration_ms": 900}}
    assert post_raw(client, study, token, json.dumps(body)).status_code == 200
    label = Label.objects.get()
    assert label.duration_ms == 900 and label.rendered_at.isoformat() == now
    assert label.value == {"choice": "safe"}


@pytest.mark.parametrize("timings", ['"fast"', "[900]", "900"])
def test_timings_that_are_not_an_object_are_refused_on_timings_and_nothing_is_stored(
    client, timings
):
    study, token = leased(client)
    response = post_raw(client, study, token, '{"choice": "safe", "timings": ' + timings + "}")
    assert response.status_code == 400, response.content
    assert response.json() == {
        "status": "invalid",
        "field": "timings",
        "message": "must be an object",
    }
    assert not Label.objects.exists()


def test_null_timings_are_no_timings(client):
    study, token = leased(client)
    response = post_raw(client, study, token, '{"choice": "safe", "timings": null}')
    assert response.status_code == 200, response.content
    label = Label.objects.get()
    assert label.duration_ms is None and label.value == {"choice": "safe"}


def test_a_form_body_with_the_key_as_a_field_is_stored(client):
    study, token = leased(client)
    key = uuid.uuid4()
    form = {"choice": "unsafe", "idempotency_key": str(key), "note": "kept out"}
    response = client.post(submit_url(study, token), data=form)
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "stored"
    label = Label.objects.get()
    assert label.value == {"choice": "unsafe"}
    assert str(label.idempotency_key) == str(key)
    again = client.post(submit_url(study, token), data=form)
    assert again.json()["status"] == "duplicate" and Label.objects.count() == 1


def test_a_signed_out_caller_gets_401_json_saying_authentication_is_required(client):
    study = make_study(n_prompts=1)
    for response in (
        client.get(next_url(study)),
        post_raw(client, study, "any-token", '{"choice": "safe"}'),
    ):
        assert response.status_code == 401
        assert response["Content-Type"] == "application/json"
        assert {k: v.lower() for k, v in response.json().items()} == {
            "error": "authentication required"
        }


def test_a_pair_served_again_shows_the_same_two_texts(client):
    study = make_study(Study.TaskKind.PAIRWISE, n_prompts=2)
    client.force_login(enrol(study).user)
    first = client.get(next_url(study)).json()
    again = client.get(next_url(study)).json()  # the open lease: its texts are read again
    assert again["token"] == first["token"]
    assert again["task"] == first["task"] and len(again["task"]["outputs"]) == 2


@pytest.mark.parametrize("form", [False, True])
def test_an_answer_without_a_key_is_400_naming_the_key_and_stores_nothing(client, form):
    study, token = leased(client)
    if form:
        response = client.post(submit_url(study, token), data={"choice": "safe"})
    else:
        response = client.post(
            submit_url(study, token), data={"choice": "safe"}, content_type="application/json"
        )
    assert refused(response) == ("idempotency_key", "must be a uuid made when the task was shown")
    assert not Label.objects.exists()
