"""What the workbench accepts: submits bound to their study, one key per task, the scheme's fields
only, and no answers while the study is not live."""

import pytest
from django.urls import reverse

from annotation.models import Assignment, Label
from tests.factories import enrol, make_study
from tests.workbench.helpers import HTMX, form_fields, signed_in

pytestmark = pytest.mark.django_db


def open_task(client, study):
    page = client.get(reverse("work-task", args=[study.token])).content.decode()
    return form_fields(page), page


def post(client, study, data, htmx=True):
    extra = HTMX if htmx else {}
    return client.post(reverse("work-submit", args=[study.token]), data, **extra)


def test_a_lease_of_another_study_is_not_stored_through_this_studys_url(client):
    here, there = make_study(n_prompts=2), make_study(n_prompts=2)
    user = signed_in(client, here)
    enrol(there, user=user)
    theirs, _ = open_task(client, there)
    post(client, here, {**theirs, "choice": "safe"})
    post(client, here, {**theirs, "choice": "safe"}, htmx=False)
    assert Label.objects.count() == 0
    assert Assignment.objects.get(token=theirs["_assignment"]).status == "leased"
    # Through its own study's URL it is stored.
    post(client, there, {**theirs, "choice": "safe"})
    assert Label.objects.get().assignment.token == theirs["_assignment"]


@pytest.mark.parametrize("htmx", [True, False])
def test_a_key_reused_on_another_task_is_409_and_the_task_returns_under_a_fresh_key(client, htmx):
    study = make_study(n_prompts=3)
    signed_in(client, study)
    first, _ = open_task(client, study)
    post(client, study, {**first, "choice": "safe"})
    second, _ = open_task(client, study)
    reused = {**second, "_key": first["_key"], "choice": "unsafe"}
    response = post(client, study, reused, htmx=htmx)
    body = response.content.decode()
    assert response.status_code == 409
    assert "already used for another task" in body and "nothing was saved" in body
    again = form_fields(body)
    assert again["_assignment"] == second["_assignment"]
    assert again["_key"] not in (first["_key"], second["_key"])
    assert 'value="unsafe" data-keys="u" checked' in body  # the answer as typed
    assert Label.objects.count() == 1
    post(client, study, {**again, "choice": "unsafe"})
    assert Label.objects.get(assignment__token=second["_assignment"]).choice == "unsafe"


def test_only_the_schemes_fields_are_stored_from_the_form(client):
    study = make_study(n_prompts=2)
    signed_in(client, study)
    fields, _ = open_task(client, study)
    post(client, study, {**fields, "choice": "safe", "comment": "c" * 150, "hx": "1"})
    assert Label.objects.get().value == {"choice": "safe"}


@pytest.mark.parametrize(
    "extra, field",
    [({"choice": "safe\x00"}, "choice"), ({"choice": "safe", "note": "a\x00b"}, "note")],
)
def test_a_nul_in_any_field_is_refused_naming_it(client, extra, field):
    study = make_study(n_prompts=2)
    signed_in(client, study)
    fields, _ = open_task(client, study)
    response = post(client, study, {**fields, **extra}, htmx=False)
    body = response.content.decode()
    assert response.status_code == 422 and Label.objects.count() == 0
    assert field in body and "control character" in body
    assert form_fields(body)["_key"] == fields["_key"]


def test_the_pages_timings_are_kept_plausible(client):
    study = make_study(n_prompts=2)
    signed_in(client, study)
    fields, _ = open_task(client, study)
    data = {**fields, "choice": "safe", "_duration_ms": str(2**31 - 1), "_active_ms": "1e12"}
    post(client, study, data)
    label = Label.objects.get()
    # At most the time since the signed render: a few seconds in a test, never 24 days.
    assert label.duration_ms < 60_000 and label.active_ms <= label.duration_ms


@pytest.mark.parametrize("status", ["paused", "closed"])
def test_a_late_answer_to_a_stopped_study_is_409_with_a_clear_message(client, status):
    study = make_study(n_prompts=2)
    signed_in(client, study)
    fields, _ = open_task(client, study)
    study.status = status
    study.save()
    response = post(client, study, {**fields, "choice": "safe"})
    body = response.content.decode()
    assert response.status_code == 409 and Label.objects.count() == 0
    assert f"The study was {status} before your answer arrived" in body
    assert "kept in this browser" in body and 'id="task-form"' not in body
    # The task page does not show the open task while the study is stopped.
    page = client.get(reverse("work-task", args=[study.token])).content.decode()
    assert 'id="task-form"' not in page
    plain = post(client, study, {**fields, "choice": "safe"}, htmx=False)
    assert plain.status_code == 302 and Label.objects.count() == 0
