"""Crowd entry: a Prolific or MTurk link signs a worker in without a password, once per worker."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.models import Enrolment, Label
from tests.factories import UserFactory, make_study
from tests.workbench.helpers import HTMX, form_fields

pytestmark = pytest.mark.django_db

PROLIFIC = {
    "PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e",
    "STUDY_ID": "6a" * 12,
    "SESSION_ID": "ab12cd",
}


def crowd_study(platform="prolific", **fields):
    return make_study(
        "categorical", n_prompts=1, systems=("alpha",), crowd_platform=platform, **fields
    )


def enter(client, study, params):
    return client.get(reverse("crowd-entry", args=[study.token]), params)


def test_a_prolific_link_creates_a_passwordless_annotator_and_signs_them_in(client):
    study = crowd_study(crowd_completion_code="C0DE42")
    response = enter(client, study, PROLIFIC)
    assert response.status_code == 302
    assert response["Location"] == reverse("work-start", args=[study.token])
    enrolment = Enrolment.objects.get(study=study)
    assert enrolment.pool == "open_crowd" and enrolment.external_id == PROLIFIC["PROLIFIC_PID"]
    user = enrolment.user
    assert not user.has_usable_password()
    assert PROLIFIC["PROLIFIC_PID"] not in user.username
    page = client.get(reverse("work-task", args=[study.token])).content.decode()
    assert 'id="task-form"' in page
    assert PROLIFIC["PROLIFIC_PID"] not in page


def test_the_same_worker_resumes_as_the_same_annotator(client):
    study = crowd_study()
    enter(client, study, PROLIFIC)
    client.logout()
    enter(client, study, {**PROLIFIC, "SESSION_ID": "other1"})
    assert Enrolment.objects.filter(study=study).count() == 1
    assert get_user_model().objects.filter(username__startswith="crowd-").count() == 1


def test_an_mturk_link_needs_worker_and_assignment_ids(client):
    study = crowd_study("mturk")
    assert enter(client, study, {"workerId": "A1B2C3D4"}).status_code == 400
    ok = enter(client, study, {"workerId": "A1B2C3D4", "assignmentId": "3XYZ", "hitId": "H1"})
    assert ok.status_code == 302


def test_an_mturk_preview_signs_nobody_in(client):
    study = crowd_study("mturk")
    response = enter(
        client, study, {"workerId": "A1", "assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE"}
    )
    assert response.status_code == 200 and "Accept the task" in response.content.decode()
    assert not Enrolment.objects.exists()


@pytest.mark.parametrize(
    "params",
    [
        {},
        {**PROLIFIC, "PROLIFIC_PID": ""},
        {**PROLIFIC, "PROLIFIC_PID": "<script>"},
        {**PROLIFIC, "PROLIFIC_PID": "x" * 65},
        {**PROLIFIC, "SESSION_ID": "../../etc"},
        {**PROLIFIC, "SESSION_ID": ""},
    ],
)
def test_malformed_parameters_are_refused(client, params):
    study = crowd_study()
    assert enter(client, study, params).status_code == 400
    assert not Enrolment.objects.exists()


def test_a_study_without_a_crowd_platform_refuses_the_link(client):
    study = make_study("categorical", n_prompts=1)
    assert enter(client, study, PROLIFIC).status_code == 404


def test_a_draft_study_takes_no_crowd_workers_yet(client):
    study = crowd_study(status="draft")
    people = get_user_model().objects.count()
    assert enter(client, study, PROLIFIC).status_code == 404
    assert get_user_model().objects.count() == people


def test_a_link_never_signs_in_an_account_with_a_password(client):
    from annotation.services.crowd import crowd_username

    study = crowd_study()
    UserFactory(username=crowd_username("prolific", PROLIFIC["PROLIFIC_PID"]))
    assert enter(client, study, PROLIFIC).status_code == 400
    assert "_auth_user_id" not in client.session


def test_when_done_the_worker_sees_the_completion_code(client):
    study = crowd_study(crowd_completion_code="C0DE42")
    enter(client, study, PROLIFIC)
    page = client.get(reverse("work-task", args=[study.token])).content.decode()
    body = client.post(
        reverse("work-submit", args=[study.token]),
        {**form_fields(page), "choice": "safe"},
        **HTMX,
    ).content.decode()
    assert Label.objects.count() == 1
    assert "C0DE42" in body


def test_when_done_the_worker_is_sent_back_to_the_platform(client):
    url = "https://app.prolific.com/submissions/complete?cc=C0DE42"
    study = crowd_study(crowd_completion_url=url)
    enter(client, study, PROLIFIC)
    page = client.get(reverse("work-task", args=[study.token])).content.decode()
    response = client.post(
        reverse("work-submit", args=[study.token]),
        {**form_fields(page), "choice": "safe"},
        **HTMX,
    )
    assert response["HX-Redirect"] == url
    again = client.get(reverse("work-task", args=[study.token]))
    assert again.status_code == 302 and again["Location"] == url


def test_a_link_opened_while_signed_in_asks_before_switching_accounts(client):
    study = crowd_study()
    lead = UserFactory()
    client.force_login(lead)
    page = enter(client, study, PROLIFIC)
    assert page.status_code == 200
    assert "Continue as the study participant" in page.content.decode()
    assert client.get("/").context["user"] == lead  # the session was not replaced
    assert not Enrolment.objects.filter(study=study).exists()
    switched = client.post(reverse("crowd-entry", args=[study.token]), PROLIFIC)
    assert switched.status_code == 302
    assert client.get("/").context["user"].username.startswith("crowd-prolific-")


def test_the_switch_needs_the_pages_csrf_token(client):
    from django.test import Client

    study = crowd_study()
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(UserFactory())
    response = strict.post(reverse("crowd-entry", args=[study.token]), PROLIFIC)
    assert response.status_code == 403
    assert not Enrolment.objects.filter(study=study).exists()
