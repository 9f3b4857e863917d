"""The JSON work API's one-statement authorisation, attacked by a signed-in outsider.

The 404 tests elsewhere use a study nobody is enrolled in; here the study has people working in
it, so an authorisation that is not correlated with the signed-in user would hand out its tasks.
Each refusal is also read as a script reads it: status, body and every header are those of a
token that does not exist, so it does not tell that the study or the task is there.
"""

import json
import uuid

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Assignment, Label
from annotation.services import people
from tests.factories import UserFactory, enrol, make_study

pytestmark = pytest.mark.django_db


def _signed_in(user) -> Client:
    client = Client()
    client.force_login(user)  # a plain ModelBackend session: the one-statement path serves it
    return client


def _next(client, token):
    return client.get(reverse("api-work-next", args=[token]))


def _seen(response) -> tuple:
    """Everything a script reads of an answer (the test client adds no Date header)."""
    return response.status_code, response.content, sorted(response.headers.items())


def _worked_in(n_prompts=3):
    """A study with an annotator working in it (holding a task)."""
    study = make_study(n_prompts=n_prompts)
    assert _next(_signed_in(enrol(study).user), study.token).json()["token"]
    return study


def _submit(client, study, token):
    return client.post(
        reverse("api-work-submit", args=[study.token, token]),
        data=json.dumps({"choice": "safe"}),
        content_type="application/json",
        headers={"Idempotency-Key": str(uuid.uuid4())},
    )


def test_a_signed_in_outsider_gets_404_from_next_in_a_study_others_work_in():
    study = _worked_in()
    outsider = UserFactory()
    enrol(make_study(n_prompts=1), user=outsider)  # enrolled somewhere, just not here
    client = _signed_in(outsider)

    response = _next(client, study.token)

    assert response.status_code == 404
    assert _seen(response) == _seen(_next(client, "no-such-study"))
    assert not Assignment.objects.filter(annotator=outsider, study=study).exists()


def test_a_colleague_in_the_same_workspace_gets_404_from_next_in_a_study_they_are_not_enrolled_in():
    # The workspace membership check passes for a colleague; only the enrolment stands between
    # them and the study, so an enrolment check not tied to the signed-in user lets them in.
    study = _worked_in()
    sibling = make_study(n_prompts=1, workspace=study.workspace)
    colleague = enrol(sibling).user  # a member of the workspace, enrolled in the sibling only
    client = _signed_in(colleague)

    response = _next(client, study.token)

    assert response.status_code == 404
    assert _seen(response) == _seen(_next(client, "no-such-study"))
    assert not Assignment.objects.filter(annotator=colleague, study=study).exists()


def test_a_signed_in_outsider_gets_404_from_submit_in_a_study_others_work_in():
    study = make_study(n_prompts=3)
    insider = enrol(study)
    insider_task = _next(_signed_in(insider.user), study.token).json()
    # An outsider who holds a lease of this study: enrolled, given a task, then un-enrolled.
    leaver = enrol(study)
    client = _signed_in(leaver.user)
    own_task = _next(client, study.token).json()
    leaver.delete()

    on_own_lease = _submit(client, study, own_task["token"])
    on_the_insiders_task = _submit(client, study, insider_task["token"])
    on_a_made_up_task = _submit(client, study, "made-up-token")

    assert on_own_lease.status_code == 404
    assert on_the_insiders_task.status_code == 404
    assert on_a_made_up_task.status_code == 404
    assert _seen(on_own_lease) == _seen(on_the_insiders_task) == _seen(on_a_made_up_task)
    assert not Label.objects.filter(study=study).exists()


def test_a_removed_member_gets_404_from_next_and_submit_in_a_workspace_others_still_work_in():
    # Removing a member keeps their enrolment (and labels); only the membership check stands
    # between them and the study, so a membership check not tied to the signed-in user would let
    # them in as long as anybody else is still a member.
    study = make_study(n_prompts=4)
    enrol(study)  # a colleague who stays
    removed = enrol(study).user
    client = _signed_in(removed)
    first = _next(client, study.token).json()
    assert _submit(client, study, first["token"]).status_code == 200
    lease = _next(client, study.token).json()["token"]

    people.remove_membership(study.workspace, removed)

    refused_next, refused_submit = _next(client, study.token), _submit(client, study, lease)
    assert refused_next.status_code == refused_submit.status_code == 404
    assert _seen(refused_next) == _seen(_next(client, "no-such-study"))
    assert _seen(refused_submit) == _seen(_submit(client, study, "made-up-token"))
    assert Label.objects.filter(annotator=removed).count() == 1


def test_a_colleague_enrolled_in_the_same_study_gets_404_submitting_anothers_task():
    # The hot submit finds the task by its token joined to the signed-in user: a join not tied to
    # the user would let one annotator answer (and close) another's lease, under their own name.
    study = make_study(n_prompts=4)
    owner, colleague = enrol(study).user, enrol(study).user
    owners_task = _next(_signed_in(owner), study.token).json()
    client = _signed_in(colleague)
    own_task = _next(client, study.token).json()
    assert _submit(client, study, own_task["token"]).status_code == 200  # the hot path is warm

    response = _submit(client, study, owners_task["token"])

    assert response.status_code == 404
    assert _seen(response) == _seen(_submit(client, study, "made-up-token"))
    lease = Assignment.objects.get(token=owners_task["token"])
    assert lease.annotator == owner and lease.status == Assignment.Status.LEASED
    assert not Label.objects.filter(assignment=lease).exists()
    assert Label.objects.filter(annotator=colleague).count() == 1
