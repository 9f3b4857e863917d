"""The work API's lean request path (annotation/lean.py) answers exactly as Django's full handler
would, header by header, and hands Django everything it does not serve itself.

The application under test is the one gunicorn serves (`concord.wsgi`'s shape: LeanWorkPath
around Django's WSGIHandler), called the way a WSGI server calls it. Each test knows which path
answered: `served` counts the requests Django's handler answered.
"""

import io
import json
import uuid
from datetime import timedelta

import pytest
from django.contrib.sessions.models import Session
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest
from django.db import close_old_connections, connection
from django.test import Client
from django.test.utils import override_settings
from django.utils import timezone

from annotation import api
from annotation.lean import LeanWorkPath
from annotation.models import Assignment, Label
from annotation.services import setup
from tests.factories import enrol, make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def postgres():
    if connection.vendor != "postgresql":
        pytest.skip("the lean path serves from PostgreSQL's hot statements only")


class Server:
    """Both applications, called as a WSGI server calls them; `django_served` lists the paths
    that Django's full handler answered."""

    def __init__(self):
        self.django = WSGIHandler()
        self.django_served = []
        answer = self.django.get_response

        def counted(request):
            self.django_served.append(request.path)
            return answer(request)

        self.django.get_response = counted
        self.lean = LeanWorkPath(self.django)

    def call(self, app, environ):
        got = {}

        def start_response(status, headers, exc_info=None):
            got["status"], got["headers"] = status, headers

        # As Django's test client does: the test's transaction is not a stale connection.
        signals.request_started.disconnect(close_old_connections)
        signals.request_finished.disconnect(close_old_connections)
        try:
            response = app(environ, start_response)
            body = b"".join(response)
            response.close()
        finally:
            signals.request_started.connect(close_old_connections)
            signals.request_finished.connect(close_old_connections)
        return int(got["status"].split()[0]), got["headers"], body


class Annotator:
    """A signed-in annotator's browser: the session and CSRF cookies of a real sign-in."""

    def __init__(self, server, study, enrolment=None):
        self.server, self.study = server, study
        self.enrolment = enrolment or enrol(study)
        client = Client()
        client.force_login(self.enrolment.user)
        self.session = client.cookies["sessionid"].value
        self.csrf = "A" * 32
        self.base = f"/api/work/{study.token}"

    def environ(self, method, path, body=b"", **extra):
        environ = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "SCRIPT_NAME": "",
            "QUERY_STRING": "",
            "SERVER_NAME": "testserver",
            "SERVER_PORT": "80",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "HTTP_HOST": "testserver",
            "HTTP_COOKIE": f"sessionid={self.session}; csrftoken={self.csrf}",
            "REMOTE_ADDR": "127.0.0.1",
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.input": io.BytesIO(body),
            "wsgi.url_scheme": "http",
            "wsgi.errors": io.StringIO(),
        }
        environ.update(extra)
        return environ

    def next(self, app="lean", **extra):
        return self.server.call(
            getattr(self.server, app), self.environ("GET", f"{self.base}/next", **extra)
        )

    def submit(self, token, answer=None, app="lean", key=None, csrf=True, **extra):
        body = json.dumps(answer or {"choice": "safe", "timings": {"duration_ms": 1500}})
        headers = {
            "CONTENT_TYPE": "application/json",
            "HTTP_IDEMPOTENCY_KEY": key or str(uuid.uuid4()),
            **({"HTTP_X_CSRFTOKEN": self.csrf} if csrf else {}),
            **extra,
        }
        environ = self.environ("POST", f"{self.base}/submit/{token}", body.encode(), **headers)
        return self.server.call(getattr(self.server, app), environ)


def headers_of(headers, *, without=("Content-Length",)):
    return sorted((name, value) for name, value in headers if name not in without)


