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
