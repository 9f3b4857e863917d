"""The lead's path in Chromium, for every task kind, through the pages: create the study in the
builder, upload the sample files on the import page, read the build preview and build, publish a
guide, invite, launch; then the invited annotator labels a task and the lead's overview counts it.
Screenshots of the lead's pages go to test-output/screenshots/studio-*.png."""

from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from annotation.models import ImportJob, Label, Membership, Study
from tests.browser.workbench import sign_in_with_keyboard, submit_with_enter
from tests.factories import MembershipFactory

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.flaky(reruns=2, reruns_delay=1),
]
NEW_PASSWORD = "invited-annotator-passphrase-1"
SAMPLES = Path(settings.BASE_DIR) / "samples"
# samples/: 3 systems, 12 prompts, 36 outputs, 3 comparisons (atlas-beacon, cedar-beacon,
# atlas-cedar). Units: one per output; pairwise one per prompt and comparison; SPA (a fixed
# sample, the default) one batch of m = 2 prompts showing all three compared systems.
UNITS = {"pairwise": 36, "spa": 1}
FILES = ["systems", "prompts", "outputs"]


@pytest.fixture
def tasks_in_process(monkeypatch):
    """The upload's import task runs inside the request (the worker path has its own browser
    test in test_imports.py), so the job page shows the published result straight away."""
    from concord.celery import app

    monkeypatch.setitem(app.conf, "task_always_eager", True)


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


def upload(page, kind: str) -> None:
    """One sample file through the import page's form; the job page then says it is published."""
    page.click("nav.study-nav >> text=Import")
    page.select_option("#id_kind", kind)
    page.set_input_files("#id_file", str(SAMPLES / f"{kind}.csv"))
    with page.expect_navigation():
        page.click("#upload-form button[type=submit]")
    page.wait_for_selector('[data-status="done"]')
    assert page.inner_text('[data-fact="created"]') != "0"


@pytest.mark.usefixtures("tasks_in_process")
@pytest.mark.parametrize("kind", [k.value for k in Study.TaskKind])
def test_a_lead_builds_imports_previews_invites_launches_and_an_annotator_labels(
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

    # Settings: only this kind's, the scheme as fields; (once) an error first, then a good save.
    assert page.locator("[name=spa_exposure_m]").count() == (1 if kind == "spa" else 0)
    if kind == "likert":
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

    # Content: the sample files, uploaded on the import page one after the other.
    for name in FILES + (["comparisons"] if kind in ("pairwise", "spa") else []):
        upload(page, name)
        if kind == "likert" and name == "outputs":
            shot(page, screenshots, "import-published")
    assert [j.status for j in ImportJob.objects.filter(study=study)] == ["done"] * len(
        ImportJob.objects.filter(study=study)
    )

    # The preview before the build: units, labels needed (units x overlap), gold, the time.
    page.click("nav.study-nav >> text=Import")
    units = UNITS.get(kind, 36)
    assert page.inner_text('[data-fact="new-units"]').startswith(str(units))
    assert page.inner_text('[data-fact="labels-needed"]').startswith(str(units))
    assert "0 gold units" in page.inner_text('[data-fact="gold"]')
    assert f"{units} task" in page.inner_text('[data-fact="hours"]')
    if kind in ("likert", "pairwise", "spa"):
        shot(page, screenshots, f"import-preview-{kind}")
    with page.expect_navigation():
        page.click("#build-units")
    assert f"{units} units built" in page.inner_text(".messages")
    assert study.units.filter(role="production").count() == units
    assert page.locator("#build-units").count() == 0  # nothing left to build

    # Launch refused first, each failed item explained.
    page.click("nav.study-nav >> text=Launch")
    assert page.locator("li.ok[data-check=units]").is_visible()
    assert page.locator("li.failed[data-check=annotators]").is_visible()
    assert page.locator("li.failed[data-check=guide]").is_visible()
    if kind == "likert":
        shot(page, screenshots, "launch-blocked")

    # A guide, published on the guide page.
    page.goto(base + reverse("guide-edit", args=[study.token]))
    page.fill("#id_body", "Read the prompt, then the answer; judge the answer alone.")
    with page.expect_navigation():
        page.click("button:has-text('Publish')")
    assert study.guide_versions.count() == 1

    # Invite one person; the link is shown once, ready to copy.
    page.goto(base + reverse("studio-people", args=[study.token]))
    page.click("button:has-text('Make invite link')")
    link = page.input_value("#new-link")
    assert "/invite/" in link
    if kind == "likert":
        shot(page, screenshots, "people")

    page.click("nav.study-nav >> text=Launch")
    page.wait_for_selector("li.failed[data-check=annotators]")
    assert page.locator("li.ok[data-check=guide]").is_visible()
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
    assert page.locator("[data-count=labels_needed]").inner_text() == str(units - 1)
    if kind == "likert":
        shot(page, screenshots, "overview")
        # With a first time per task, the preview turns the tasks left into annotator-hours.
        page.click("nav.study-nav >> text=Import")
        assert "hours for" in page.inner_text('[data-fact="hours"]')


def test_the_workspace_page_lists_studies_and_offers_new_study(live_server, page, screenshots):
    lead = MembershipFactory(role=Membership.Role.LEAD).user
    sign_in_with_keyboard(page, live_server.url, lead)
    page.goto(
        live_server.url + reverse("studio-workspace", args=[lead.memberships.get().workspace.slug])
    )
    assert page.locator("a.button:has-text('New study')").is_visible()
    shot(page, screenshots, "workspace")
