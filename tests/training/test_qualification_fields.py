"""Qualification's read side field by field: what a candidate's status says, what a missed item
shows, and what the lead's results count, each scoped to one study's qualification attempts.

test_qualification.py checks the flow (scores decide the pass, retries, the trap); these check
every field the pages read, found by the mutation run of annotation/services/qualification.py
(bench/MUTATION.md): a flag inverted or another study's attempts counted passed every test.
"""

import pytest
from django.urls import reverse

from annotation.models import Enrolment, Membership, QualificationItem, Study, TrainingBatch
from annotation.services import qualification
from tests.factories import MembershipFactory, UserFactory, enrol
from tests.training.helpers import answer_batch, labelled_study, unit_of

pytestmark = pytest.mark.django_db


def built_test(study):
    """p0 (boundary, keyed unsafe) and p2 (easy, keyed safe); returns unit id -> prompt id."""
    qualification.add_item(study, unit_of(study, "p0"), answer="unsafe", difficulty="boundary")
    qualification.add_item(study, unit_of(study, "p2"), answer="safe", difficulty="easy")
    return {
        i.unit_id: i.source_unit.prompt.external_id
        for i in QualificationItem.objects.filter(study=study).select_related("source_unit__prompt")
    }


def take(study, user, keys, wrong=()):
    """One finished attempt: every item right except the prompts in `wrong` (answered "maybe"
    is not a label; the wrong answer is the other one)."""
    right = {"p0": "unsafe", "p2": "safe"}
    flip = {"safe": "unsafe", "unsafe": "safe"}
    attempt = qualification.start_attempt(study, user)
    answer_batch(
        attempt,
        lambda unit: flip[right[keys[unit.pk]]] if keys[unit.pk] in wrong else right[keys[unit.pk]],
    )
    return qualification.finish_attempt(attempt)


def test_a_candidates_status_from_first_look_to_qualified():
    study, _ = labelled_study(qualification_pass_score=1.0, qualification_attempts=3)
    keys = built_test(study)
    user = enrol(study).user
    status = qualification.status(study, user)
    assert (status.qualified, status.attempts_used, status.attempts_left) == (False, 0, 3)
    assert (status.open_attempt, status.last_attempt) == (None, None)
    assert (status.can_start, status.reason) == (True, "")

    failed = take(study, user, keys, wrong={"p0"})
    qualification.mark_guide_reread(study, user)
    attempt = qualification.start_attempt(study, user)
    status = qualification.status(study, user)
    assert (status.attempts_used, status.attempts_left) == (2, 1)
    assert status.open_attempt == attempt and status.last_attempt == failed
    assert (status.can_start, status.reason) == (True, "")  # the open attempt goes on

    answer_batch(attempt, lambda unit: {"p0": "unsafe", "p2": "safe"}[keys[unit.pk]])
    passed = qualification.finish_attempt(attempt)
    status = qualification.status(study, user)
    assert status.qualified and status.reason == "qualified" and not status.can_start
    assert status.open_attempt is None and status.last_attempt == passed


def test_a_study_without_a_test_or_not_open_says_why():
    study, _ = labelled_study()
    user = enrol(study).user
    status = qualification.status(study, user)
    assert (status.reason, status.can_start) == ("no_test", False)
    built_test(study)
    Study.objects.filter(pk=study.pk).update(status=Study.Status.PAUSED)
    study.refresh_from_db()
    status = qualification.status(study, user)
    assert (status.reason, status.can_start) == ("closed", False)


def test_another_studys_enrolment_and_attempts_never_count():
    study, _ = labelled_study(qualification_attempts=2, qualification_retry_after_guide=True)
    other, _ = labelled_study(qualification_attempts=3, qualification_retry_after_guide=True)
    keys, other_keys = built_test(study), built_test(other)
    user = enrol(study).user
    enrol(other, user=user)
    take(other, user, other_keys, wrong={"p0", "p2"})  # failed elsewhere, twice
    qualification.mark_guide_reread(other, user)
    take(other, user, other_keys, wrong={"p0", "p2"})
    status = qualification.status(study, user)
    assert (status.attempts_used, status.attempts_left, status.reason) == (0, 2, "")

    failed = take(study, user, keys, wrong={"p0"})
    # Re-reading the other study's guide does not meet this study's retry rule.
    qualification.mark_guide_reread(other, user)
    assert TrainingBatch.objects.get(pk=failed.pk).guide_reread_at is None
    assert qualification.status(study, user).reason == "reread"
    take(other, user, other_keys)  # and qualifying there does not qualify here
    results = qualification.results(study)
    assert [row.user for row in results.candidates] == [user]
    assert [a.pk for a in results.candidates[0].attempts] == [failed.pk]
    assert not results.candidates[0].qualified and results.passed_eventually == 0


