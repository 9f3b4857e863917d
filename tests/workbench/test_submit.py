"""Submitting: one label per key, the next task swapped in, bad values refused."""

import json
import re
import uuid

import pytest
from django.urls import reverse

from annotation.models import Assignment, Label, OutputRating, SpaAnswer
from tests.factories import make_study
from tests.workbench.helpers import HTMX, blind_study, form_fields, signed_in

pytestmark = pytest.mark.django_db


def rendered_ago(seconds: float) -> str:
    """The signed render time of a task shown `seconds` ago (as a page held that long has)."""
    from datetime import timedelta

    from django.utils import timezone

    from annotation.workbench import _sign_rendered

    return _sign_rendered(timezone.now() - timedelta(seconds=seconds))


def open_task(client, study):
    page = client.get(reverse("work-task", args=[study.token])).content.decode()
    return form_fields(page), page


def post(client, study, data, htmx=True):
    extra = HTMX if htmx else {}
    return client.post(reverse("work-submit", args=[study.token]), data, **extra)


def test_a_submission_stores_the_label_and_swaps_in_the_next_task(client):
    study = make_study("categorical", n_prompts=3)
    signed_in(client, study)
    fields, _ = open_task(client, study)
    response = post(client, study, {**fields, "choice": "unsafe"})
    body = response.content.decode()
    label = Label.objects.get()
    assert (label.choice, label.assignment.token) == ("unsafe", fields["_assignment"])
    assert label.idempotency_key == uuid.UUID(fields["_key"])
    assert "<html" not in body and 'id="task-form"' in body
    assert form_fields(body)["_assignment"] != fields["_assignment"]
    assert 'id="wb-progress" class="wb-progress" hx-swap-oob="true"' in body
    assert "1 of" in body and "Saved." in body


def test_without_javascript_the_form_posts_and_redirects_to_the_next_task(client):
    study = make_study("likert", n_prompts=2)
    signed_in(client, study)
    fields, _ = open_task(client, study)
    response = post(client, study, {**fields, "score": "4"}, htmx=False)
    assert response.status_code == 302
    assert response["Location"] == reverse("work-task", args=[study.token])
    assert Label.objects.get().score == 4


def test_the_same_key_posted_twice_stores_one_label_and_both_get_the_next_task(client):
    study = make_study("categorical", n_prompts=3)
    signed_in(client, study)
    fields, _ = open_task(client, study)
    first = post(client, study, {**fields, "choice": "safe"}).content.decode()
    second = post(client, study, {**fields, "choice": "safe"}).content.decode()
    assert Label.objects.count() == 1
    assert form_fields(first)["_assignment"] == form_fields(second)["_assignment"]
    assert "Already submitted" in second


def test_a_stale_form_with_another_key_gets_already_submitted_and_the_next_task(client):
    study = make_study("categorical", n_prompts=3)
    signed_in(client, study)
    fields, _ = open_task(client, study)
    post(client, study, {**fields, "choice": "safe"})
    stale = {**fields, "_key": str(uuid.uuid4()), "choice": "unsafe"}
    body = post(client, study, stale).content.decode()
    assert Label.objects.count() == 1 and Label.objects.get().choice == "safe"
    assert "Already submitted" in body and 'id="task-form"' in body


@pytest.mark.parametrize(
    "kind, data, field",
    [
        ("spa", {"p_0": "-1"}, "p_0"),
        ("spa", {"p_0": "140"}, "p_0"),
        ("spa", {"p_0": "NaN"}, "p_0"),
        ("spa", {"p_0": "fifty"}, "p_0"),
        ("categorical", {"choice": "maybe"}, "choice"),
        ("likert", {"score": "7"}, "score"),
        ("likert", {"score": "2.5"}, "score"),
        ("continuous", {"score": "101"}, "score"),
        ("pairwise", {"choice": "both"}, "choice"),
    ],
)
def test_bad_values_are_refused_next_to_the_field_and_nothing_is_stored(client, kind, data, field):
    study = blind_study(kind, spa_exposure_m=2)
    signed_in(client, study)
    fields, _ = open_task(client, study)
    body = post(client, study, {**fields, **data}).content.decode()
    assert Label.objects.count() == 0
    assert f'<p class="wb-field-error" id="err-{field}">' in body
    assert form_fields(body)["_assignment"] == fields["_assignment"]
    assert form_fields(body)["_key"] == fields["_key"]  # a fixed answer still stores once
    plain = post(client, study, {**fields, **data}, htmx=False)
    assert plain.status_code == 422 and Label.objects.count() == 0


def test_the_typed_answer_survives_a_refusal(client):
    study = blind_study("spa", spa_exposure_m=2)
    signed_in(client, study)
    fields, _ = open_task(client, study)
    body = post(client, study, {**fields, "p_0": "140"}).content.decode()
    assert (
        'name="p_0" class="wb-number" min="0" max="100" step="any" inputmode="decimal" value="140"'
        in body
    )


