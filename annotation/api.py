"""A lean JSON pair for the work loop: the next task, and the answer to it.

    GET  /api/work/<study token>/next
         -> 200 {"token", "position", "task", "blocked"}; token/position/task are null and
            "blocked" names the reason ("done", "quota", ...) when there is nothing to do
    POST /api/work/<study token>/submit/<assignment token>
         JSON object or form body with the fields of annotation.schemes, an `Idempotency-Key`
         header (a UUID made when the task was rendered; or an "idempotency_key" field), and
         optionally "timings": {"rendered_at", "duration_ms", "active_ms", "exposure"}
         -> 200 stored or duplicate, 409 reassigned, conflict (the key was used for another
            task: nothing stored, send again with a new key), paused or closed (the study takes
            no answers now: nothing stored), 404 not found, 400 invalid (with "field")

Blinding: the task carries texts (and SPA writer letters) only; every response has the same keys
whatever the unit's role, and the only identifier is the presentation's random token.
Authentication is the Django session; without one the answer is 401 JSON, never a login page.
On PostgreSQL the first statement of each request also reads the session's row (present,
unexpired, unchanged since this process decoded it), so a signed-in annotator's requests read no
session from the cache; anything unexpected goes through Django's own session and sign-in.
CSRF stays enforced on the POST (session cookies ride along on cross-site requests): clients
send the `csrftoken` cookie's value in an `X-CSRFToken` header, as the workbench's htmx does.
The hot path avoids serializers and model instances beyond the engine's own. Under gunicorn the
common requests skip Django's middleware chain too (annotation/lean.py), with the same answers.
"""

import functools
import json
from dataclasses import dataclass
from importlib import import_module
from types import ModuleType

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction
from django.http import Http404, JsonResponse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.utils.crypto import constant_time_compare
from django.views.decorators.http import require_GET, require_POST

from annotation.models import Study
from annotation.presentation import output_ids, task_view
from annotation.schemes import AnswerError
from annotation.services import assignment as engine
from annotation.services.submission import (
    ASSIGNMENT_COLUMNS,
    assignment_from_row,
    finish_prepared,
    prepare_label,
    store_loaded,
    store_prepared_params,
    store_prepared_sql,
    submit_label,
    submit_with,
)

SUBMIT_HTTP_STATUS = {
    "stored": 200,
    "duplicate": 200,
    "reassigned": 409,
    "conflict": 409,
    "paused": 409,
    "closed": 409,
    "not_found": 404,
}


# Access needs both the enrolment and a membership (any role) of the study's workspace; `{user}`
# is the user's id column or parameter.
_ACCESS_SQL = (
    "EXISTS (SELECT 1 FROM annotation_enrolment e WHERE e.study_id = s.id AND e.user_id = {user})"
    " AND EXISTS (SELECT 1 FROM annotation_membership m"
    " WHERE m.workspace_id = s.workspace_id AND m.user_id = {user})"
)
_STUDY_SQL = "SELECT s.* FROM annotation_study s WHERE s.token = %s AND " + _ACCESS_SQL.format(
    user="%s"
)


def annotator_study_or_404(user, token: str) -> Study:
    """The rule of selectors.annotator_study_or_404 (enrolled, and a workspace member), as one
    raw statement: on the hot path the ORM's query compilation costs more than the query."""
    found = list(Study.objects.raw(_STUDY_SQL, [token, user.id, user.id]))
    if not found:
        raise Http404("No such study.")
    return found[0]


MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"


def _row_reader(model, db):
    """(attribute names, converters, the primary key's place) to build `model` instances from
    raw rows of database `db` (a connection), as the ORM would."""
    key = (model, db.alias, db.vendor)
    if key not in _ROW_READERS:
        fields = model._meta.concrete_fields
        readers = []
        for field in fields:
            col = field.get_col(model._meta.db_table)
            convs = db.ops.get_db_converters(col) + col.get_db_converters(db)
            readers.append((field, convs))
        names = [f.attname for f in fields]
        _ROW_READERS[key] = (names, readers, names.index(model._meta.pk.attname))
    return _ROW_READERS[key]


_ROW_READERS: dict = {}

# (model, database, primary key) -> (the row's values, the instance made from them). The hot
# path only reads its user and study, and each request reads the same rows again: an unchanged
# row gives back the instance made before instead of a new one (building one, with its
# converters and init signals, costs more than its share of the statement; bench/handler.py).
_MADE: dict[tuple, tuple] = {}
_MADE_MAX = 10_000


