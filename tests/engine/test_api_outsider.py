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
