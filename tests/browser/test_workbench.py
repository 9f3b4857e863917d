"""The workbench in Chromium: every task kind by keyboard, SPA end to end, nothing lost."""

import re

import pytest
from django.contrib.sessions.models import Session
from django.db import connection
from django.urls import reverse

from annotation.models import Assignment, Label, OutputRating, SpaAnswer, Unit
from annotation.services import setup
from tests.browser.workbench import (
    WAIT_SWAP,
    current_token,
    open_study,
    sign_in_with_keyboard,
    submit_with_enter,
)
from tests.factories import enrol
from tests.workbench.helpers import SYSTEMS, blind_study

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    # Real browser / real thread timing on a shared 2-core machine: a rare timing miss is
    # retried (and shown as a rerun in the report); a real failure fails every try.
    pytest.mark.flaky(reruns=2, reruns_delay=1),
]


def ready(live_server, page, kind, tap=False, **fields):
    """A study of `kind`, an enrolled annotator signed in, and the first task on screen."""
    study = blind_study(kind, **fields)
    user = enrol(study).user
    sign_in_with_keyboard(page, live_server.url, user)
    open_study(page, live_server.url, study, tap=tap)
    return study, user


def leased(user) -> Assignment:
    return Assignment.objects.get(annotator=user, status="leased")


def answer_spa_with_keyboard(page, assignment: Assignment, likert: bool):
    """Tab from the question heading through every rating group and probability field."""
    p = assignment.presentation
    if likert:
        for j in range(len(p["outputs"])):
            page.keyboard.press("Tab")
            page.keyboard.press(str(1 + j % 5))
    for i in range(len(p["questions"])):
        page.keyboard.press("Tab")
        page.keyboard.type(str(20 + 10 * i))


@pytest.mark.parametrize(
    "kind", ["likert", "continuous", "categorical", "ordinal", "pairwise", "spa"]
)
def test_one_task_of_each_kind_with_the_keyboard_only(live_server, page, screenshots, kind):
    extra = {"spa_exposure_m": 2, "spa_collect_likert": True} if kind == "spa" else {}
    study, user = ready(live_server, page, kind, **extra)
    a = leased(user)
    if kind == "likert":
        page.keyboard.press("4")
    elif kind == "continuous":
        page.keyboard.type("73")
    elif kind == "categorical":
        page.keyboard.press("u")
    elif kind == "ordinal":
        page.keyboard.press("p")
    elif kind == "pairwise":
        page.keyboard.press("ArrowRight")
    else:
        answer_spa_with_keyboard(page, a, likert=True)
    assert page.is_visible("kbd")
    page.screenshot(path=str(screenshots / f"{kind}.png"), full_page=True, caret="initial")
    submit_with_enter(page)
    label = Label.objects.get(annotator=user)
    assert label.assignment_id == a.pk
    if kind == "likert":
        assert label.score == 4
    elif kind == "continuous":
        assert label.score == 73
    elif kind == "categorical":
        assert label.choice == "unsafe"
    elif kind == "ordinal":
        assert label.choice == "partially"
    elif kind == "pairwise":
        right = a.unit.members.get(output_id=a.presentation["right"]).output
        assert (label.choice, label.winner_id) == ("right", right.system_id)
    else:
        assert SpaAnswer.objects.filter(label=label).count() == len(a.presentation["questions"])
    assert label.duration_ms and label.duration_ms > 0
    assert label.active_ms is not None and label.active_ms <= label.duration_ms
    assert label.rendered_at is not None
    assert re.fullmatch(r"1 of \d+ done", " ".join(page.text_content("#wb-progress").split()))


def test_an_spa_batch_end_to_end(live_server, page, screenshots):
    study, user = ready(
        live_server,
        page,
        "spa",
        systems=SYSTEMS,
        spa_exposure_m=3,
        spa_collect_likert=True,
        spa_both_directions=True,
    )
    a = leased(user)
    p = a.presentation
    # The questions in the drawn order; reverse ones after the forward ones, never next to a twin.
    asked = re.findall(
        r"chance that Writer ([A-Z]) is a better writer than Writer ([A-Z])",
        page.text_content("#task-form"),
    )
    assert asked == [(q["x"], q["y"]) for q in p["questions"]]
    assert len(asked) == 4
    # Scroll through the reading so every output is seen, then answer with the keyboard.
    for j in range(len(p["outputs"])):
        page.locator(f'[data-exposure="{j}"]').scroll_into_view_if_needed()
        page.wait_for_timeout(60)
    page.focus("#task-title")
    answer_spa_with_keyboard(page, a, likert=True)
    page.screenshot(path=str(screenshots / "spa-batch.png"), full_page=True, caret="initial")
    submit_with_enter(page)
    label = Label.objects.get(annotator=user)
    answers = SpaAnswer.objects.filter(label=label).order_by("position")
    assert [(s.reverse, s.probability) for s in answers] == [
        (q["reverse"], 20 + 10 * i) for i, q in enumerate(p["questions"])
    ]
    ratings = dict(OutputRating.objects.filter(label=label).values_list("output_id", "score"))
    assert ratings == {oid: 1 + j % 5 for j, oid in enumerate(p["outputs"])}
    exposure = label.exposure
    assert exposure["measured"] is True
    assert [o["output"] for o in exposure["outputs"]] == p["outputs"]
    assert all(o["seen"] for o in exposure["outputs"])
    assert all(o["visible_ms"] > 0 for o in exposure["outputs"])