def test_an_spa_batch_stores_every_probability_and_rating_for_the_right_outputs(client):
    study = blind_study("spa", spa_exposure_m=2, spa_collect_likert=True, spa_both_directions=True)
    signed_in(client, study)
    fields, page = open_task(client, study)
    a = Assignment.objects.get(study=study)
    p = a.presentation
    answers = {f"p_{i}": str(10 + i) for i in range(len(p["questions"]))}
    ratings = {f"likert_{j}": str(1 + j % 5) for j in range(len(p["outputs"]))}
    exposure = {
        "outputs": {str(j): {"ms": 1000 + j, "seen": j != 1} for j in range(len(p["outputs"]))}
    }
    data = {**fields, **answers, **ratings, "_duration_ms": "5000", "_active_ms": "4000"}
    data["_rendered"] = rendered_ago(seconds=10)
    data["_exposure"] = json.dumps(exposure)
    post(client, study, data)
    label = Label.objects.get()
    spa = {(s.position, s.reverse): s.probability for s in SpaAnswer.objects.filter(label=label)}
    assert spa == {(i, q["reverse"]): 10 + i for i, q in enumerate(p["questions"])}
    scores = dict(OutputRating.objects.filter(label=label).values_list("output_id", "score"))
    assert scores == {oid: 1 + j % 5 for j, oid in enumerate(p["outputs"])}
    assert (label.duration_ms, label.active_ms) == (5000, 4000)
    assert label.rendered_at is not None
    shown = label.exposure["outputs"]
    assert [o["output"] for o in shown] == p["outputs"]
    assert [o["seen"] for o in shown] == [j != 1 for j in range(len(p["outputs"]))]
    assert shown[0]["visible_ms"] == 1000


def test_a_tampered_render_time_is_ignored(client):
    study = make_study("categorical", n_prompts=2)
    signed_in(client, study)
    fields, _ = open_task(client, study)
    fields["_rendered"] = "2020-01-01T00:00:00+00:00:forged"
    post(client, study, {**fields, "choice": "safe", "_duration_ms": "1200"})
    label = Label.objects.get()
    assert label.rendered_at is None and label.duration_ms == 1200


def test_active_time_is_never_more_than_the_duration(client):
    study = make_study("categorical", n_prompts=2)
    signed_in(client, study)
    fields, _ = open_task(client, study)
    fields["_rendered"] = rendered_ago(seconds=10)
    post(client, study, {**fields, "choice": "safe", "_duration_ms": "900", "_active_ms": "99999"})
    label = Label.objects.get()
    assert (label.duration_ms, label.active_ms) == (900, 900)


def test_a_form_without_its_key_is_refused(client):
    study = make_study("categorical", n_prompts=2)
    signed_in(client, study)
    fields, _ = open_task(client, study)
    response = post(client, study, {**fields, "_key": "not-a-uuid", "choice": "safe"})
    assert response.status_code == 400 and Label.objects.count() == 0


def test_an_expired_session_gets_401_with_a_redirect_never_a_login_page(client):
    study = make_study("categorical", n_prompts=2)
    signed_in(client, study)
    fields, _ = open_task(client, study)
    client.logout()
    response = post(client, study, {**fields, "choice": "safe"})
    assert response.status_code == 401
    assert response["HX-Redirect"].startswith("/accounts/login/?next=")
    assert Label.objects.count() == 0


def test_a_signed_out_plain_post_returns_to_the_task_after_signing_in(client):
    study = make_study("categorical", n_prompts=2)
    response = post(client, study, {"choice": "safe"}, htmx=False)
    assert response.status_code == 302
    assert response["Location"].endswith("?next=" + reverse("work-task", args=[study.token]))


def test_the_progress_bar_counts_gold_like_any_task(client):
    from annotation.models import Unit
    from annotation.services import setup

    study = blind_study("categorical", n_prompts=8, gold_rate=0.6)
    for unit in Unit.objects.filter(study=study)[:6]:
        setup.mark_gold(unit, "safe")
    user = signed_in(client, study)
    _, page = open_task(client, study)
    for n in range(1, 11):  # gold is drawn at random: 10 tasks all but guarantee some
        fields = form_fields(page)
        page = post(client, study, {**fields, "choice": "safe"}).content.decode()
        assert re.search(rf'<progress [^>]*value="{n}"', page)
        assert f"{n} of" in page
    purposes = list(Label.objects.filter(annotator=user).values_list("purpose", flat=True))
    assert len(purposes) == 10 and "gold" in purposes


def test_when_work_runs_out_the_page_says_so(client):
    study = make_study("categorical", n_prompts=1, systems=("alpha",))
    signed_in(client, study)
    fields, _ = open_task(client, study)
    body = post(client, study, {**fields, "choice": "safe"}).content.decode()
    assert "All done" in body and 'id="task-form"' not in body
