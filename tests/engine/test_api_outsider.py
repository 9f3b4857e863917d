"""The JSON work API's one-statement authorisation, attacked by a signed-in outsider.

The 404 tests elsewhere use a study nobody is enrolled in; here the study has people working in
it, so an authorisation that is not correlated with the signed-in user would hand out its tasks.
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


def _submit(client, study, token):
    return client.post(
        reverse("api-work-submit", args=[study.token, token]),
        data=json.dumps({"choice": "safe"}),
        content_type="application/json",
        headers={"Idempotency-Key": str(uuid.uuid4())},
    )


def test_a_signed_in_outsider_gets_404_from_next_in_a_study_others_work_in():
    study = make_study(n_prompts=3)
    insider = enrol(study)
    assert (
        _signed_in(insider.user).get(reverse("api-work-next", args=[study.token])).json()["token"]
    )
    outsider = UserFactory()
    enrol(make_study(n_prompts=1), user=outsider)  # enrolled somewhere, just not here

    response = _signed_in(outsider).get(reverse("api-work-next", args=[study.token]))

    assert response.status_code == 404
    assert not Assignment.objects.filter(annotator=outsider, study=study).exists()


def test_a_colleague_in_the_same_workspace_gets_404_from_next_in_a_study_they_are_not_enrolled_in():
    # The workspace membership check passes for a colleague; only the enrolment stands between
    # them and the study, so an enrolment check not tied to the signed-in user lets them in.
    study = make_study(n_prompts=3)
    insider = enrol(study)
    assert (
        _signed_in(insider.user).get(reverse("api-work-next", args=[study.token])).json()["token"]
    )
    sibling = make_study(n_prompts=1, workspace=study.workspace)
    colleague = enrol(sibling).user  # a member of the workspace, enrolled in the sibling only

    response = _signed_in(colleague).get(reverse("api-work-next", args=[study.token]))

    assert response.status_code == 404
    assert not Assignment.objects.filter(annotator=colleague, study=study).exists()


def test_a_signed_in_outsider_gets_404_from_submit_in_a_study_others_work_in():
    study = make_study(n_prompts=3)
    insider = enrol(study)
    insider_task = _signed_in(insider.user).get(reverse("api-work-next", args=[study.token])).json()
    # An outsider who holds a lease of this study: enrolled, given a task, then un-enrolled.
    leaver = enrol(study)
    client = _signed_in(leaver.user)
    own_task = client.get(reverse("api-work-next", args=[study.token])).json()
    leaver.delete()

    on_own_lease = _submit(client, study, own_task["token"])
    on_the_insiders_task = _submit(client, study, insider_task["token"])
    on_a_made_up_task = _submit(client, study, "made-up-token")

    assert on_own_lease.status_code == 404
    assert on_the_insiders_task.status_code == 404
    assert on_a_made_up_task.status_code == 404
    assert not Label.objects.filter(study=study).exists()


def test_a_removed_member_gets_404_from_next_and_submit_in_a_workspace_others_still_work_in():
    # Removing a member keeps their enrolment (and labels); only the membership check stands
    # between them and the study, so a membership check not tied to the signed-in user would let
    # them in as long as anybody else is still a member.
    study = make_study(n_prompts=4)
    enrol(study)  # a colleague who stays
    removed = enrol(study).user
    client = _signed_in(removed)
    first = client.get(reverse("api-work-next", args=[study.token])).json()
    assert _submit(client, study, first["token"]).status_code == 200
    lease = client.get(reverse("api-work-next", args=[study.token])).json()["token"]

    people.remove_membership(study.workspace, removed)

    assert client.get(reverse("api-work-next", args=[study.token])).status_code == 404
    assert _submit(client, study, lease).status_code == 404
    assert Label.objects.filter(annotator=removed).count() == 1


def test_a_colleague_enrolled_in_the_same_study_gets_404_submitting_anothers_task():
    # The hot submit finds the task by its token joined to the signed-in user: a join not tied to
    # the user would let one annotator answer (and close) another's lease, under their own name.
    study = make_study(n_prompts=4)
    owner, colleague = enrol(study).user, enrol(study).user
    owners_task = _signed_in(owner).get(reverse("api-work-next", args=[study.token])).json()
    client = _signed_in(colleague)
    own_task = client.get(reverse("api-work-next", args=[study.token])).json()
    assert _submit(client, study, own_task["token"]).status_code == 200  # the hot path is warm

    response = _submit(client, study, owners_task["token"])

    assert response.status_code == 404
    lease = Assignment.objects.get(token=owners_task["token"])
    assert lease.annotator == owner and lease.status == Assignment.Status.LEASED
    assert not Label.objects.filter(assignment=lease).exists()
    assert Label.objects.filter(annotator=colleague).count() == 1
