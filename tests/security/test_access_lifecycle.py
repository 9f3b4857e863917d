"""Access needs both the workspace membership and the study enrolment; ending either (or the
account) refuses the very next request on every open session, releases open leases and keeps
labels. Sessions: signing in rotates the session id; signing out kills the old cookie."""

import uuid

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from annotation.models import Assignment, Enrolment, Label, Membership, Unit
from annotation.services import people
from tests.factories import UserFactory, enrol, make_study

pytestmark = pytest.mark.django_db

PASSWORD = "pw-for-tests-1"


def session(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def api_next(client, study):
    return client.get(reverse("api-work-next", args=[study.token]))


def api_submit(client, study, token, value="safe"):
    return client.post(
        reverse("api-work-submit", args=[study.token, token]),
        {"choice": value},
        content_type="application/json",
        headers={"Idempotency-Key": str(uuid.uuid4())},
    )


@pytest.fixture
def working():
    """An annotator with two open sessions, one stored label and one open lease in study A."""
    study = make_study(n_prompts=4)
    user = enrol(study).user
    web, api = session(user), session(user)
    first = api_next(api, study).json()
    assert api_submit(api, study, first["token"]).status_code == 200
    lease = api_next(api, study).json()["token"]
    assert web.get(reverse("work-task", args=[study.token])).status_code == 200
    return study, user, web, api, lease


def open_slots(study) -> int:
    return sum(Unit.objects.filter(study=study).values_list("open_slots", flat=True))


def test_an_enrolment_without_a_membership_gives_no_access():
    study = make_study(n_prompts=2)
    user = UserFactory()
    Enrolment.objects.create(study=study, user=user)  # enrolled, never a workspace member
    client = session(user)
    assert client.get(reverse("work-task", args=[study.token])).status_code == 404
    assert api_next(client, study).status_code == 404
    assert reverse("work-start", args=[study.token]) not in client.get("/").content.decode()


def test_a_membership_without_an_enrolment_gives_no_annotator_access():
    study = make_study(n_prompts=2)
    user = UserFactory()
    Membership.objects.create(workspace=study.workspace, user=user, role="annotator")
    client = session(user)
    assert client.get(reverse("work-task", args=[study.token])).status_code == 404
    assert api_next(client, study).status_code == 404


def test_removing_the_membership_refuses_the_next_request_on_every_session(working):
    study, user, web, api, lease = working
    slots_before = open_slots(study)
    released = people.remove_membership(study.workspace, user)
    assert released == 1
    assert Assignment.objects.get(token=lease).status == Assignment.Status.EXPIRED
    assert open_slots(study) == slots_before + 1  # the lease's slot is back in the pool
    assert web.get(reverse("work-task", args=[study.token])).status_code == 404
    assert web.get(reverse("work-start", args=[study.token])).status_code == 404
    assert api_next(api, study).status_code == 404
    assert api_submit(api, study, lease).status_code == 404
    home = web.get("/").content.decode()
    assert study.name not in home and study.token not in home
    assert Label.objects.filter(annotator=user).count() == 1  # labels are kept


def test_deactivating_refuses_the_next_request_on_every_session(working):
    study, user, web, api, lease = working
    assert people.deactivate_user(user) == 1
    assert Assignment.objects.get(token=lease).status == Assignment.Status.EXPIRED
    page = web.get(reverse("work-task", args=[study.token]))
    assert page.status_code == 302 and page["Location"].startswith(reverse("login"))
    htmx = web.get(reverse("work-task", args=[study.token]), headers={"HX-Request": "true"})
    assert htmx.status_code == 401
    assert api_next(api, study).status_code == 401
    assert api_submit(api, study, lease).status_code == 401
    assert web.get("/").status_code == 302
    assert Label.objects.filter(annotator=user).count() == 1


def test_a_removed_crowd_worker_cannot_come_back_through_the_study_link(client):
    study = make_study(n_prompts=2, crowd_platform="prolific")
    params = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "SESSION_ID": "s1", "STUDY_ID": "x"}
    entry = reverse("crowd-entry", args=[study.token])
    assert client.get(entry, params).status_code == 302
    worker = Enrolment.objects.get(study=study).user
    assert Membership.objects.filter(user=worker, workspace=study.workspace).exists()
    people.remove_membership(study.workspace, worker)
    assert client.get(reverse("work-task", args=[study.token])).status_code == 404
    fresh = Client()
    assert fresh.get(entry, params).status_code == 400
    assert not Membership.objects.filter(user=worker).exists()


def test_a_deactivated_crowd_worker_cannot_sign_in_through_the_study_link():
    study = make_study(n_prompts=2, crowd_platform="prolific")
    params = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "SESSION_ID": "s1", "STUDY_ID": "x"}
    entry = reverse("crowd-entry", args=[study.token])
    assert Client().get(entry, params).status_code == 302
    people.deactivate_user(Enrolment.objects.get(study=study).user)
    fresh = Client()
    assert fresh.get(entry, params).status_code == 400
    assert fresh.get(reverse("work-task", args=[study.token])).status_code == 302


# --- session lifecycle -----------------------------------------------------------------------


def sign_in(client, user):
    return client.post(reverse("login"), {"username": user.username, "password": PASSWORD})


def test_signing_in_rotates_the_session_id(client):
    user = UserFactory()
    client.get(reverse("login"))
    client.session["marker"] = 1  # an anonymous session exists before signing in
    s = client.session
    s["marker"] = 1
    s.save()
    before = client.cookies["sessionid"].value
    assert sign_in(client, user).status_code == 302
    after = client.cookies["sessionid"].value
    assert after != before
    stale = Client()
    stale.cookies["sessionid"] = before
    assert stale.get("/").status_code == 302  # the pre-login id is not signed in


def test_signing_out_kills_the_old_cookie(client):
    user = UserFactory()
    sign_in(client, user)
    cookie = client.cookies["sessionid"].value
    assert client.get("/").status_code == 200
    assert client.post(reverse("logout")).status_code == 302
    replay = Client()
    replay.cookies["sessionid"] = cookie
    assert replay.get("/").status_code == 302
    study = make_study(n_prompts=1)
    enrol(study, user)
    assert api_next(replay, study).status_code == 401


def test_changing_the_password_ends_other_sessions():
    user = UserFactory()
    other = session(user)
    user = get_user_model().objects.get(pk=user.pk)
    user.set_password("another-long-password-9")
    user.save()
    assert other.get("/").status_code == 302
