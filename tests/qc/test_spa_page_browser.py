"""The SPA page as the paper's story study shapes it (5 prompts x 5 writers, Likert on, both
directions): grouped, folding sections, a live progress count, the questions in reach at 1280 px
and on a phone, the keyboard path end to end, and the exposure record kept. Screenshots go to
test-output/screenshots/spa-redesign-*.png."""

import re
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from annotation.models import Assignment, Label, OutputRating, SpaAnswer
from annotation.services import setup
from tests.browser.workbench import open_study, sign_in_with_keyboard, submit_with_enter
from tests.factories import StudyFactory, enrol

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.flaky(reruns=2, reruns_delay=1),
]


@pytest.fixture
def screenshots():
    folder = Path(django_settings.BASE_DIR) / "test-output" / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


WRITERS = ("ada", "babbage", "curie", "davinci", "human")
QUESTION = "What is the percent chance that Writer {x} is a better writer than Writer {y}?"


def story_study():
    study = StudyFactory(
        task_kind="spa",
        question=QUESTION,
        spa_exposure_m=5,
        spa_collect_likert=True,
        spa_both_directions=True,
        overlap=5,
    )
    setup.add_content(
        study,
        (
            {
                "prompt_id": f"wp-{i}",
                "prompt": f"Writing prompt {i}: a lighthouse, a letter, a stranger.",
                "system": w,
                "output": f"Story {s} for prompt {i}. "
                + "It went on, sentence after sentence. " * 6,
            }
            for i in range(5)
            for s, w in enumerate(WRITERS)
        ),
    )
    setup.add_comparisons(study, [(WRITERS[i], WRITERS[i + 1], "") for i in range(4)])
    setup.add_comparisons(study, [("ada", "human", "y")])
    setup.build_units(study)
    return study


def progress(page) -> str:
    return " ".join(page.text_content("[data-spa-progress] p").split())


def in_viewport(page, selector) -> bool:
    return page.evaluate(
        """sel => { const r = document.querySelector(sel).getBoundingClientRect();
        return r.top >= 0 && r.bottom <= window.innerHeight && r.height > 0; }""",
        selector,
    )


def run_keyboard_path(page, user, screenshots, name):
    a = Assignment.objects.get(annotator=user, status="leased")
    p = a.presentation
    n_out, n_q = len(p["outputs"]), len(p["questions"])
    assert (n_out, n_q) == (25, 10)
    html = page.content()
    assert not re.search(r"\{\s*[a-zA-Z_]+\s*\}", page.text_content("body"))
    assert "Writer {x}" not in html
    assert progress(page) == f"0 of {n_out} stories rated · 0 of {n_q} questions answered"
    page.screenshot(path=str(screenshots / f"spa-redesign-{name}-start.png"), caret="initial")
    # every story seen (the exposure record), then the keyboard path from the heading
    for j in range(n_out):
        page.locator(f'[data-exposure="{j}"]').scroll_into_view_if_needed()
        page.wait_for_timeout(40)
    page.focus("#task-title")
    for j in range(n_out):
        page.keyboard.press("Tab")
        page.keyboard.press(str(1 + j % 5))
        if j == 12:
            assert progress(page).startswith(f"13 of {n_out} stories rated")
            # the questions are in reach mid-way through the stories
            if name == "1280":
                assert in_viewport(page, "#p_0")
            else:
                assert in_viewport(page, ".wb-spa-jump")
    # the groups rated so far have folded away behind the reader
    assert page.locator(".wb-spa-prompt.is-collapsed").count() >= 4
    for i in range(n_q):
        page.keyboard.press("Tab")
        page.keyboard.type(str(20 + 5 * i))
    assert progress(page) == f"{n_out} of {n_out} stories rated · {n_q} of {n_q} questions answered"
    page.screenshot(path=str(screenshots / f"spa-redesign-{name}-answered.png"), caret="initial")
    page.screenshot(
        path=str(screenshots / f"spa-redesign-{name}-full.png"), full_page=True, caret="initial"
    )
    submit_with_enter(page)
    label = Label.objects.get(annotator=user)
    answers = SpaAnswer.objects.filter(label=label).order_by("position")
    assert [s.probability for s in answers] == [20 + 5 * i for i in range(n_q)]
    ratings = dict(OutputRating.objects.filter(label=label).values_list("output_id", "score"))
    assert ratings == {oid: 1 + j % 5 for j, oid in enumerate(p["outputs"])}
    exposure = label.exposure
    assert exposure["measured"] is True
    assert [o["output"] for o in exposure["outputs"]] == p["outputs"]
    assert all(o["seen"] and o["visible_ms"] > 0 for o in exposure["outputs"])


def test_the_spa_page_at_1280_pixels_by_keyboard(live_server, chromium, screenshots):
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(20_000)
    page = context.new_page()
    console = []
    page.on("console", lambda m: console.append(m.text) if m.type in ("error", "warning") else None)
    try:
        study = story_study()
        user = enrol(study).user
        sign_in_with_keyboard(page, live_server.url, user)
        open_study(page, live_server.url, study)
        # the questions sit in a side panel beside the stories
        panel = page.locator(".wb-spa-panel").bounding_box()
        stories = page.locator(".wb-spa-stories").bounding_box()
        assert panel["x"] >= stories["x"] + stories["width"]
        assert in_viewport(page, "#p_0")
        run_keyboard_path(page, user, screenshots, "1280")
    finally:
        context.close()
    assert not [c for c in console if "status of 40" not in c], console


def test_the_spa_page_on_a_phone_by_keyboard(live_server, chromium, screenshots):
    context = chromium.new_context(
        viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    context.set_default_timeout(20_000)
    page = context.new_page()
    try:
        study = story_study()
        user = enrol(study).user
        sign_in_with_keyboard(page, live_server.url, user)
        open_study(page, live_server.url, study, tap=True)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        # one column; the questions come last, and the jump to them stays on screen
        assert in_viewport(page, ".wb-spa-jump")
        page.tap(".wb-spa-jump")
        page.wait_for_timeout(200)
        assert in_viewport(page, "#wb-questions-title")
        page.screenshot(path=str(screenshots / "spa-redesign-phone-questions.png"), caret="initial")
        page.evaluate("window.scrollTo(0, 0)")
        run_keyboard_path(page, user, screenshots, "phone")
    finally:
        context.close()