def test_a_missed_item_shows_its_text_the_answer_given_and_its_difficulty():
    study, _ = labelled_study(qualification_pass_score=1.0)
    keys = built_test(study)
    attempt = take(study, enrol(study).user, keys, wrong={"p0", "p2"})
    missed = {m.difficulty: m for m in qualification.missed_items(attempt)}
    assert set(missed) == {"Boundary", "Easy"}
    assert missed["Boundary"].given == "Safe" and missed["Easy"].given == "Unsafe"
    assert missed["Boundary"].text is not None and missed["Boundary"].text != missed["Easy"].text


def test_the_leads_results_name_who_qualified_and_count_only_finished_attempts():
    study, _ = labelled_study(qualification_pass_score=1.0)
    keys = built_test(study)
    passed, failed, busy = (enrol(study).user for _ in range(3))
    take(study, passed, keys)
    take(study, failed, keys, wrong={"p0"})
    qualification.start_attempt(study, busy)  # open: not a result yet
    results = qualification.results(study)
    rows = {row.user: row for row in results.candidates}
    assert set(rows) == {passed, failed}
    assert rows[passed].qualified and not rows[failed].qualified
    assert results.passed_eventually == 1 and results.n_candidates == 2
    assert (results.n_easy, results.n_boundary) == (1, 1)
    expected = {keys[row.item.unit_id]: row.expected for row in results.items}
    assert expected == {"p0": "Unsafe", "p2": "Safe"}
    assert all(row.text is not None for row in results.items)
    assert Enrolment.objects.get(study=study, user=passed).qualified_at is not None


def test_re_reading_the_guide_unlocks_the_readers_retry_only():
    study, _ = labelled_study(qualification_pass_score=1.0, qualification_retry_after_guide=True)
    keys = built_test(study)
    reader, other = enrol(study).user, enrol(study).user
    for user in (reader, other):
        take(study, user, keys, wrong={"p0"})
    qualification.mark_guide_reread(study, reader)
    assert qualification.status(study, reader).reason == ""
    assert qualification.status(study, other).reason == "reread"


def test_the_leads_results_list_candidates_by_name_with_their_attempts_in_order():
    study, _ = labelled_study(qualification_pass_score=1.0, qualification_retry_after_guide=False)
    keys = built_test(study)
    zed = enrol(study, user=UserFactory(username="q-zed")).user
    amy = enrol(study, user=UserFactory(username="q-amy")).user
    first = take(study, zed, keys, wrong={"p0"})
    take(study, amy, keys)
    second = take(study, zed, keys)
    rows = qualification.results(study).candidates
    assert [row.user.username for row in rows] == ["q-amy", "q-zed"]
    assert [a.pk for a in rows[1].attempts] == [first.pk, second.pk]
    assert [row.qualified for row in rows] == [True, True]


def test_an_item_deleted_in_the_admin_after_it_was_answered_leaves_the_other_answers_counted(
    client,
):
    study, _ = labelled_study(qualification_pass_score=1.0)
    keys = built_test(study)
    candidate = enrol(study).user
    attempt = take(study, candidate, keys, wrong={"p0", "p2"})
    # The item the candidate saw first goes; its copy and the answer to it stay.
    first = attempt.tasks.order_by("position").first()
    gone = QualificationItem.objects.get(unit_id=first.unit_id)
    kept = keys[next(unit_id for unit_id in keys if unit_id != first.unit_id)]
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    url = reverse("admin:annotation_qualificationitem_delete", args=[gone.pk])
    assert client.post(url, {"post": "yes"}).status_code == 302
    assert not QualificationItem.objects.filter(pk=gone.pk).exists()

    client.force_login(MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user)
    page = client.get(reverse("qualification-results", args=[study.token]))
    rows = [
        (keys[row.item.unit_id], row.answers, row.correct) for row in page.context["results"].items
    ]
    assert rows == [(kept, 1, 0)]
    client.force_login(candidate)
    page = client.get(reverse("training-result", args=[study.token, attempt.token]))
    assert [m.difficulty for m in page.context["missed"]] == [
        {"p0": "Boundary", "p2": "Easy"}[kept]
    ]
