"""Browser fixtures: Debian's Chromium driven by Playwright against pytest-django's live server.

Playwright's sync API runs an event loop in this thread, which Django would otherwise take for
async code; the ORM calls made by the tests themselves are synchronous, hence the switch below.
"""

import os
from pathlib import Path

import pytest
from django.conf import settings

from tests.conftest import CHROMIUM

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

SCREENSHOTS = Path(settings.BASE_DIR) / "test-output" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
PASSWORD = "pw-for-tests-1"  # tests.factories.UserFactory's


@pytest.fixture(scope="session")
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def context(chromium):
    context = chromium.new_context(viewport={"width": 1100, "height": 900})
    context.set_default_timeout(10_000)
    try:
        yield context
    finally:
        context.close()


@pytest.fixture
def page(context):
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on(
        "console",
        lambda msg: (
            errors.append(msg.text)
            if msg.type == "error" and "status of 40" not in msg.text
            else None
        ),
    )
    page.js_errors = errors
    yield page
    assert not [e for e in errors if "Content Security Policy" in e or "Refused" in e], errors


@pytest.fixture(scope="session")
def screenshots():
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS
