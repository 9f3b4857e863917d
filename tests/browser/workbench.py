"""Steps the browser tests share: signing in and working through tasks with the keyboard."""

from django.urls import reverse

from tests.browser.conftest import PASSWORD

WAIT_SWAP = """token => {
  const form = document.getElementById('task-form');
  return !form || form.getAttribute('data-assignment') !== token;
}"""


def sign_in_with_keyboard(page, base_url: str, user, next_path: str = ""):
    """The login page, typed: username (autofocused), Tab, password, Enter."""
    url = f"{base_url}/accounts/login/" + (f"?next={next_path}" if next_path else "")
    if next_path or not page.url.startswith(f"{base_url}/accounts/login/"):
        page.goto(url)
    page.wait_for_selector("#id_username:focus")  # autofocus has landed before we type
    page.keyboard.type(user.username)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    with page.expect_navigation():
        page.keyboard.press("Enter")


def open_study(page, base_url: str, study, tap: bool = False):
    """The instructions, then Start with Enter (the button has focus), or a tap on a phone."""
    page.goto(base_url + reverse("work-start", args=[study.token]))
    with page.expect_navigation():
        if tap:
            page.tap(".wb-begin")
        else:
            page.keyboard.press("Enter")
    page.wait_for_selector("#task-form")
    return current_token(page)


def current_token(page) -> str:
    return page.get_attribute("#task-form", "data-assignment")


def submit_with_enter(page):
    """Enter, then wait until the next task (or the end) has been swapped in."""
    token = current_token(page)
    page.keyboard.press("Enter")
    page.wait_for_function(WAIT_SWAP, arg=token)
