"""The page a person sees when sign-in is paused after too many failures (defect 9)."""

import pytest

from tests.factories import UserFactory

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.flaky(reruns=2, reruns_delay=1),
]


def test_after_too_many_wrong_passwords_the_page_says_when_to_try_again(
    live_server, page, screenshots, settings
):
    settings.AXES_FAILURE_LIMIT = 3
    user = UserFactory()
    for _ in range(3):
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("#id_username", user.username)
        page.fill("#id_password", "not-the-password")
        with page.expect_navigation():
            page.press("#id_password", "Enter")
    assert "Too many failed sign-in attempts" in page.inner_text("main")
    assert "Try again in 15 minutes" in page.inner_text("main")
    page.screenshot(path=str(screenshots / "login-paused.png"), full_page=True)
