"""The annotator loop of the API: same engine, same submission service, same gates and blinding
as the workbench and the lean endpoints."""

import uuid

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Assignment, Label, Study, Unit
from annotation.services import setup
from tests.api.conftest import token_client
from tests.factories import UserFactory, enrol, make_study

pytestmark = pytest.mark.django_db


def next_url(study):
    return reverse("api-work-next-v1", args=[study.token])


def submit_url(study, task):
    return reverse("api-work-submit-v1", args=[study.token, task])


def abandon_url(study, task):
    return reverse("api-work-abandon", args=[study.token, task])


def submit(client, study, task, answer, key=None, **extra):
    body = {"answer": answer, "idempotency_key": str(key or uuid.uuid4()), **extra}
    return client.post(submit_url(study, task), body, format="json")


def test_next_submit_next_stores_labels_through_the_engine(world):
    client = token_client(world.annotator)
    first = client.post(next_url(world.study)).json()
    assert set(first) == {"token", "position", "task", "blocked"} and first["blocked"] == ""
    assert first["task"]["kind"] == "output" and first["task"]["outputs"]
    # Asking again before answering returns the same open task.
    assert client.post(next_url(world.study)).json()["token"] == first["token"]
    rendered = Assignment.objects.get(token=first["token"]).leased_at
    stored = submit(
        client,
        world.study,
        first["token"],
        {"choice": "safe"},
        # A render time within the lease (implausible ones are refused, issue 10).
        timings={"duration_ms": 900, "rendered_at": rendered.isoformat()},
    )
    assert stored.status_code == 200 and stored.json()["status"] == "stored"
    label = Label.objects.get(assignment__token=first["token"])
    assert label.choice == "safe" and label.duration_ms == 900 and label.rendered_at == rendered
    second = client.post(next_url(world.study)).json()
    assert second["token"] != first["token"] and second["position"] == 2


def test_a_retry_with_the_same_key_is_a_duplicate(world):
    client = token_client(world.annotator)
    task = client.post(next_url(world.study)).json()["token"]
    key = uuid.uuid4()
    submit(client, world.study, task, {"choice": "safe"}, key)
    again = submit(client, world.study, task, {"choice": "safe"}, key)
    assert again.status_code == 200 and again.json()["status"] == "duplicate"
    assert Label.objects.count() == 1


def test_the_idempotency_key_may_come_as_a_header(world):
    client = token_client(world.annotator)
    task = client.post(next_url(world.study)).json()["token"]
    response = client.post(
        submit_url(world.study, task),
        {"answer": {"choice": "unsafe"}},
        format="json",
        headers={"Idempotency-Key": str(uuid.uuid4())},
    )
    assert response.status_code == 200 and response.json()["status"] == "stored"


def test_an_answer_without_a_key_or_outside_the_scheme_is_400_naming_the_field(world):
    client = token_client(world.annotator)
    task = client.post(next_url(world.study)).json()["token"]
    no_key = client.post(
        submit_url(world.study, task), {"answer": {"choice": "safe"}}, format="json"
    )
    assert no_key.status_code == 400 and no_key.json()["field"] == "idempotency_key"
    wrong = submit(client, world.study, task, {"choice": "maybe"})
    assert wrong.status_code == 400 and wrong.json()["field"] == "choice"
    typed = submit(client, world.study, task, {"choice": ["safe"]})
    assert typed.status_code == 400 and "answer" in typed.json()
    assert not Label.objects.exists()


def test_someone_elses_task_is_404_and_stores_nothing(world):
    other = UserFactory()
    enrol(world.study, other)
    theirs = token_client(other).post(next_url(world.study)).json()["token"]
    response = submit(token_client(world.annotator), world.study, theirs, {"choice": "safe"})
    assert response.status_code == 404 and response.json()["status"] == "not_found"
    assert token_client(world.annotator).post(abandon_url(world.study, theirs)).status_code == 404
    assert not Label.objects.exists()
    assert Assignment.objects.get(token=theirs).status == Assignment.Status.LEASED


def test_a_study_one_is_not_enrolled_in_is_404(world):
    client = token_client(world.annotator)
    assert client.post(next_url(world.other)).status_code == 404
    assert client.get(reverse("api-work-progress", args=[world.other.token])).status_code == 404
    # Leading a study does not enrol you in it.
    assert token_client(world.lead).post(next_url(world.study)).status_code == 404
    assert APIClient().post(next_url(world.study)).status_code == 401