def test_the_lean_path_serves_next_and_submit_after_the_first_request(postgres):
    server, study = Server(), make_study(n_prompts=4)
    annotator = Annotator(server, study)
    status, _, body = annotator.next()
    assert status == 200 and server.django_served == [f"{annotator.base}/next"]  # reads the session
    token = json.loads(body)["token"]
    status, _, body = annotator.submit(token)
    assert (status, json.loads(body)["status"]) == (200, "stored")
    status, _, body = annotator.next()
    assert status == 200 and json.loads(body)["token"] not in (None, token)
    assert server.django_served == [f"{annotator.base}/next"]  # the last two were lean
    label = Label.objects.get(assignment__token=token)
    assert label.annotator_id == annotator.enrolment.user_id
    assert (label.choice, label.duration_ms) == ("safe", 1500)


def test_lean_answers_carry_the_headers_django_gives_them(postgres):
    server, study = Server(), make_study(n_prompts=6)
    first, second = Annotator(server, study), Annotator(server, study)
    first.next(), second.next()  # both sessions read
    server.django_served.clear()
    lean = first.next()
    django = second.next(app="django")
    assert server.django_served == [f"{second.base}/next"]
    assert lean[0] == django[0] == 200
    assert headers_of(lean[1]) == headers_of(django[1])
    assert dict(lean[1])["Content-Length"] == str(len(lean[2]))
    assert json.loads(lean[2]).keys() == json.loads(django[2]).keys()

    token_a, token_b = json.loads(lean[2])["token"], json.loads(django[2])["token"]
    lean, django = first.submit(token_a), second.submit(token_b, app="django")
    assert (lean[0], lean[2]) == (django[0], django[2]) == (200, lean[2])
    assert headers_of(lean[1]) == headers_of(django[1])
    assert server.django_served == [f"{second.base}/next", f"{second.base}/submit/{token_b}"]


@override_settings(SECURE_HSTS_SECONDS=3600, SECURE_SSL_REDIRECT=True)
def test_over_https_the_lean_answers_carry_strict_transport_security_too(postgres):
    server, study = Server(), make_study(n_prompts=4)
    first, second = Annotator(server, study), Annotator(server, study)
    https = {"wsgi.url_scheme": "https", "SERVER_PORT": "443"}
    first.next(**https), second.next(**https)
    server.django_served.clear()
    lean, django = first.next(**https), second.next(app="django", **https)
    assert len(server.django_served) == 1
    assert dict(lean[1])["Strict-Transport-Security"] == "max-age=3600"
    assert headers_of(lean[1]) == headers_of(django[1])

    status, headers, _ = first.next()  # plain HTTP: Django redirects
    assert status == 301 and dict(headers)["Location"].startswith("https://testserver/")
    assert len(server.django_served) == 2


def test_a_submit_without_its_csrf_token_is_refused_by_django_and_nothing_is_stored(postgres):
    server, study = Server(), make_study(n_prompts=4)
    annotator = Annotator(server, study)
    token = json.loads(annotator.next()[2])["token"]
    status, _, body = annotator.submit(token, csrf=False)
    assert status == 403 and b"CSRF" in body
    status, _, _ = annotator.submit(token, HTTP_X_CSRFTOKEN="B" * 32)
    assert status == 403
    assert server.django_served[-2:] == [f"{annotator.base}/submit/{token}"] * 2
    assert not Label.objects.exists()
    assert Assignment.objects.get(token=token).status == Assignment.Status.LEASED


def test_a_submit_from_another_origin_is_refused(postgres):
    server, study = Server(), make_study(n_prompts=4)
    annotator = Annotator(server, study)
    token = json.loads(annotator.next()[2])["token"]
    status, _, _ = annotator.submit(token, HTTP_ORIGIN="https://evil.example")
    assert status == 403
    assert not Label.objects.exists()


def test_a_host_not_allowed_is_answered_400_by_django(postgres):
    server, study = Server(), make_study(n_prompts=4)
    annotator = Annotator(server, study)
    annotator.next()
    status, _, _ = annotator.next(HTTP_HOST="evil.example")
    assert status == 400
    assert server.django_served[-1] == f"{annotator.base}/next"