def _instance(model, values):
    db = connections[DEFAULT_DB_ALIAS]  # once: each use of the `connection` proxy looks it up
    names, readers, pk_at = _row_reader(model, db)
    values = tuple(values)
    key = (model, db.alias, values[pk_at])
    made = _MADE.get(key)
    if made is not None and made[0] == values:
        return made[1]
    converted = []
    for value, (field, convs) in zip(values, readers, strict=True):
        for conv in convs:
            value = conv(value, field, db)
        converted.append(value)
    instance = model.from_db(db.alias, names, converted)
    if len(_MADE) >= _MADE_MAX:
        _MADE.clear()
    _MADE[key] = (values, instance)
    return instance


def _columns(model, alias: str) -> str:
    return ", ".join(f"{alias}.{f.column}" for f in model._meta.concrete_fields)


def _session_sign_in(request):
    """(user id, session hash) when the session is a plain ModelBackend sign-in; None when unsure
    (the caller then asks Django). Reads the session only, not the database."""
    if "_cached_user" in request.__dict__:
        return None
    return _sign_in_from(request.session)


def _sign_in_from(session):
    """(user id, session hash) of a session's data (a mapping) when it is a plain ModelBackend
    sign-in, else None."""
    try:
        raw_id, backend, session_hash = (
            session[SESSION_KEY],
            session[BACKEND_SESSION_KEY],
            session[HASH_SESSION_KEY],
        )
    except KeyError:
        return None
    if backend != MODEL_BACKEND or backend not in settings.AUTHENTICATION_BACKENDS:
        return None
    try:
        return get_user_model()._meta.pk.to_python(raw_id), session_hash
    except Exception:  # noqa: BLE001 - malformed: let Django decide
        return None


# Session stores that keep every session in the database: the hot statements read the session's
# row themselves (present, unexpired, and the text this process decoded), so a session read once
# is not read from the cache again on every request.
_DB_SESSION_ENGINES = frozenset(
    {
        "django.contrib.sessions.backends.db",
        "django.contrib.sessions.backends.cached_db",
        "concord.sessions",
    }
)


@dataclass(frozen=True)
class _SignIn:
    """A plain ModelBackend sign-in as its session holds it: `text` is the session row's data it
    was decoded from (None when it came through request.session, before any statement)."""

    key: str
    user_id: object
    session_hash: str
    text: str | None = None


# Session key -> the sign-in this process last decoded from that session's row.
_SIGN_INS: dict[str, _SignIn] = {}
_SIGN_INS_MAX = 10_000


def known_sign_in(request) -> _SignIn | None:
    """The sign-in this process last decoded from the request's session row, if any (the hot
    statements check that the row still holds it)."""
    if settings.SESSION_ENGINE not in _DB_SESSION_ENGINES:
        return None
    key = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    return _SIGN_INS.get(key) if key else None


def _hot_sign_in(request) -> _SignIn | None:
    """The sign-in for the hot statements, which check the session's row: from this process's
    memory when it decoded that session before, else from request.session. None when unsure."""
    known = known_sign_in(request)
    if known is not None:
        return known
    if settings.SESSION_ENGINE not in _DB_SESSION_ENGINES:
        return None
    key = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    if not key:
        return None
    signed = _session_sign_in(request)
    return None if signed is None else _SignIn(key, *signed)


def _session_rows() -> tuple[str, ModuleType]:
    """(the session table, the session store's module) of SESSION_ENGINE."""
    engine_module = import_module(settings.SESSION_ENGINE)
    return engine_module.SessionStore.get_model_class()._meta.db_table, engine_module


def _accepted_user(request, sign_in: _SignIn, text: str, user_values):
    """The user of the hot statement's row if the session row's `text` still holds `sign_in`
    and the user verifies for it (_verified_user); remembers the sign-in. None when unsure."""
    if text != sign_in.text:
        data = _session_rows()[1].SessionStore().decode(text)  # {} when tampered with
        decoded = _sign_in_from(data)
        if decoded is None or decoded[0] != sign_in.user_id:
            _SIGN_INS.pop(sign_in.key, None)
            return None
        sign_in = _SignIn(sign_in.key, decoded[0], decoded[1], text)
    user = _verified_user(request, user_values, sign_in.session_hash)
    if user is None:
        _SIGN_INS.pop(sign_in.key, None)
        return None
    if len(_SIGN_INS) >= _SIGN_INS_MAX:
        _SIGN_INS.clear()
    _SIGN_INS[sign_in.key] = sign_in
    return user


