"""The JSON work loop: scoped, authenticated, CSRF-protected, and blind."""

import json
import uuid

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Label, Study, System
from annotation.services import setup
from tests.factories import enrol, make_study

pytestmark = pytest.mark.django_db


def next_url(study):
    return reverse("api-work-next", args=[study.token])


def submit_url(study, token):
    return reverse("api-work-submit", args=[study.token, token])


def post(client, study, token, body, key=None):
    return client.post(
        submit_url(study, token),
        data=json.dumps(body),
        content_type="application/json",
        headers={"Idempotency-Key": str(key or uuid.uuid4())},
    )


def test_next_then_submit_stores_a_label(client):
    study = make_study(n_prompts=2)
    e = enrol(study)
    client.force_login(e.user)
    task = client.get(next_url(study)).json()
    assert set(task) == {"token", "position", "task", "blocked"}
    assert task["task"]["kind"] == "output" and len(task["task"]["outputs"]) == 1
    response = post(client, study, task["token"], {"choice": "safe"})
    assert response.status_code == 200 and response.json()["status"] == "stored"
    assert Label.objects.get().annotator == e.user


def test_a_retry_with_the_same_key_is_a_duplicate(client):
    study = make_study(n_prompts=2)
    e = enrol(study)
    client.force_login(e.user)
    token = client.get(next_url(study)).json()["token"]
    key = uuid.uuid4()
    post(client, study, token, {"choice": "safe"}, key)
    again = post(client, study, token, {"choice": "safe"}, key)
    assert again.status_code == 200 and again.json()["status"] == "duplicate"
    assert Label.objects.count() == 1


def test_an_invalid_answer_is_400_naming_the_field(client):
    study = make_study(n_prompts=2)
    e = enrol(study)
    client.force_login(e.user)
    token = client.get(next_url(study)).json()["token"]
    response = post(client, study, token, {"choice": "nope"})
    assert response.status_code == 400 and response.json()["field"] == "choice"


def test_a_foreign_study_is_404_and_anonymous_is_401(client):
    study, other = make_study(n_prompts=1), make_study(n_prompts=1)
    e = enrol(study)
    assert client.get(next_url(study)).status_code == 401
    client.force_login(e.user)
    assert client.get(next_url(other)).status_code == 404
    token = client.get(next_url(study)).json()["token"]
    assert post(client, other, token, {"choice": "safe"}).status_code == 404


def test_post_without_csrf_token_is_refused():
    study = make_study(n_prompts=1)
    e = enrol(study)
    client = Client(enforce_csrf_checks=True)
    client.force_login(e.user)
    token = client.get(next_url(study)).json()["token"]
    assert post(client, study, token, {"choice": "safe"}).status_code == 403
    client.get(reverse("work-start", args=[study.token]))  # sets the csrftoken cookie
    csrf = client.cookies["csrftoken"].value
    response = client.post(
        submit_url(study, token),
        data=json.dumps({"choice": "safe"}),
        content_type="application/json",
        headers={"Idempotency-Key": str(uuid.uuid4()), "X-CSRFToken": csrf},
    )
    assert response.status_code == 200


def shape(value):
    """The structure of a JSON value with every string and number blanked out."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return type(value).__name__


@pytest.mark.parametrize("kind", [Study.TaskKind.CATEGORICAL, Study.TaskKind.PAIRWISE])
def test_gold_repeat_attention_and_production_payloads_have_identical_shapes(client, kind):
    study = make_study(
        kind,
        n_prompts=30,
        overlap=1,
        gold_rate=0.2,
        repeat_rate=0.2,
        attention_rate=0.1,
        repeat_min_gap_units=2,
        repeat_min_gap_minutes=0,
    )
    units = list(study.units.order_by("id"))
    for unit in units[:4]:
        setup.mark_gold(unit, {"choice": "safe"})
    setup.mark_gold(units[4], {"choice": "safe"}, role="attention")
    e = enrol(study)
    client.force_login(e.user)
    shapes, purposes, raw = {}, set(), []
    for _ in range(40):
        response = client.get(next_url(study))
        body = response.json()
        if body["token"] is None:
            break
        raw.append((response, body))
        purpose = e.user.assignments.get(token=body["token"]).purpose
        purposes.add(purpose)
        shapes.setdefault(purpose, set()).add(json.dumps(shape(body), sort_keys=True))
        answer = "safe" if kind == Study.TaskKind.CATEGORICAL else "left"
        post(client, study, body["token"], {"choice": answer})
    assert {"production", "gold", "repeat", "attention"} <= purposes
    assert len({s for group in shapes.values() for s in group}) == 1
    names = set(System.objects.filter(study=study).values_list("name", flat=True))
    for response, _body in raw:
        text = response.content.decode()
        assert not any(f'"{name}"' in text for name in names)
        assert not any(word in text for word in ("gold", "repeat", "attention", "production"))
        assert set(response.headers) == set(raw[0][0].headers)


def test_the_lean_study_lookup_agrees_with_the_selector():
    from django.http import Http404

    from annotation import api, selectors

    study, other = make_study(n_prompts=1), make_study(n_prompts=1)
    e = enrol(study)
    assert api.annotator_study_or_404(e.user, study.token) == selectors.annotator_study_or_404(
        e.user, study.token
    )
    for scope in (api.annotator_study_or_404, selectors.annotator_study_or_404):
        with pytest.raises(Http404):
            scope(e.user, other.token)
