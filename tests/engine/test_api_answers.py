"""What an annotator's client can send and see, checked at the API an annotator's script uses:
the ends of the percent scale, non-numbers, and which side each system is shown on.

The same rules have unit tests next to their helpers; these hold them at the level the annotator
meets, so a refactor that moves the helper cannot drop them unnoticed.
"""

import json
import uuid
from collections import Counter

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Label, SpaAnswer
from tests.factories import enrol, make_study

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _next(client, study) -> dict:
    return client.get(reverse("api-work-next", args=[study.token])).json()


def _post_raw(client, study, token, raw_body: str):
    return client.post(
        reverse("api-work-submit", args=[study.token, token]),
        data=raw_body,
        content_type="application/json",
        headers={"Idempotency-Key": str(uuid.uuid4())},
    )


def _spa_task():
    study = make_study(
        "spa", n_prompts=5, systems=("a", "b"), spa_exposure_m=5, spa_collect_likert=False
    )
    person = enrol(study).user
    client = _client(person)
    task = _next(client, study)
    fields = [q["field"] for q in task["task"]["questions"]]
    return study, client, task["token"], fields


@pytest.mark.parametrize("percent", [0, 100, 100.0, 99.5])
def test_both_ends_of_the_percent_scale_are_stored(percent):
    study, client, token, fields = _spa_task()
    body = json.dumps(dict.fromkeys(fields, percent))

    response = _post_raw(client, study, token, body)

    assert response.status_code == 200, response.content
    assert [a.probability for a in SpaAnswer.objects.all()] == [float(percent)] * len(fields)


@pytest.mark.parametrize("percent", ["100.01", "-0.5", "140", "1e3"])
def test_a_percent_outside_0_to_100_is_refused_naming_the_field(percent):
    study, client, token, fields = _spa_task()
    body = json.dumps(dict.fromkeys(fields, percent))

    response = _post_raw(client, study, token, body)

    assert response.status_code == 400
    assert response.json()["field"] == fields[0]
    assert not Label.objects.exists()


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", '"nan"', '"inf"'])
def test_a_non_finite_percent_is_refused_even_as_a_json_literal(literal):
    # Python's json module accepts the bare NaN / Infinity tokens a careless client may send.
    study, client, token, fields = _spa_task()
    body = "{" + ", ".join(f'"{name}": {literal}' for name in fields) + "}"

    response = _post_raw(client, study, token, body)

    assert response.status_code == 400
    assert response.json()["field"] == fields[0]
    assert not SpaAnswer.objects.exists()


def test_a_continuous_score_of_100_is_stored_and_a_nan_score_is_refused():
    study = make_study("continuous", n_prompts=2)
    client = _client(enrol(study).user)
    first = _next(client, study)["token"]
    assert _post_raw(client, study, first, '{"score": 100}').status_code == 200
    second = _next(client, study)["token"]
    refused = _post_raw(client, study, second, '{"score": NaN}')
    assert refused.status_code == 400 and refused.json()["field"] == "score"
    assert [lab.score for lab in Label.objects.all()] == [100.0]


def test_each_system_is_shown_on_the_left_about_half_the_time_and_left_means_what_was_left():
    # Output texts name their system here (test content), so the annotator's view is checkable.
    study = make_study("pairwise", n_prompts=40, systems=("alpha", "beta"), overlap=1)
    client = _client(enrol(study).user)
    left_systems = Counter()
    for _ in range(40):
        task = _next(client, study)
        left_text = task["task"]["outputs"][0]
        left = "alpha" if "alpha" in left_text else "beta"
        left_systems[left] += 1
        response = _post_raw(client, study, task["token"], '{"choice": "left"}')
        assert response.status_code == 200
        stored = Label.objects.select_related("winner").latest("id")
        assert stored.winner.name == left  # "left" is stored as the system that was shown left
    # The engine promises 2 of every 4 positions each way (a never-swapping engine shows 40/0).
    assert abs(left_systems["alpha"] - 20) <= 2, left_systems
