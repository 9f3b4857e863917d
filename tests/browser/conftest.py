"""Browser fixtures for the workbench: a fresh context and page per test on the shared Chromium
(`chromium` in tests/conftest.py), and the screenshot folder.
"""

from pathlib import Path

import pytest
from django.conf import settings

SCREENSHOTS = Path(settings.BASE_DIR) / "test-output" / "screenshots"
PASSWORD = "pw-for-tests-1"  # tests.factories.UserFactory's


@pytest.fixture
def context(chromium):
    context = chromium.new_context(viewport={"width": 1100, "height": 900})
    context.set_default_timeout(20_000)  # a busy 2-core CI machine
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
