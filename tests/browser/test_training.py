"""Issue 13's acceptance walk in Chromium: a lead builds a qualification test from proposed
boundary items; an annotator fails once, re-reads the guide, passes and reaches production; the
lead runs a calibration session with three raters, records two rulings and publishes a version
that requires recalibration; the annotator is gated until the recalibration batch is done.
Also: hostile guide Markdown stays inert in the browser under the CSP. Every page is saved as a
screenshot under test-output/screenshots/training-*.png."""

import re

import pytest
from django.urls import reverse

from annotation.models import (
    Assignment,
    CalibrationSession,
    Enrolment,
    GoldAnswer,
    GuideVersion,
    Label,
    Membership,
    QualificationItem,
    Ruling,
    TrainingBatch,
)
from annotation.services import calibration, guides, setup
from annotation.services.training_items import resolve_items
from tests.browser.conftest import PASSWORD
from tests.browser.workbench import WAIT_SWAP, current_token
from tests.factories import MembershipFactory, enrol, make_study
from tests.training.helpers import answer_batch, labelled_study, unit_of

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.flaky(reruns=0, reruns_delay=1),
]

KEYS = {"p0": "unsafe", "p1": "unsafe", "p2": "safe"}  # the expert keys of the test


def sign_in(page, base_url, user):
    page.goto(f"{base_url}/accounts/login/", timeout=60_000)  # a first request on a busy machine
    page.wait_for_selector("#id_username:focus")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.click("button[type=submit]")


def shot(page, screenshots, name):
    page.screenshot(path=str(screenshots / f"training-{name}.png"), full_page=True)


def prompt_on_screen(page) -> str:
    text = page.text_content("#task-form")
    return "p" + re.search(r"Output of alpha for prompt (\d+)", text).group(1)


def answer_batch_in_browser(page, choose, n: int, screenshots=None, name=""):
    """Answer n tasks with the keyboard (s / u, Enter); the last submit leaves the task page."""
    for i in range(n):
        page.wait_for_selector("#task-form")
        choice = choose(prompt_on_screen(page))
        page.keyboard.press("s" if choice == "safe" else "u")
        if screenshots is not None and i == 0:
            shot(page, screenshots, name)
        if i < n - 1:
            token = current_token(page)
            page.keyboard.press("Enter")
            page.wait_for_function(WAIT_SWAP, arg=token)
        else:
            with page.expect_navigation():
                page.keyboard.press("Enter")


def new_page(chromium):
    context = chromium.new_context(viewport={"width": 1100, "height": 900})
    context.set_default_timeout(20_000)
    page = context.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.errors = errors
    return context, page


def test_acceptance_qualify_calibrate_recalibrate(live_server, page, chromium, screenshots):
    base = live_server.url
    study, producers = labelled_study(n_prompts=5, raters=3, disputed=("p0", "p1"), overlap=4)
    for e in producers:  # the pilot raters count as qualified
        Enrolment.objects.filter(pk=e.pk).update(qualified_at=e.created_at)
    gold = unit_of(study, "p4")
    setup.mark_gold(gold, {"choice": "safe"})
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    sign_in(page, base, lead)

    # The lead writes the guide with a ruling that cites p0 and the gold item p4.
    page.goto(base + reverse("guide-edit", args=[study.token]))
    page.fill("#id_body", "# Food safety\n\nJudge only whether following the advice is **safe**.")
    page.fill("#id_changes", "First version")
    page.fill("#id_r1-title", "Reheating does not make counter-stored rice Safe")
    page.fill("#id_r1-text", "Rice left out can carry toxins that heat does not destroy.")
    page.fill("#id_r1-examples", "p0, p4")
    shot(page, screenshots, "lead-guide-editor")
    with page.expect_navigation():
        page.click("button:has-text('Publish')")
    assert GuideVersion.objects.get(study=study).number == 1
    shot(page, screenshots, "lead-guide-version-1")
    page.goto(base + reverse("guide-flags", args=[study.token]))
    page.wait_for_selector(".tr-flag")
    shot(page, screenshots, "lead-flagged-gold")
    with page.expect_navigation():
        page.click(".tr-flag button.primary")  # confirm the gold answer
    assert GoldAnswer.objects.get(unit=gold).flagged_by_ruling is None

    # The lead builds the test from the proposed boundary items, plus one easy item.
    builder = base + reverse("qualification-builder", args=[study.token])
    page.goto(builder)
    assert page.locator("#boundary .tr-candidate").count() == 2
    shot(page, screenshots, "lead-qualification-builder-proposals")
    for pid in ("p0", "p1"):
        unit = unit_of(study, pid)
        page.select_option(f"#b-{unit.pk}", KEYS[pid])
        with page.expect_navigation():
            page.click(f"#b-{unit.pk} ~ button")
    unit = unit_of(study, "p2")
    page.select_option(f"#e-{unit.pk}", "safe")
    with page.expect_navigation():
        page.click(f"#e-{unit.pk} ~ button")
    page.check("#id_requires_qualification")
    page.fill("#id_pass_score", "1")
    page.fill("#id_attempts", "2")
    page.check("#id_retry_after_guide")
    with page.expect_navigation():
        page.click("button:has-text('Save the rules')")
    study.refresh_from_db()
    assert study.requires_qualification and QualificationItem.objects.count() == 3
    shot(page, screenshots, "lead-qualification-builder")

    # The annotator fails once, re-reads the guide, passes on the retry and reaches production.
    context2, annotator_page = new_page(chromium)
    candidate = enrol(study)
    sign_in(annotator_page, base, candidate.user)
    annotator_page.goto(base + reverse("work-task", args=[study.token]))
    annotator_page.wait_for_selector("text=Qualification needed")
    shot(annotator_page, screenshots, "annotator-gated-qualification")
    assert not Assignment.objects.filter(annotator=candidate.user).exists()
    with annotator_page.expect_navigation():
        annotator_page.click("a.wb-gate-action")
    shot(annotator_page, screenshots, "annotator-qualification-start")
    with annotator_page.expect_navigation():
        annotator_page.click("button.wb-begin")
    answer_batch_in_browser(
        annotator_page,
        lambda pid: "safe",
        3,
        screenshots=screenshots,
        name="annotator-qualification-task",
    )
    annotator_page.wait_for_selector("text=Not this time")
    assert annotator_page.locator(".tr-missed").count() == 2
    assert annotator_page.is_visible("text=Reheating does not make counter-stored rice Safe")
    shot(annotator_page, screenshots, "annotator-qualification-failed")
    with annotator_page.expect_navigation():
        annotator_page.click("a:has-text('Re-read the guide')")
    shot(annotator_page, screenshots, "annotator-guide-reread")
    with annotator_page.expect_navigation():
        annotator_page.click("a:has-text('Back to the test')")
    with annotator_page.expect_navigation():
        annotator_page.click("button:has-text('Try again')")
    answer_batch_in_browser(annotator_page, lambda pid: KEYS[pid], 3)
    annotator_page.wait_for_selector("text=You passed")
    shot(annotator_page, screenshots, "annotator-qualification-passed")
    with annotator_page.expect_navigation():
        annotator_page.click("a.wb-continue")
    annotator_page.wait_for_selector("#task-form")
    shot(annotator_page, screenshots, "annotator-production-after-qualifying")
    production = Assignment.objects.get(annotator=candidate.user, status="leased")
    assert production.purpose == "production"

    page.goto(base + reverse("qualification-results", args=[study.token]))
    rows = page.locator("tbody tr").all_text_contents()
    assert any(candidate.user.username in r and "0%" in r for r in rows)
    shot(page, screenshots, "lead-qualification-results")

    # The lead runs a calibration session with three raters on the disputed items.
    page.goto(base + reverse("calibration-sessions", args=[study.token]))
    page.fill("#id_title", "Rice and leftovers")
    for e in producers:
        page.check(f"input[name=raters][value='{e.user.pk}']")
    for box in page.locator("input[name=items]").all():
        box.check()
    page.fill("#id_more_items", "p3")
    shot(page, screenshots, "lead-calibration-new")
    with page.expect_navigation():
        page.click("button:has-text('Open the session')")
    session = CalibrationSession.objects.get()
    assert session.items.count() == 3

    context3, rater_page = new_page(chromium)
    first = producers[0]
    sign_in(rater_page, base, first.user)
    rater_page.goto(base + reverse("calibration-rater", args=[study.token, session.token]))
    shot(rater_page, screenshots, "rater-calibration-before")
    assert rater_page.locator(".tr-split").count() == 0
    with rater_page.expect_navigation():
        rater_page.click("button.wb-begin")
    answer_batch_in_browser(
        rater_page,
        lambda pid: "unsafe" if pid in ("p0", "p3") else "safe",
        3,
        screenshots=screenshots,
        name="rater-calibration-task",
    )
    for e, pick in zip(
        producers[1:], ({"p0": "safe"}, {"p0": "unsafe", "p1": "unsafe"}), strict=True
    ):
        batch = calibration.start_session_batch(session, e.user)
        answer_batch(batch, lambda unit, pick=pick: pick.get(unit.prompt.external_id, "safe"))
    rater_page.reload()
    rater_page.wait_for_selector("text=How the labels fell")
    body = rater_page.text_content("main")
    assert all(e.user.username not in body for e in producers)
    shot(rater_page, screenshots, "rater-calibration-distribution")

    page.goto(base + reverse("calibration-session", args=[study.token, session.token]))
    items = page.locator(".tr-session-item")
    for n, (title, text) in enumerate(
        [
            ("Reheating does not rescue rice left out overnight", "Unsafe, whatever the reheat."),
            ("Leftovers chilled within two hours are Safe", "The two-hour rule decides it."),
        ]
    ):
        items.nth(n).locator("summary").click()
        items.nth(n).locator("input[name=title]").fill(title)
        items.nth(n).locator("textarea[name=text]").fill(text)
        with page.expect_navigation():
            items.nth(n).locator("button").click()
        items = page.locator(".tr-session-item")
    assert Ruling.objects.filter(session=session, guide_version__isnull=True).count() == 2
    page.fill(
        "#id_body",
        page.input_value("#id_body") + "\n\nRice left out overnight is Unsafe, even reheated.",
    )
    page.fill("#id_changes", "Two rulings from the rice session")
    assert page.is_checked("#id_requires_recalibration")
    shot(page, screenshots, "lead-calibration-session")
    with page.expect_navigation():
        page.click("#publish button.primary")
    version = GuideVersion.objects.get(study=study, number=2)
    assert version.requires_recalibration and version.recalibration_units.count() == 2
    page.wait_for_selector(".tr-diff")
    assert page.locator(".tr-diff-added").count() == 2
    shot(page, screenshots, "lead-guide-version-2-diff")

    # The qualified annotator is gated until the recalibration batch is done.
    annotator_page.goto(base + reverse("work-task", args=[study.token]))
    annotator_page.wait_for_selector("text=The guide has changed")
    shot(annotator_page, screenshots, "annotator-gated-recalibration")
    before = Assignment.objects.filter(annotator=candidate.user, purpose="production").count()
    with annotator_page.expect_navigation():
        annotator_page.click("a.wb-gate-action")
    assert annotator_page.is_visible("text=Reheating does not rescue rice left out overnight")
    shot(annotator_page, screenshots, "annotator-recalibration-start")
    with annotator_page.expect_navigation():
        annotator_page.click("button.wb-begin")
    answer_batch_in_browser(annotator_page, lambda pid: KEYS.get(pid, "safe"), 2)
    annotator_page.wait_for_selector("text=you are up to date")
    shot(annotator_page, screenshots, "annotator-recalibration-done")
    after = Assignment.objects.filter(annotator=candidate.user, purpose="production").count()
    assert after == before  # no production work was handed out while gated
    with annotator_page.expect_navigation():
        annotator_page.click("a.wb-continue")
    annotator_page.wait_for_selector("#task-form")
    assert Enrolment.objects.get(pk=candidate.pk).calibrated_guide_version == version
    labels = Label.objects.filter(annotator=candidate.user)
    assert set(labels.values_list("purpose", flat=True)) == {"qualification", "calibration"}
    assert TrainingBatch.objects.filter(annotator=candidate.user).count() == 3
    for p in (annotator_page, rater_page):
        assert not [e for e in p.errors if "Content Security Policy" in e or "Refused" in e]
    context2.close()
    context3.close()