def test_the_spa_page_works_on_a_phone_sized_screen(live_server, chromium, screenshots):
    context = chromium.new_context(
        viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    page = context.new_page()
    try:
        study, user = ready(
            live_server, page, "spa", tap=True, spa_exposure_m=2, spa_collect_likert=True
        )
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390
        page.screenshot(path=str(screenshots / "spa-phone.png"), full_page=True, caret="initial")
    finally:
        context.close()


def test_a_double_clicked_submit_stores_one_label(live_server, page):
    study, user = ready(live_server, page, "categorical", n_prompts=3)
    first = current_token(page)
    page.keyboard.press("s")
    page.dblclick("button.wb-submit")
    page.wait_for_function(
        "t => document.getElementById('task-form').dataset.assignment !== t", arg=first
    )
    assert Label.objects.filter(annotator=user).count() == 1
    # Past the page's own guard: three posts of one form still store one label (at once on
    # PostgreSQL; one after another on SQLite, whose in-memory test database cannot take
    # parallel writers).
    page.keyboard.press("u")
    statuses = page.evaluate(
        """async (parallel) => {
          const form = document.getElementById('task-form');
          const body = new URLSearchParams(new FormData(form));
          const send = () => fetch(form.action, {method: 'POST', body,
            headers: {'X-CSRFToken': form.querySelector('[name=csrfmiddlewaretoken]').value,
                      'HX-Request': 'true'}}).then(r => r.status);
          if (parallel) return Promise.all([send(), send(), send()]);
          return [await send(), await send(), await send()];
        }""",
        connection.vendor == "postgresql",
    )
    assert statuses == [200, 200, 200]
    assert Label.objects.filter(annotator=user).count() == 2


def test_session_expiry_mid_task_keeps_the_answer(live_server, page):
    study, user = ready(live_server, page, "categorical", n_prompts=3)
    token = current_token(page)
    key = page.input_value("input[name=_key]")
    page.keyboard.press("u")
    Session.objects.all().delete()  # the session ends while the task is open
    page.keyboard.press("Enter")
    alert = page.wait_for_selector("#wb-alert:not([hidden])")
    assert "session has expired" in alert.text_content()
    assert "/accounts/login/" not in page.url  # no login page swapped in, no navigation
    assert Label.objects.count() == 0
    page.keyboard.press("Enter")  # the "Sign in again" link has focus
    page.wait_for_url(re.compile(r".*/accounts/login/.*"))
    sign_in_with_keyboard(page, live_server.url, user)
    page.wait_for_selector("#task-form")
    assert current_token(page) == token
    assert page.is_checked("input[name=choice][value=unsafe]")
    assert page.input_value("input[name=_key]") == key
    assert "restored" in page.text_content("#wb-status")
    page.focus("#task-title")
    submit_with_enter(page)
    label = Label.objects.get()
    assert (label.choice, str(label.idempotency_key)) == ("unsafe", key)


def test_a_csrf_failure_after_signing_in_elsewhere_is_recoverable(live_server, page, context):
    study, user = ready(live_server, page, "categorical", n_prompts=3)
    page.keyboard.press("s")
    other = context.new_page()
    other.goto(live_server.url + reverse("home"))
    with other.expect_navigation():  # signed out for sure before signing in again
        other.click("button:has-text('Sign out')")
    sign_in_with_keyboard(other, live_server.url, user, next_path="/")
    other.wait_for_selector("text=Your studies")  # and signed in again, with a new CSRF secret
    other.close()
    page.keyboard.press("Enter")
    alert = page.wait_for_selector("#wb-alert:not([hidden])")
    assert "session changed" in alert.text_content() and "answer is kept" in alert.text_content()
    assert Label.objects.count() == 0
    page.keyboard.press("Enter")  # "Reload" has focus
    page.wait_for_selector("#wb-status .wb-notice")
    assert page.is_checked("input[name=choice][value=safe]")
    page.focus("#task-title")
    submit_with_enter(page)
    assert Label.objects.get().choice == "safe"


def test_the_progress_bar_counts_gold_like_any_task(live_server, page):
    study = blind_study("categorical", n_prompts=8, gold_rate=0.6)
    for unit in Unit.objects.filter(study=study)[:6]:
        setup.mark_gold(unit, "safe")
    user = enrol(study).user
    sign_in_with_keyboard(page, live_server.url, user)
    open_study(page, live_server.url, study)
    totals = set()
    for n in range(1, 11):  # gold is drawn at random: 10 tasks all but guarantee some
        page.keyboard.press("s")
        submit_with_enter(page)
        assert page.get_attribute("#wb-progress-bar", "value") == str(n)
        text = page.text_content("#wb-progress .wb-progress-text")
        assert text.startswith(f"{n} of ")
        totals.add(text.split()[2])
    purposes = list(Label.objects.filter(annotator=user).values_list("purpose", flat=True))
    assert len(purposes) == 10 and "gold" in purposes
    assert len(totals) == 1, totals  # one planned total, whatever was on screen


def test_a_draft_is_restored_after_closing_the_tab(live_server, page, context):
    study, user = ready(live_server, page, "likert", n_prompts=2)
    token = current_token(page)
    page.keyboard.press("2")
    page.close()
    again = context.new_page()
    again.goto(live_server.url + reverse("work-task", args=[study.token]))
    assert current_token(again) == token
    assert again.is_checked("input[name=score][value='2']")


def test_the_back_button_never_stores_a_second_label(live_server, page):
    study, user = ready(live_server, page, "categorical", n_prompts=3)
    page.keyboard.press("s")
    submit_with_enter(page)
    page.go_back()
    page.wait_for_selector("#task-form")
    page.keyboard.press("u")
    submit_with_enter(page)
    labels = Label.objects.filter(annotator=user)
    assert labels.count() == 2
    assert labels.values("assignment").distinct().count() == 2


def test_the_guide_opens_with_g_and_closes_with_escape(live_server, page):
    from annotation.models import GuideVersion

    study = blind_study("categorical")
    GuideVersion.objects.create(study=study, number=1, body="Unsafe means harmful advice.")
    user = enrol(study).user
    sign_in_with_keyboard(page, live_server.url, user)
    open_study(page, live_server.url, study)
    page.keyboard.press("g")
    page.wait_for_selector("#wb-guide >> text=harmful advice")
    page.keyboard.press("Escape")
    assert not page.is_visible("#wb-guide")


def test_skipping_a_task_with_a_reason(live_server, page, screenshots):
    study, user = ready(live_server, page, "categorical", n_prompts=3)
    token = current_token(page)
    page.click(".wb-skip summary")
    page.check("input[name=_skip_reason][value=cannot_judge]")
    page.screenshot(path=str(screenshots / "skip.png"), full_page=True)
    page.click(".wb-skip-button")
    page.wait_for_function(WAIT_SWAP, arg=token)
    skipped = Assignment.objects.get(token=token)
    assert (skipped.status, skipped.skip_reason) == ("abandoned", "cannot_judge")
    assert "Skipped" in page.text_content("#wb-status")
    assert Label.objects.count() == 0


def test_an_answer_refused_by_a_paused_study_stays_in_the_browser(live_server, page, screenshots):
    study, user = ready(live_server, page, "categorical", n_prompts=3)
    token = current_token(page)
    page.keyboard.press("u")
    study.status = "paused"
    study.save()
    page.keyboard.press("Enter")
    page.wait_for_selector("#wb-done-title")
    assert "paused" in page.text_content("#wb-done-title")
    assert "not saved" in page.text_content("#wb-status")
    page.screenshot(path=str(screenshots / "paused-answer-kept.png"), full_page=True)
    assert Label.objects.count() == 0
    draft = page.evaluate("t => localStorage.getItem('concord.draft.' + t)", token)
    assert draft and '"choice":"unsafe"' in draft
    study.status = "live"
    study.save()
    page.goto(live_server.url + reverse("work-task", args=[study.token]))
    assert current_token(page) == token
    assert page.is_checked("input[name=choice][value=unsafe]")  # restored from the draft
    page.focus("#task-title")
    submit_with_enter(page)
    assert Label.objects.get().choice == "unsafe"
