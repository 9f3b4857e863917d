"""Skipping a task with a reason: the slot goes back, the reason is kept and counted."""

import re

import pytest
from django.urls import reverse

from annotation.models import Assignment, Label, Membership, Unit
from annotation.services import assignment as engine
from annotation.services import setup
from tests.factories import MembershipFactory, UserFactory, make_study
from tests.workbench.helpers import HTMX, blind_study, form_fields, signed_in

pytestmark = pytest.mark.django_db


def open_task(client, study):
    page = client.get(reverse("work-task", args=[study.token])).content.decode()
    return form_fields(page), page


def post(client, study, data, htmx=True):
    extra = HTMX if htmx else {}
    return client.post(reverse("work-submit", args=[study.token]), data, **extra)


def skip(client, study, fields, reason="cannot_judge", htmx=True):
    data = {**fields, "_skip": "1", "_skip_reason": reason}
    return post(client, study, data, htmx=htmx)


def test_skipping_with_a_reason_returns_the_slot_and_serves_another_task(client):
    study = make_study(n_prompts=3, overlap=1)
    signed_in(client, study)
    fields, page = open_task(client, study)
    assert "Skip this task" in page and 'name="_skip_reason" value="unreadable"' in page
    body = skip(client, study, fields, "unreadable").content.decode()
    skipped = Assignment.objects.get(token=fields["_assignment"])
    assert (skipped.status, skipped.skip_reason) == ("abandoned", "unreadable")
    assert Unit.objects.get(pk=skipped.unit_id).open_slots == 1
    assert "Skipped. Here is your next task." in body
    assert form_fields(body)["_assignment"] != fields["_assignment"]
    assert Label.objects.count() == 0


def test_a_skipped_unit_is_not_offered_to_the_same_annotator_again(client):
    study = make_study(n_prompts=3, overlap=2)
    user = signed_in(client, study)
    fields, _ = open_task(client, study)
    skipped = Assignment.objects.get(token=fields["_assignment"]).unit_id
    skip(client, study, fields)
    served = []
    while (a := engine.next_assignment(user, study)) is not None:
        served.append(a.unit_id)
        engine.abandon(a, "other")
    assert skipped not in served and len(served) == 5


def test_a_skip_without_a_reason_is_refused_and_the_task_stays(client):
    study = make_study(n_prompts=2)
    signed_in(client, study)
    fields, _ = open_task(client, study)
    body = skip(client, study, fields, reason="").content.decode()
    assert "choose why you skip this task" in body
    assert form_fields(body)["_assignment"] == fields["_assignment"]
    assert re.search(r'<details class="wb-skip" open>', body)
    assert Assignment.objects.get(token=fields["_assignment"]).status == "leased"
    plain = skip(client, study, fields, reason="bored", htmx=False)
    assert plain.status_code == 422
    assert Assignment.objects.get(token=fields["_assignment"]).status == "leased"


def test_skipping_a_task_already_answered_changes_nothing(client):
    study = make_study(n_prompts=2)
    signed_in(client, study)
    fields, _ = open_task(client, study)
    post(client, study, {**fields, "choice": "safe"})
    body = skip(client, study, fields).content.decode()
    assert "already answered" in body
    assert Assignment.objects.get(token=fields["_assignment"]).status == "submitted"


def test_skips_move_the_counter_but_not_the_total_whatever_was_skipped(client):
    study = blind_study("categorical", n_prompts=12, overlap=1, gold_rate=0.4)
    for unit in Unit.objects.filter(study=study).order_by("id")[:6]:
        setup.mark_gold(unit, {"choice": "safe"})
    signed_in(client, study, queue_seed=616161)
    _, page = open_task(client, study)
    seen = []
    while 'id="task-form"' in page:
        fields = form_fields(page)
        purpose = Assignment.objects.get(token=fields["_assignment"]).purpose
        done, total = map(int, re.search(r"(\d+) of (\d+) done", page).groups())
        seen.append((purpose, done, total))
        page = skip(client, study, fields).content.decode()
    assert {"production", "gold"} <= {p for p, _, _ in seen}
    assert len({total for _, _, total in seen}) == 1, seen
    assert [done for _, done, _ in seen] == list(range(len(seen)))


def test_the_lead_sees_skips_counted_by_reason_on_the_overview(client):
    study = make_study(n_prompts=4, overlap=1)
    signed_in(client, study)
    for reason in ("unreadable", "unreadable", "cannot_judge"):
        fields, _ = open_task(client, study)
        skip(client, study, fields, reason)
    lead = UserFactory()
    MembershipFactory(user=lead, workspace=study.workspace, role=Membership.Role.LEAD)
    client.force_login(lead)
    page = client.get(reverse("study-overview", args=[study.token])).content.decode()
    line = re.search(r'<dd id="skips">(.*?)</dd>', page).group(1)
    assert line == ("3 (I cannot judge this one: 1; The text is broken or unreadable: 2)")