HOSTILE = """# Rules

<script>window.__pwned = 'script'</script>
<img src="x" onerror="window.__pwned = 'onerror'">
<a id="js" href="javascript:window.__pwned = 'link'">a javascript link</a>
<a id="hx" hx-get="/accounts/logout/" hx-trigger="load" href="/">an htmx link</a>
<div hx-post="/" hx-trigger="load">htmx div</div>
"""


def test_hostile_guide_markdown_is_inert_in_chromium(live_server, page, screenshots):
    study = make_study(n_prompts=2, systems=("alpha",))
    guides.publish_version(
        study,
        body=HOSTILE,
        rulings=[
            guides.NewRuling(
                "<script>alert(1)</script>",
                "<b onmouseover=x>t</b>",
                examples=tuple(resolve_items(study, "p0")),
            )
        ],
    )
    user = enrol(study).user
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    sign_in(page, live_server.url, user)
    page.goto(live_server.url + reverse("work-task", args=[study.token]))
    page.wait_for_selector("#task-form")
    page.keyboard.press("g")
    page.wait_for_selector("#wb-guide h1")
    page.wait_for_timeout(500)
    shot(page, screenshots, "annotator-guide-panel-hostile")
    assert page.locator("#wb-guide h1", has_text="Rules").count() == 1
    # What reached the DOM: no script elements, no event handler or htmx attribute (besides
    # the panel's own hx-disable), no javascript: URL; the ruling's markup shows as text.
    bad_attributes = page.evaluate(
        """() => [...document.querySelectorAll('#wb-guide *')].flatMap(el =>
             [...el.attributes].map(a => a.name + '=' + a.value)).filter(a =>
             a.startsWith('on') || (a.startsWith('hx-') && !a.startsWith('hx-disable'))
             || a.toLowerCase().includes('javascript:'))"""
    )
    assert bad_attributes == []
    assert page.locator("#wb-guide script, #wb-guide img, #wb-guide iframe").count() == 0
    assert page.locator("#wb-guide", has_text="<b onmouseover=x>t</b>").count() == 1
    assert page.evaluate("window.__pwned === undefined")
    assert dialogs == []
    assert page.url.endswith(reverse("work-task", args=[study.token]))
    # still signed in: the hx-get on load did not run
    assert page.is_visible("text=Sign out")