def _verified_user(request, values, session_hash):
    """The user from their columns if django.contrib.auth.get_user would accept them for this
    session (active, session hash equal), else None; sets request.user when accepted.

    The hash is an HMAC of the password column under SECRET_KEY. The instance is the same only
    while its row is (_instance), so it keeps the hash it accepted and the key then, and that
    hash is not worked out again for it while the key is still the key."""
    user = _instance(get_user_model(), values)
    accepted = getattr(user, _ACCEPTED, None)
    if (
        accepted is None
        or accepted[1] != settings.SECRET_KEY
        or not constant_time_compare(session_hash, accepted[0])
    ):
        if not getattr(user, "is_active", True) or not constant_time_compare(
            session_hash, user.get_session_auth_hash()
        ):
            return None
        setattr(user, _ACCEPTED, (session_hash, settings.SECRET_KEY))
    request.user = request._cached_user = user
    return user


# The attribute of a user instance holding (the session hash it accepted, the secret key then).
_ACCEPTED = "_concord_accepted_session_hash"


def _session_annotator_and_study(request, token: str):
    """(user, study) from one statement when the session is a plain ModelBackend sign-in whose
    hash verifies with the current key; None when unsure (the caller then asks Django).

    The user is accepted only as django.contrib.auth.get_user would accept them (same backend,
    active, session hash equal); anything else (no session, another backend, a rotated key, a
    deleted or deactivated user) goes the standard way, which also flushes bad sessions.
    """
    signed = _session_sign_in(request)
    if signed is None:
        return None
    user_id, session_hash = signed
    User = get_user_model()
    n_user = len(User._meta.concrete_fields)
    with connection.cursor() as cursor:
        row = engine._execute(cursor, _sign_in_sql(), [token, user_id]).fetchone()
    if row is None:
        return None
    user = _verified_user(request, row[:n_user], session_hash)
    if user is None:
        return None
    study = None if row[n_user] is None else _instance(Study, row[n_user:])
    return user, study


@functools.cache
def _sign_in_sql() -> str:
    User = get_user_model()
    return (
        f"SELECT {_columns(User, 'u')}, {_columns(Study, 's')} FROM {User._meta.db_table} u"
        " LEFT JOIN annotation_study s ON s.token = %s AND "
        + _ACCESS_SQL.format(user="u.id")
        + " WHERE u.id = %s"
    )


# The hot path on PostgreSQL: the session's row, the sign-in, the study (with the access rule)
# and the row the request locks come from the first statement of the request's one transaction.
# Parameters (`_hot_params`): the user id, the study token, [the assignment token,] the session
# key, now.
def _hot_from(tail: str) -> str:
    User = get_user_model()
    return (
        f" FROM {_session_rows()[0]} ds JOIN {User._meta.db_table} u ON u.id = %s"
        " JOIN annotation_study s ON s.token = %s"
        + tail
        + " WHERE ds.session_key = %s AND ds.expire_date > %s AND "
        + _ACCESS_SQL.format(user="u.id")
    )


@functools.cache
def _next_sql() -> str:
    return (
        f"SELECT ds.session_data, {_columns(get_user_model(), 'u')}, {_columns(Study, 's')},"
        f" {engine.ENROLMENT_COLUMNS}"
        + _hot_from(" JOIN annotation_enrolment e ON e.study_id = s.id AND e.user_id = u.id")
        + " FOR UPDATE OF e"
    )


@functools.cache
def _submit_sql() -> str:
    return (
        f"SELECT ds.session_data, {_columns(get_user_model(), 'u')}, {_columns(Study, 's')},"
        f" {ASSIGNMENT_COLUMNS}"
        + _hot_from(
            " JOIN annotation_assignment a ON a.token = %s AND a.annotator_id = u.id"
            " AND a.study_id = s.id"
        )
        + " FOR UPDATE OF a"
    )


def _hot_params(sign_in: _SignIn, token: str, *tokens: str, now=None) -> list:
    return [sign_in.user_id, token, *tokens, sign_in.key, now or timezone.now()]


@functools.cache
def _submit_store_sql() -> str:
    """`_submit_sql`, and the close and the label in the same statement when they can be
    (submission.store_prepared_sql)."""
    n_user = len(get_user_model()._meta.concrete_fields)
    study_fields = [f.attname for f in Study._meta.concrete_fields]
    n = 1 + n_user + len(study_fields) + len(ASSIGNMENT_COLUMNS.split(", "))
    columns = [f"c{i}" for i in range(n)]
    names = {name: columns[1 + n_user + study_fields.index(name)] for name in _STUDY_CHECKED}
    return store_prepared_sql(_submit_sql(), columns, names)


