"""A crowd study link opened while signed in asks before switching accounts (defect 11)."""

import pytest
from django.urls import reverse

from annotation.models import Enrolment, Membership
from tests.browser.workbench import sign_in_with_keyboard
from tests.factories import MembershipFactory, make_study

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.flaky(reruns=2, reruns_delay=1),
]

PROLIFIC = "PROLIFIC_PID=5f1a2b3c4d5e6f7a8b9c0d1e&STUDY_ID=abc&SESSION_ID=s1"


def test_a_signed_in_lead_is_asked_before_a_crowd_link_switches_accounts(
    live_server, page, screenshots
):
    study = make_study(n_prompts=2, crowd_platform="prolific")
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    sign_in_with_keyboard(page, live_server.url, lead)
    link = f"{live_server.url}{reverse('crowd-entry', args=[study.token])}?{PROLIFIC}"
    page.goto(link)
    page.wait_for_selector("form.switch-account")
    assert f"signed in as {lead.username}" in page.inner_text("main")
    page.screenshot(path=str(screenshots / "crowd-switch-ask.png"), full_page=True)
    assert not Enrolment.objects.filter(study=study).exists()  # nothing happened yet
    # Staying keeps the lead's session.
    with page.expect_navigation():
        page.click(f"text=Stay signed in as {lead.username}")
    assert page.inner_text(".who") == lead.username
    # Continuing (the page's own form, with its CSRF token) switches to the participant.
    page.goto(link)
    with page.expect_navigation():
        page.click("text=Continue as the study participant")
    page.wait_for_selector("#task-form, .wb-begin")
    assert page.inner_text(".who").startswith("crowd-prolific-")
    assert Enrolment.objects.filter(study=study).count() == 1