def test_signed_out_not_enrolled_and_unknown_studies_are_answered_by_django(postgres):
    server, study, other = Server(), make_study(n_prompts=4), make_study(n_prompts=4)
    annotator = Annotator(server, study)
    annotator.next()
    outsider = Annotator(server, other)
    outsider.session, outsider.base = (
        annotator.session,
        annotator.base.replace(study.token, other.token),
    )
    status, _, _ = outsider.next()
    assert status == 404  # signed in, but not enrolled in `other`
    Session.objects.filter(session_key=annotator.session).delete()
    status, _, body = annotator.next()
    assert (status, json.loads(body)) == (401, {"error": "authentication required"})
    assert server.django_served[-1] == f"{annotator.base}/next"


def test_an_expired_session_row_is_not_served_lean(postgres):
    server, study = Server(), make_study(n_prompts=4)
    annotator = Annotator(server, study)
    annotator.next()
    Session.objects.filter(session_key=annotator.session).update(
        expire_date=timezone.now() - timedelta(seconds=1)
    )
    status, _, _ = annotator.next()
    assert status == 401


def test_a_body_the_lean_path_read_is_read_again_by_django(postgres, monkeypatch):
    server, study = Server(), make_study(n_prompts=4)
    annotator = Annotator(server, study)
    token = json.loads(annotator.next()[2])["token"]
    monkeypatch.setattr(api, "_fast_submit", lambda *args: None)  # unsure: Django decides
    status, _, body = annotator.submit(
        token, {"choice": "unsafe", "timings": {"duration_ms": 2500}}
    )
    assert (status, json.loads(body)["status"]) == (200, "stored")
    assert server.django_served[-1] == f"{annotator.base}/submit/{token}"
    label = Label.objects.get(assignment__token=token)
    assert (label.choice, label.duration_ms) == ("unsafe", 2500)


def test_an_invalid_body_is_refused_on_its_field_as_django_refuses_it(postgres):
    server, study = Server(), make_study(n_prompts=4)
    annotator = Annotator(server, study)
    token = json.loads(annotator.next()[2])["token"]
    status, _, body = annotator.submit(token, {"choice": "not-in-the-scheme"})
    assert status == 400 and json.loads(body)["field"] == "choice"
    status, _, body = annotator.submit(token, {"choice": "safe", "timings": [1500]})
    assert status == 400 and json.loads(body)["field"] == "timings"
    assert not Label.objects.exists()


def test_a_repeated_key_is_a_duplicate_on_the_lean_path(postgres):
    server, study = Server(), make_study(n_prompts=4)
    annotator = Annotator(server, study)
    token = json.loads(annotator.next()[2])["token"]
    key = str(uuid.uuid4())
    first = annotator.submit(token, key=key)
    again = annotator.submit(token, key=key)
    assert json.loads(first[2])["status"] == "stored"
    assert (again[0], json.loads(again[2])["status"]) == (200, "duplicate")
    assert Label.objects.filter(assignment__token=token).count() == 1


def test_other_paths_and_methods_go_to_django():
    server, study = Server(), make_study(n_prompts=4)
    annotator = Annotator(server, study)
    posted = annotator.environ("POST", f"{annotator.base}/next", HTTP_X_CSRFTOKEN=annotator.csrf)
    status, headers, _ = annotator.server.call(server.lean, posted)
    assert status == 405 and dict(headers)["Allow"] == "GET"
    status, _, _ = annotator.server.call(server.lean, annotator.environ("GET", "/healthz"))
    assert status == 200
    status, _, _ = annotator.server.call(
        server.lean, annotator.environ("GET", f"{annotator.base}/next/")
    )
    assert status == 404
    assert len(server.django_served) == 3


def test_on_any_database_the_wrapped_application_answers_as_django():
    """On SQLite the hot statements do not run: every request goes to Django, unchanged."""
    server, study = Server(), make_study(n_prompts=4)
    annotator = Annotator(server, study)
    for _ in range(3):
        status, _, body = annotator.next()
        token = json.loads(body)["token"]
        assert status == 200 and token
        status, _, body = annotator.submit(token)
        assert (status, json.loads(body)["status"]) == (200, "stored")
    assert Label.objects.filter(annotator=annotator.enrolment.user).count() == 3


def test_gold_repeats_and_attention_checks_are_served_by_the_same_path_with_the_same_headers(
    postgres,
):
    """A script that reads every header and who answered (a fallback to Django would show in
    timing) learns nothing of the task's purpose: every task after the first request is lean."""
    study = make_study(
        n_prompts=30,
        overlap=1,
        gold_rate=0.2,
        repeat_rate=0.2,
        attention_rate=0.1,
        repeat_min_gap_units=2,
        repeat_min_gap_minutes=0,
    )
    units = list(study.units.order_by("id"))
    for unit in units[:4]:
        setup.mark_gold(unit, {"choice": "safe"})
    setup.mark_gold(units[4], {"choice": "safe"}, role="attention")
    server = Server()
    annotator = Annotator(server, study)
    seen = {}
    for _ in range(40):
        status, headers, body = annotator.next()
        token = json.loads(body)["token"]
        if token is None:
            break
        purpose = Assignment.objects.get(token=token).purpose
        seen.setdefault(purpose, set()).add(tuple(sorted(name for name, _ in headers)))
        status, headers, _ = annotator.submit(token)
        seen.setdefault(f"submit of {purpose}", set()).add(tuple(sorted(n for n, _ in headers)))
    assert {"production", "gold", "repeat", "attention"} <= seen.keys()
    assert (
        len({names for key, group in seen.items() if "submit" not in key for names in group}) == 1
    )
    assert len({names for key, group in seen.items() if "submit" in key for names in group}) == 1
    assert server.django_served == [f"{annotator.base}/next"]


@pytest.mark.parametrize(
    "setting",
    [
        {"SESSION_SAVE_EVERY_REQUEST": True},
        {"CSRF_USE_SESSIONS": True},
        {"DISALLOWED_USER_AGENTS": [r"^nobody$"]},
    ],
)
def test_settings_that_need_the_whole_stack_send_every_request_to_django(postgres, setting):
    server, study = Server(), make_study(n_prompts=4)
    annotator = Annotator(server, study)
    token = json.loads(annotator.next()[2])["token"]
    with override_settings(**setting):
        annotator.next()
        annotator.submit(token)
    assert server.django_served == [
        f"{annotator.base}/next",
        f"{annotator.base}/next",
        f"{annotator.base}/submit/{token}",
    ]


def test_a_request_without_a_path_is_answered_by_django():
    server, study = Server(), make_study(n_prompts=2)
    annotator = Annotator(server, study)
    environ = annotator.environ("GET", "")
    del environ["PATH_INFO"]  # PEP 3333: may be absent for the application's root
    lean = server.call(server.lean, environ)
    del environ["PATH_INFO"]
    django = server.call(server.django, environ)
    assert lean[0] == django[0] and headers_of(lean[1]) == headers_of(django[1])
    assert server.django_served == ["/", "/"]


def test_the_request_signals_and_closers_run_as_under_django(postgres, monkeypatch):
    server, study = Server(), make_study(n_prompts=4)
    annotator = Annotator(server, study)
    annotator.next()
    sent, closed = [], []

    def started(sender, environ, **kwargs):
        sent.append(("started", sender, environ["PATH_INFO"]))

    def finished(sender, **kwargs):
        sent.append(("finished", sender))

    original_close = WSGIRequest.close
    monkeypatch.setattr(WSGIRequest, "close", lambda r: (closed.append(r.path), original_close(r)))
    signals.request_started.connect(started)
    signals.request_finished.connect(finished)
    try:
        annotator.next()
    finally:
        signals.request_started.disconnect(started)
        signals.request_finished.disconnect(finished)
    assert len(server.django_served) == 1  # the second was lean
    path = f"{annotator.base}/next"
    assert sent == [("started", WSGIHandler, path), ("finished", WSGIHandler)]
    assert closed == [path]


