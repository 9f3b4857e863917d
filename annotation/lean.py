"""The work API's lean request path: `next` and `submit` of /api/work/ served without Django's
middleware chain and URL resolver when the request needs nothing but the hot path.

Django's request cycle (twelve middleware, the resolver, the handler's bookkeeping) costs about
a third of the web side's CPU per label in the work loop (bench/handler.py, issue 16). This WSGI
wrapper around Django's application answers the common case itself, with Django's own pieces for
every rule that still applies:

- the request and its response are Django's (`WSGIRequest`, `JsonResponse`), and the request
  signals are sent as Django's handler sends them (connections are checked and closed the same way);
- the host is validated (`ALLOWED_HOSTS`), and CSRF on `submit` is checked by Django's
  `CsrfViewMiddleware` itself;
- the response gets the headers the middleware would give it: the security headers, the
  Content-Security-Policy, `X-Frame-Options`, `Vary: Cookie` and `Content-Length`.

Everything else goes to Django's full handler, which answers as it always has: any other path or
method, a session this process has not yet read through Django (the first request of a sign-in),
a host not allowed, plain HTTP where HTTPS is required, a CSRF token missing or wrong, a body that
is not a JSON object, settings that need the session on every request (`SESSION_SAVE_EVERY_REQUEST`,
`CSRF_USE_SESSIONS`) or a user-agent check, and any request the hot statements are unsure
of (signed out, not enrolled, another backend, not PostgreSQL). So an answer never depends on which
path served it (tests/engine/test_lean_path.py compares the two, header by header).
"""

import functools
import io
import re

from django.conf import settings
from django.core import signals
from django.core.exceptions import DisallowedHost, RequestDataTooBig
from django.core.handlers.exception import response_for_exception
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.csrf import CsrfViewMiddleware
from django.middleware.security import SecurityMiddleware
from django.utils.cache import patch_vary_headers
from django.utils.log import log_response

from annotation import api
from annotation.schemes import AnswerError

# The two routes of annotation/urls.py that the lean path serves (`<str:...>` is `[^/]+`).
_PREFIX = "/api/work/"
_NEXT = re.compile(r"/api/work/(?P<token>[^/]+)/next\Z")
_SUBMIT = re.compile(r"/api/work/(?P<token>[^/]+)/submit/(?P<assignment_token>[^/]+)\Z")


class _Unserved(Exception):
    """The lean path does not answer this request: Django's full handler does."""


def _no_view(request):  # the middleware below are used for their hooks only
    raise AssertionError("not called")


class LeanWorkPath:
    """WSGI application: the work API's common requests served lean, the rest by `django_app`."""

    def __init__(self, django_app: WSGIHandler):
        self.django_app = django_app
        self.security = SecurityMiddleware(_no_view)
        self.csrf = CsrfViewMiddleware(_no_view)
        self.frame = XFrameOptionsMiddleware(_no_view)

    def __call__(self, environ, start_response):
        if not environ.get("PATH_INFO", "").startswith(_PREFIX):
            return self.django_app(environ, start_response)
        signals.request_started.send(sender=WSGIHandler, environ=environ)
        request = WSGIRequest(environ)
        try:
            response = self.serve(request)
        except _Unserved:
            if request.method == "POST" and hasattr(request, "_body"):
                environ["wsgi.input"] = io.BytesIO(request._body)  # read here: read it again
            return self.django_app(environ, start_response)
        response._resource_closers.append(request.close)
        response._handler_class = WSGIHandler
        if response.status_code >= 400:
            log_response(
                "%s: %s", response.reason_phrase, request.path, response=response, request=request
            )
        start_response(
            f"{response.status_code} {response.reason_phrase}",
            [
                *response.items(),
                *(("Set-Cookie", c.output(header="")) for c in response.cookies.values()),
            ],
        )
        return response  # its close() sends request_finished, as Django's handler's does

    def serve(self, request):
        """The response to a lean request; raises _Unserved when Django must answer."""
        path = request.path_info
        if request.method == "GET" and (match := _NEXT.match(path)):
            answer = functools.partial(self.next, request, match["token"])
        elif request.method == "POST" and (match := _SUBMIT.match(path)):
            answer = functools.partial(
                self.submit, request, match["token"], match["assignment_token"]
            )
        else:
            raise _Unserved
        if (
            settings.SESSION_SAVE_EVERY_REQUEST
            or settings.CSRF_USE_SESSIONS  # the CSRF check would read the session
            or settings.DISALLOWED_USER_AGENTS
        ):
            raise _Unserved
        if api.known_sign_in(request) is None:
            raise _Unserved  # the first request of a session reads it through Django
        try:
            request.get_host()
        except DisallowedHost:
            raise _Unserved from None
        if self.security.process_request(request) is not None:
            raise _Unserved  # the HTTPS redirect
        try:
            response = answer()
            patch_vary_headers(response, ("Cookie",))  # api._per_session
        except _Unserved:
            raise
        except Exception as exc:  # noqa: BLE001 - answered as Django's handler answers it
            response = response_for_exception(request, exc)
        return self.finish(request, response)

    def next(self, request, token: str):
        found = api._fast_next(request, token)
        if found is None:
            raise _Unserved
        return api.next_response(*found)

    def submit(self, request, token: str, assignment_token: str):
        try:
            request.body  # noqa: B018 - read now, so that Django can read it again
        except RequestDataTooBig:
            raise _Unserved from None
        self.csrf.process_request(request)
        # Refused: Django refuses it again, with its failure view. (A malformed cookie is replaced
        # by a new secret, which no posted token matches: it is refused here too, so no accepted
        # request has a cookie to set.)
        if self.csrf.process_view(request, api.submit, (token, assignment_token), {}) is not None:
            raise _Unserved
        try:
            data, timings, key = api._answer(request)
        except AnswerError:
            raise _Unserved from None  # who is asking is settled before the body
        try:
            result = api._fast_submit(request, token, assignment_token, data, key, timings)
        except AnswerError as err:
            return api.invalid_response(err)
        if result is None:
            raise _Unserved
        return api.submit_response(result)

    def finish(self, request, response):
        """The headers the middleware stack would add, innermost first."""
        response = self.frame.process_response(request, response)
        response.headers["Content-Length"] = str(len(response.content))  # CommonMiddleware's
        response.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        return self.security.process_response(request, response)
