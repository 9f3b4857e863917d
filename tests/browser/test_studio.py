"""The lead's path in Chromium, for every task kind: create, set up, import, invite, launch; then
the invited annotator labels a task. Screenshots of every lead page go to test-output/."""

import pytest
from django.urls import reverse

from annotation.models import GuideVersion, Label, Membership, Study
from annotation.services import setup
from tests.browser.workbench import sign_in_with_keyboard, submit_with_enter
from tests.factories import MembershipFactory

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.flaky(reruns=2, reruns_delay=1),
]
NEW_PASSWORD = "invited-annotator-passphrase-1"
SYSTEMS = ("alpha", "beta")


def import_content(study: Study) -> None:
    """The content step (issue 12's import pages are a sibling's): prompts and outputs in, units
    built, through the same services the import publishes with."""
    setup.add_content(
        study,
        (
            {
                "prompt_id": f"p{i}",
                "prompt": f"Question {i}: how do plants drink?",
                "system": system,
                "output": f"Answer {s} to question {i}: through their roots, mostly.",
            }
            for i in range(3)
            for s, system in enumerate(SYSTEMS)
        ),
    )


def answer(page, kind: str) -> None:
    if kind == "likert":
        page.keyboard.press("4")
    elif kind == "continuous":
        page.keyboard.type("70")
    elif kind == "categorical":
        page.keyboard.press("y")  # the default scheme's keys: y(es) / n(o)
    elif kind == "ordinal":
        page.keyboard.press("m")  # l(ow) / m(edium) / h(igh)
    elif kind == "pairwise":
        page.keyboard.press("ArrowLeft")
    else:  # spa: one probability per question (Likert on the SPA page is off here)
        for i in range(page.locator("input.wb-number").count()):
            page.locator("input.wb-number").nth(i).fill(str(40 + i))
        page.locator("input.wb-number").last.focus()


def shot(page, screenshots, name: str) -> None:
    page.screenshot(path=str(screenshots / f"studio-{name}.png"), full_page=True)


@pytest.mark.parametrize("kind", [k.value for k in Study.TaskKind])
def test_a_lead_builds_invites_launches_and_an_annotator_labels(
    live_server, page, context, screenshots, kind
):
    base = live_server.url
    lead = MembershipFactory(role=Membership.Role.LEAD).user
    sign_in_with_keyboard(page, base, lead)

    # Create: name and kind only.
    page.click("text=New study")
    page.fill("#id_name", f"Browser {kind} study")
    page.check(f"input[name=task_kind][value={kind}]")
    if kind == "likert":
        shot(page, screenshots, "new-study")
    page.click("button:has-text('Create draft')")
    page.wait_for_selector("h2:has-text('Design')")
    study = Study.objects.get(name=f"Browser {kind} study")
    assert study.status == "draft" and study.task_kind == kind

    # Settings: only this kind's, the scheme as fields; an error first, then a good save.
    assert page.locator("[name=spa_exposure_m]").count() == (1 if kind == "spa" else 0)
    page.fill("#id_overlap", "0")
    page.click("button:has-text('Save settings')")
    page.wait_for_selector("text=Nothing was saved")
    assert page.locator("#id_overlap ~ .error, .has-error .error").count() >= 1
    page.fill("#id_overlap", "1")
    if kind == "likert":
        page.fill("[name=points-0-text]", "Awful")
    if kind == "spa":
        page.fill("#id_spa_exposure_m", "2")
    page.click("button:has-text('Save settings')")
    page.wait_for_selector("text=Settings saved.")
    shot(page, screenshots, f"settings-{kind}")
    study.refresh_from_db()
    assert study.overlap == 1

    # Content in; SPA and pairwise comparisons chosen on the settings page; units built.
    import_content(study)
    if kind in ("spa", "pairwise"):
        page.reload()
        if kind == "spa":
            page.select_option("[name=comparisons-0-system_x]", "alpha")
            page.select_option("[name=comparisons-0-system_y]", "beta")
            page.select_option("[name=comparisons-0-expected]", "x")
            page.click("button:has-text('Save settings')")
            page.wait_for_selector("text=Settings saved.")
            assert study.comparisons.count() == 1
        else:
            setup.add_comparisons(study, [("alpha", "beta", "")])
    setup.build_units(study)

    # Launch refused first, each failed item explained.
    page.click("nav.study-nav >> text=Launch")
    assert page.locator("li.failed[data-check=annotators]").is_visible()
    assert page.locator("li.failed[data-check=guide]").is_visible()
    if kind == "likert":
        shot(page, screenshots, "launch-blocked")

    # Invite one person; the link is shown once, ready to copy.
    page.click("nav.study-nav >> text=People")
    page.click("button:has-text('Make invite link')")
    link = page.input_value("#new-link")
    assert "/invite/" in link
    if kind == "likert":
        shot(page, screenshots, "people")
    GuideVersion.objects.create(study=study, number=1, body="Read carefully.", author=lead)

    page.click("nav.study-nav >> text=Launch")
    page.wait_for_selector("li.failed[data-check=annotators]")
    invited = context.browser.new_context(viewport={"width": 900, "height": 800})
    try:
        other = invited.new_page()
        other.goto(link)
        if kind == "likert":
            other.screenshot(path=str(screenshots / "studio-invite.png"), full_page=True)
        other.fill("#id_password", NEW_PASSWORD)
        other.fill("#id_password_again", NEW_PASSWORD)
        other.click("button:has-text('Create my account')")
        other.wait_for_selector("text=Your sign-in name is rater-")

        # Now the checklist passes and the lead goes live.
        page.reload()
        assert page.locator("li.failed").count() == 0
        page.click("button:has-text('Go live')")
        page.wait_for_selector("text=The study is now live.")
        if kind == "likert":
            shot(page, screenshots, "launch-live")
        study.refresh_from_db()
        assert study.status == "live"

        # The annotator's home shows the study with a Start link; one task, by keyboard.
        other.reload()
        if kind == "likert":
            other.screenshot(path=str(screenshots / "studio-annotator-home.png"), full_page=True)
        with other.expect_navigation():
            other.click(f"a[href='{reverse('work-start', args=[study.token])}']")
        with other.expect_navigation():
            other.keyboard.press("Enter")
        other.wait_for_selector("#task-form")
        answer(other, kind)
        submit_with_enter(other)
        label = Label.objects.get(study=study)
        assert label.annotator.username.startswith("rater-")
    finally:
        invited.close()

    # The overview counts it.
    page.click("nav.study-nav >> text=Overview")
    assert page.locator("[data-count=labels_needed]").inner_text() == str(
        study.units.filter(role="production").count() - 1
    )
    if kind == "likert":
        shot(page, screenshots, "overview")


def test_the_workspace_page_lists_studies_and_offers_new_study(live_server, page, screenshots):
    lead = MembershipFactory(role=Membership.Role.LEAD).user
    sign_in_with_keyboard(page, live_server.url, lead)
    page.goto(
        live_server.url + reverse("studio-workspace", args=[lead.memberships.get().workspace.slug])
    )
    assert page.locator("a.button:has-text('New study')").is_visible()
    shot(page, screenshots, "workspace")