def test_refusals_are_logged_as_django_logs_them(postgres, caplog):
    server, study = Server(), make_study(n_prompts=4)
    annotator = Annotator(server, study)
    token = json.loads(annotator.next()[2])["token"]
    logged = {}
    for app in ("lean", "django"):
        caplog.clear()
        with caplog.at_level("WARNING", logger="django.request"):
            status, _, _ = annotator.submit(token, {"choice": "not-in-the-scheme"}, app=app)
        assert status == 400
        logged[app] = [
            (r.levelname, r.getMessage(), r.status_code, r.request.path) for r in caplog.records
        ]
    path = f"{annotator.base}/submit/{token}"
    assert logged["lean"] == logged["django"] == [("WARNING", f"Bad Request: {path}", 400, path)]
    assert server.django_served == [f"{annotator.base}/next", path]  # the second refusal


def test_an_error_inside_the_lean_path_is_the_500_django_gives(postgres, monkeypatch, caplog):
    server, study = Server(), make_study(n_prompts=4)
    first, second = Annotator(server, study), Annotator(server, study)
    first.next(), second.next()

    def broken(request, token):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(api, "_fast_next", broken)
    answers = {}
    for app, annotator in (("lean", first), ("django", second)):
        caplog.clear()
        with caplog.at_level("ERROR", logger="django.request"):
            answers[app] = annotator.next(app=app)
        record = caplog.records[-1]
        assert record.getMessage() == f"Internal Server Error: {annotator.base}/next"
        assert record.exc_info[0] is RuntimeError and record.request.path.endswith("/next")
    assert answers["lean"][0] == answers["django"][0] == 500
    assert answers["lean"][2] == answers["django"][2]
    assert headers_of(answers["lean"][1]) == headers_of(answers["django"][1])


def test_a_malformed_csrf_cookie_is_refused_by_django(postgres):
    server, study = Server(), make_study(n_prompts=4)
    annotator = Annotator(server, study)
    token = json.loads(annotator.next()[2])["token"]
    annotator.csrf = "not-a-token!"  # cookie and header alike
    status, _, body = annotator.submit(token)
    assert status == 403 and b"CSRF" in body
    assert server.django_served[-1] == f"{annotator.base}/submit/{token}"
    assert not Label.objects.exists()


def test_a_cookie_set_on_an_answer_reaches_the_browser_as_under_django(postgres, monkeypatch):
    """No work answer sets a cookie today; one that did must not be lost on the lean path."""
    server, study = Server(), make_study(n_prompts=4)
    first, second = Annotator(server, study), Annotator(server, study)
    first.next(), second.next()
    answer = api.next_response

    def with_cookie(*args):
        response = answer(*args)
        response.set_cookie("seen", "1", max_age=60, samesite="Lax")
        return response

    monkeypatch.setattr(api, "next_response", with_cookie)
    lean, django = first.next(), second.next(app="django")
    assert len(server.django_served) == 3  # the first next of each, and the Django call
    cookies = {
        app: [(name, value) for name, value in headers if name.lower() == "set-cookie"]
        for app, (_, headers, _) in (("lean", lean), ("django", django))
    }
    assert len(cookies["lean"]) == 1 and cookies["lean"][0][1].startswith(" seen=1;")
    assert [(n, v.split("expires=")[0]) for n, v in cookies["lean"]] == [
        (n, v.split("expires=")[0]) for n, v in cookies["django"]
    ]
    assert headers_of(lean[1], without=("Content-Length", "Set-Cookie")) == headers_of(
        django[1], without=("Content-Length", "Set-Cookie")
    )
