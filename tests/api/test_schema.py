"""The OpenAPI schema and its docs page: served, valid, complete, and readable in Chromium
under the enforcing CSP; the account page too."""

from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from drf_spectacular.validation import validate_schema

from tests.factories import UserFactory

SHOTS = Path(django_settings.BASE_DIR) / "test-output" / "screenshots"


def api_routes() -> set[str]:
    """Every /api/v1/ route in the URL conf, written as the schema writes paths."""
    found = set()

    def walk(patterns, prefix):
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                route = prefix + str(p.pattern)
                if route.startswith("api/v1/"):
                    found.add(
                        "/"
                        + route.replace("<str:", "{")
                        .replace("<int:", "{")
                        .replace("<slug:", "{")
                        .replace(">", "}")
                    )

    walk(get_resolver().url_patterns, "")
    return found


@pytest.mark.django_db
def test_schema_is_valid_openapi_3_and_lists_every_api_route(client):
    response = client.get(reverse("api-schema"), {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    validate_schema(schema)
    assert set(schema["paths"]) == api_routes()
    assert "bearerToken" in schema["components"]["securitySchemes"]
    for path, operations in schema["paths"].items():
        for method, op in operations.items():
            assert {"401", "404"} <= set(op["responses"]), (method, path)
            assert op.get("security"), f"{method} {path} would be open to anonymous callers"


@pytest.mark.django_db
def test_docs_page_lists_every_operation(client):
    page = client.get(reverse("api-docs"))
    assert page.status_code == 200
    html = page.content.decode()
    schema = client.get(reverse("api-schema"), {"format": "json"}).json()
    for path, operations in schema["paths"].items():
        assert f"<code>{path}</code>" in html
        for op in operations.values():
            assert f'id="{op["operationId"]}"' in html
    assert "<script" not in html.split("</main>")[0].split("<main")[1]


def _open(chromium, live_server, path, cookie=None, name="page.png", full_page=True):
    context = chromium.new_context(viewport={"width": 1200, "height": 900})
    try:
        if cookie:
            context.add_cookies(
                [
                    {
                        "name": django_settings.SESSION_COOKIE_NAME,
                        "value": cookie,
                        "url": live_server.url,
                    }
                ]
            )
        page = context.new_page()
        problems = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(live_server.url + path)
        SHOTS.mkdir(parents=True, exist_ok=True)
        return context, page, problems
    except Exception:
        context.close()
        raise


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.flaky(reruns=2, reruns_delay=1)
def test_account_page_creates_shows_once_and_revokes_in_chromium(live_server, client, chromium):
    user = UserFactory(username="dana")
    client.force_login(user)
    cookie = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    context, page, problems = _open(chromium, live_server, reverse("account-tokens"), cookie)
    try:
        page.fill("#token-name", "nightly import script")
        page.click("button.primary")
        secret = page.locator("#new-token").inner_text().strip()
        assert secret.startswith("concord_")
        page.fill("#token-name", "notebook on my laptop")
        page.click("button.primary")
        page.screenshot(path=str(SHOTS / "account-tokens.png"), full_page=True)
        rows = page.locator("tbody tr")
        assert rows.count() == 2
        page.click("button[aria-label='Revoke nightly import script']")
        page.wait_for_selector("tr.revoked")
        assert secret not in page.content()
        page.screenshot(path=str(SHOTS / "account-tokens-revoked.png"), full_page=True)
        assert problems == []
    finally:
        context.close()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.flaky(reruns=2, reruns_delay=1)
def test_docs_page_renders_under_the_csp_in_chromium(live_server, chromium):
    context, page, problems = _open(chromium, live_server, reverse("api-docs"))
    try:
        assert page.locator("article.api-op").count() >= 25
        page.screenshot(path=str(SHOTS / "api-docs.png"), full_page=False)
        assert problems == []
    finally:
        context.close()
