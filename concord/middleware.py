"""Cross-cutting HTTP behaviour: the Content-Security-Policy header, loud session expiry, and
the client's address as the login throttle sees it.

An htmx request from a signed-out browser must never get a login page swapped in as if it were
the answer: it gets 401 with an `HX-Redirect` to the login page instead.
"""

from urllib.parse import quote

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import resolve_url


class ContentSecurityPolicyMiddleware:
    """Add an enforcing CSP to every response (no inline scripts or styles anywhere)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        return response


class HtmxLoginRequiredMiddleware:
    """Turn the login redirect of an htmx request into 401 + HX-Redirect."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.status_code != 302 or not getattr(request, "htmx", False):
            return response  # only a redirect can be the login page's (saves a reverse())
        login_url = resolve_url(settings.LOGIN_URL)
        if response.get("Location", "").startswith(login_url):
            current = request.htmx.current_url_abs_path or request.get_full_path()
            expired = HttpResponse(
                "Your session has expired. Sign in again; your answer is kept in this browser.",
                status=401,
                content_type="text/plain",
            )
            expired["HX-Redirect"] = f"{login_url}?next={quote(current)}"
            return expired
        return response


class HealthCheckMiddleware:
    """Answer /healthz before host validation and the HTTPS redirect, for container probes.

    It checks that the database answers; it reveals nothing else.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path != "/healthz":
            return self.get_response(request)
        from django.db import connection

        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
        except Exception:
            return HttpResponse("database unavailable", status=503, content_type="text/plain")
        return HttpResponse("ok", content_type="text/plain")


def client_ip(request) -> str | None:
    """The client's address for per-address login limits. Behind our TLS proxy REMOTE_ADDR is
    the proxy (every client would share one limit), so the address is read from X-Forwarded-For,
    counting CONCORD_TRUSTED_PROXY_COUNT entries from the right (the ones our proxies appended;
    anything further left is what the client claimed and is not trusted)."""
    if getattr(settings, "BEHIND_TLS_PROXY", False):
        hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        hops = [h for h in hops if h]
        count = max(1, int(getattr(settings, "CONCORD_TRUSTED_PROXY_COUNT", 1)))
        if len(hops) >= count:
            return hops[-count]
    return request.META.get("REMOTE_ADDR")


def lockout_parameters(request_or_attempt, credentials=None) -> list[str]:
    """What django-axes counts failures by: per address and, separately, per account name; a
    wrong API token (no account name) per address only, so one address guessing tokens pauses
    itself and nobody else (all token failures share the empty account name)."""
    if credentials and credentials.get("api_token"):
        return ["ip_address"]
    return ["ip_address", "username"]