# The study's columns the one-statement store checks against the copy the label was cleaned with.
_STUDY_CHECKED = ("status", "task_kind", "label_scheme")

# Study token -> the study as this process last read it (the scheme a submit's answer is cleaned
# with before its statement; the statement checks that the study still has it).
_STUDIES: dict[str, Study] = {}
_STUDIES_MAX = 1000


def _remember(study: Study) -> None:
    if len(_STUDIES) >= _STUDIES_MAX:
        _STUDIES.clear()
    _STUDIES[study.token] = study


class _Unsure(Exception):
    """The one-statement submit cannot tell (the sign-in did not verify): roll it back."""


def _split(row):
    """A hot statement's row: the session's text, the user's, the study's and the rest's values."""
    n_user = len(get_user_model()._meta.concrete_fields)
    n_study = len(Study._meta.concrete_fields)
    return (
        row[0],
        row[1 : 1 + n_user],
        row[1 + n_user : 1 + n_user + n_study],
        row[1 + n_user + n_study :],
    )


def _fast_next(request, token: str):
    """(user, study, assignment or None) through one transaction whose first statement reads
    the session, the sign-in, the study and the locked enrolment; None when unsure (ask the
    standard way)."""
    if connection.vendor != "postgresql":
        return None
    sign_in = _hot_sign_in(request)
    if sign_in is None:
        return None

    def load(cursor):
        row = engine._execute(cursor, _next_sql(), _hot_params(sign_in, token)).fetchone()
        if row is None:
            return None  # signed out, not enrolled, no such study: the standard way says which
        text, user_values, study_values, enrolment = _split(row)
        user = _accepted_user(request, sign_in, text, user_values)
        if user is None:
            return None
        study = _instance(Study, study_values)
        _remember(study)
        return user, study, engine.enrolment_from_row(study, enrolment)

    return engine.claim_next(load)


def _fast_submit(request, token: str, assignment_token: str, data, key, timings):
    """The submit through one transaction whose first statement reads the session, the sign-in,
    the study and the locked assignment (and when it can, also stores the label:
    `_one_statement_submit`); None when unsure (ask the standard way)."""
    if connection.vendor != "postgresql":
        return None
    sign_in = _hot_sign_in(request)
    if sign_in is None:
        return None
    known = _STUDIES.get(token)
    prepared = None if known is None else prepare_label(known, data, key, timings)
    if prepared is not None:
        try:
            return _one_statement_submit(
                request, token, assignment_token, sign_in, known, prepared, data, key, timings
            )
        except (_Unsure, IntegrityError):
            return None  # rolled back: the standard way decides (and says duplicate or conflict)

    def load():
        params = _hot_params(sign_in, token, assignment_token)
        with connection.cursor() as cursor:
            row = engine._execute(cursor, _submit_sql(), params).fetchone()
        if row is None:
            return None  # signed out, no such task of theirs, no access: the standard way says
        text, user_values, study_values, assignment = _split(row)
        user = _accepted_user(request, sign_in, text, user_values)
        if user is None:
            return None
        study = _instance(Study, study_values)
        return user, study, assignment_from_row(assignment, assignment_token, user, study)

    return submit_with(
        load, assignment_token=assignment_token, data=data, idempotency_key=key, timings=timings
    )


def _one_statement_submit(
    request, token, assignment_token, sign_in, known, prepared, data, key, timings
):
    """The common submit in one statement and one transaction: the session, the sign-in, the
    study and the locked assignment are read, and if the lease is open and the study live with
    the scheme the answer was cleaned with (`known`), the lease is closed and the label stored by
    the same statement. Otherwise the lease stays locked and `_store`'s rules answer as usual.
    Raises _Unsure (rolled back) when the sign-in does not verify."""
    params = (
        *_hot_params(sign_in, token, assignment_token, now=prepared.now),
        *store_prepared_params(known, sign_in.user_id, prepared),
    )
    with transaction.atomic():
        with connection.cursor() as cursor:
            row = engine._execute(cursor, _submit_store_sql(), params).fetchone()
        if row is None:
            raise _Unsure  # signed out, no such task of theirs, no access: the standard way says
        label_id = row[-1]
        text, user_values, study_values, assignment = _split(row[:-1])
        user = _accepted_user(request, sign_in, text, user_values)
        if user is None:
            raise _Unsure
        study = _instance(Study, study_values)
        _remember(study)
        assignment = assignment_from_row(assignment, assignment_token, user, study)
        if label_id is None:
            return store_loaded(user, assignment, data, key, timings)
        return finish_prepared(user, assignment, label_id, prepared, timings)