@pytest.mark.parametrize("body", [{}, {"answer": "not a dict"}, {"answer": {"choice": "safe"}}])
def test_an_outsiders_submit_is_404_whatever_the_body(world, body):
    task = token_client(world.annotator).post(next_url(world.study)).json()["token"]
    elsewhere = UserFactory()
    enrol(world.other, elsewhere)  # another workspace's annotator, with their own token
    same_study = UserFactory()
    enrol(world.study, same_study)  # enrolled here, but the task is not theirs
    for user in (world.lead, world.staff, elsewhere, same_study):
        response = token_client(user).post(submit_url(world.study, task), body, format="json")
        assert response.status_code == 404, (user, response.content)
    assert not Label.objects.exists()
    assert Assignment.objects.get(token=task).status == Assignment.Status.LEASED


def test_abandon_returns_the_slot_once(world):
    client = token_client(world.annotator)
    task = client.post(next_url(world.study)).json()["token"]
    unit = Assignment.objects.get(token=task).unit
    assert Unit.objects.get(pk=unit.pk).open_slots == unit.overlap - 1
    assert client.post(abandon_url(world.study, task)).json() == {"status": "abandoned"}
    assert Unit.objects.get(pk=unit.pk).open_slots == unit.overlap
    # Twice is not a second slot; the task is no longer open.
    assert client.post(abandon_url(world.study, task)).status_code == 404
    assert Unit.objects.get(pk=unit.pk).open_slots == unit.overlap
    assert submit(client, world.study, task, {"choice": "safe"}).status_code in (200, 409)


@pytest.mark.parametrize(
    ("status", "blocked"),
    [(Study.Status.PAUSED, "paused"), (Study.Status.CLOSED, "closed"), (Study.Status.DRAFT, None)],
)
def test_the_workbench_gates_hold(world, status, blocked):
    Study.objects.filter(pk=world.study.pk).update(status=status)
    response = token_client(world.annotator).post(next_url(world.study)).json()
    assert response["token"] is None and response["task"] is None
    assert response["blocked"] == (blocked or response["blocked"]) and response["blocked"]


def test_qualification_gate_holds(world):
    Study.objects.filter(pk=world.study.pk).update(requires_qualification=True)
    response = token_client(world.annotator).post(next_url(world.study)).json()
    assert response["token"] is None and response["blocked"] == "qualification"


def test_quota_gate_holds(world):
    Study.objects.filter(pk=world.study.pk).update(quota_per_annotator=1)
    client = token_client(world.annotator)
    task = client.post(next_url(world.study)).json()["token"]
    submit(client, world.study, task, {"choice": "safe"})
    response = client.post(next_url(world.study)).json()
    assert response["token"] is None and response["blocked"] == "quota"


def test_gold_and_production_tasks_look_alike(db):
    study = make_study(n_prompts=6, systems=("alpha",), gold_rate=0.5, overlap=1)
    for unit in Unit.objects.filter(study=study).order_by("id")[:3]:
        setup.mark_gold(unit, {"choice": "safe"})
    # A session whose draw puts gold at positions 2 and 3, whatever ran before this test.
    person = enrol(study, queue_seed=1002).user
    client = token_client(person)
    shapes = {}
    for _ in range(6):
        body = client.post(next_url(study)).json()
        if body["token"] is None:
            break
        purpose = Assignment.objects.get(token=body["token"]).purpose
        shapes.setdefault(purpose, set()).add(
            (tuple(sorted(body)), tuple(sorted(body["task"])), len(body["token"]))
        )
        submit(client, study, body["token"], {"choice": "safe"})
    assert {"gold", "production"} <= set(shapes)
    assert shapes["gold"] == shapes["production"]


def test_progress_reports_done_and_the_gate(world):
    client = token_client(world.annotator)
    task = client.post(next_url(world.study)).json()["token"]
    submit(client, world.study, task, {"choice": "safe"})
    progress = client.get(reverse("api-work-progress", args=[world.study.token])).json()
    assert progress["done"] == 1 and progress["assigned"] >= 1 and progress["blocked"] == ""
    listed = client.get(reverse("api-work-studies")).json()["results"]
    assert [s["token"] for s in listed] == [world.study.token]
    assert "gold_rate" not in listed[0]