def signed_in_annotator_study(request, token: str):
    """(user, study the user is enrolled in) for the request; (None, None) when signed out.

    Raises Http404 for a study the user is not enrolled in. Session user and study come from one
    statement on the hot path (Django's own user lookup is a query of its own)."""
    found = _session_annotator_and_study(request, token)
    if found is None:
        if not request.user.is_authenticated:
            return None, None
        return request.user, annotator_study_or_404(request.user, token)
    user, study = found
    if study is None:
        raise Http404("No such study.")
    return user, study


def _unauthenticated() -> JsonResponse:
    return JsonResponse({"error": "authentication required"}, status=401)


def task_texts(presentation: dict) -> dict[int, tuple[int, str, str, int]]:
    """Output id -> (prompt id, prompt text, output text, system id), in one query."""
    ids = output_ids(presentation)
    marks = ", ".join(["%s"] * len(ids))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT o.id, o.prompt_id, p.text, o.text, o.system_id FROM annotation_output o"
            f" JOIN annotation_prompt p ON p.id = o.prompt_id WHERE o.id IN ({marks})",
            ids,
        )
        return {row[0]: row[1:] for row in cursor.fetchall()}


def task_payload(assignment) -> dict:
    # A fresh lease comes with its texts (read with its members at claim time).
    texts = getattr(assignment, "texts", None) or task_texts(assignment.presentation)
    return task_view(assignment.presentation, texts)


def _per_session(view):
    """Every answer depends on the session cookie, whether or not the request read the session
    through Django (the hot statements read its row themselves): say so to caches."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        patch_vary_headers(response, ("Cookie",))
        return response

    return wrapped


@require_GET
@_per_session
def next_task(request, token: str):
    found = _fast_next(request, token)
    if found is None:
        user, study = signed_in_annotator_study(request, token)
        if user is None:
            return _unauthenticated()
        assignment = engine.next_assignment(user, study)
    else:
        user, study, assignment = found
    return next_response(user, study, assignment)


def next_response(user, study: Study, assignment) -> JsonResponse:
    """The answer to `next`: the task leased, or why there is none."""
    if assignment is None:
        state = engine.work_state(user, study)
        return JsonResponse(
            {"token": None, "position": None, "task": None, "blocked": state.blocked_reason}
        )
    return JsonResponse(
        {
            "token": assignment.token,
            "position": assignment.position,
            "task": task_payload(assignment),
            "blocked": "",
        }
    )


def _body(request) -> tuple[dict, dict | None]:
    """The posted fields as strings (what annotation.schemes expects), and the timings."""
    if request.content_type == "application/json":
        try:
            raw = json.loads(request.body or b"{}")
        except ValueError:
            raise AnswerError("body", "is not valid JSON") from None
        if not isinstance(raw, dict):
            raise AnswerError("body", "must be a JSON object")
        timings = raw.pop("timings", None)
        data = {k: v if isinstance(v, str) else json.dumps(v) for k, v in raw.items()}
        return data, timings  # anything but an object is refused on `timings` (clean_timings)
    data = {k: request.POST.get(k) for k in request.POST}
    return data, None


def _answer(request) -> tuple[dict, dict | None, str | None]:
    data, timings = _body(request)
    key = request.headers.get("Idempotency-Key") or data.pop("idempotency_key", None)
    return data, timings, key


@require_POST
@_per_session
def submit(request, token: str, assignment_token: str):
    result = None
    try:
        try:
            data, timings, key = _answer(request)
        except AnswerError:
            pass  # the standard way below: who is asking is settled before the body
        else:
            result = _fast_submit(request, token, assignment_token, data, key, timings)
        if result is None:
            user, study = signed_in_annotator_study(request, token)
            if user is None:
                return _unauthenticated()
            data, timings, key = _answer(request)
            result = submit_label(
                annotator=user,
                assignment_token=assignment_token,
                data=data,
                idempotency_key=key,
                timings=timings,
                study=study,
            )
    except AnswerError as err:
        return invalid_response(err)
    return submit_response(result)


def invalid_response(err: AnswerError) -> JsonResponse:
    """The answer to a submit whose body or answer is refused: the field and why."""
    return JsonResponse(
        {"status": "invalid", "field": err.field, "message": err.message}, status=400
    )


def submit_response(result) -> JsonResponse:
    """The answer to `submit`: what became of the label (submission.SubmitResult)."""
    return JsonResponse(
        {"status": result.status, "message": result.message},
        status=SUBMIT_HTTP_STATUS[result.status],
    )
