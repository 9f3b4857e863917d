"""Storing a submitted label: validated, idempotent, never lost and never duplicated.

The Assignment row is locked (`FOR UPDATE`) for the whole store, so parallel posts of one form
are serialised: the first stores the Label, every other one finds the assignment submitted and
answers "duplicate" with that same label. The database backs this up twice: a Label is
one-to-one with its Assignment, and its `idempotency_key` is unique (an IntegrityError from a
race is turned into "duplicate"). A key belongs to one assignment: the same key posted for
another assignment stores nothing and answers "conflict", never "duplicate" (that would be a
silent loss).

A late submit on a lease that expired (or was abandoned) is accepted when it can still be
counted honestly: for production, only if the unit still has an open slot, which it re-takes
atomically (open_slots - 1 WHERE open_slots > 0) and only if the annotator holds no newer lease
of the same unit; otherwise the answer is "reassigned" and nothing is stored. Gold, repeat and
attention leases hold no slot, so a late answer to them is always stored.

A paused or closed study takes no new answers ("paused" / "closed", nothing stored); a retry of
an answer stored before still answers "duplicate".
"""

import math
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.models import Assignment, Label, OutputRating, SpaAnswer, Study, Unit
from annotation.schemes import AnswerError, clean_answer
from annotation.services.assignment import _execute
from annotation.signals import label_submitted

STORED, DUPLICATE, REASSIGNED, NOT_FOUND = "stored", "duplicate", "reassigned", "not_found"
CONFLICT = "conflict"
PAUSED, CLOSED = "paused", "closed"
# Work that a study takes only while it is live; qualification and calibration come before that.
LIVE_ONLY = {"production", "gold", "repeat", "attention"}
NOT_TAKEN = {
    PAUSED: "The study is paused and takes no answers now, so this one was not saved.",
    CLOSED: "The study is closed and takes no more answers, so this one was not saved.",
}


@dataclass(frozen=True)
class SubmitResult:
    # "stored" | "duplicate" | "reassigned" | "not_found" | "conflict" | "paused" | "closed"
    status: str
    label: Label | None
    message: str


def _key(idempotency_key) -> uuid.UUID:
    if isinstance(idempotency_key, uuid.UUID):
        return idempotency_key
    try:
        return uuid.UUID(str(idempotency_key))
    except (TypeError, ValueError):
        raise AnswerError(
            "idempotency_key", "must be a UUID made when the task was shown"
        ) from None


def _duplicate(label: Label) -> SubmitResult:
    return SubmitResult(DUPLICATE, label, "This answer was already saved.")


def _not_found() -> SubmitResult:
    return SubmitResult(NOT_FOUND, None, "This task does not exist.")


def _conflict() -> SubmitResult:
    return SubmitResult(
        CONFLICT,
        None,
        "This submission key was already used for another task, so nothing was saved."
        " Submit the answer again with a new key (reload the task to get one).",
    )


def submit_label(
    *,
    annotator,
    assignment_token: str,
    data,
    idempotency_key,
    timings: dict | None = None,
    study=None,
) -> SubmitResult:
    """Store the annotator's answer to the assignment with this token (see the module doc).

    With `study`, a token of another study is "not_found" too. Raises AnswerError (nothing
    stored) when the answer does not fit the study's scheme.
    """
    key = _key(idempotency_key)
    return submit_with(
        lambda: (annotator, study, _locked_assignment(assignment_token, annotator, study)),
        assignment_token=assignment_token,
        data=data,
        idempotency_key=key,
        timings=timings,
    )


def submit_with(
    load, *, assignment_token: str, data, idempotency_key, timings: dict | None = None
) -> SubmitResult | None:
    """`submit_label` for a caller that reads the annotator, the study and the locked assignment
    itself, in the first statement of the store's transaction (one statement and one
    transaction for the sign-in, the study and the lock).

    `load()` returns (annotator, study, the assignment locked `FOR UPDATE` as
    `assignment_from_row` builds it, or None), or None when it cannot tell (nothing is stored
    and the answer is None).
    """
    loaded = []
    # No look-up of the key first: a retry of a stored answer finds its assignment submitted
    # (under the lock), and a key already used elsewhere fails the unique constraint below.
    try:
        with transaction.atomic():
            found = load()
            if found is None:
                return None
            loaded[:] = found
            annotator, study, assignment = found
            key = _key(idempotency_key)
            db_key = Label._meta.get_field("idempotency_key").get_db_prep_value(key, connection)
            return _store(annotator, assignment, data, key, db_key, timings)
    except IntegrityError:
        # The key was used before (on another assignment, or a parallel post won the race).
        annotator = loaded[0]
        used = Label.objects.filter(idempotency_key=key).select_related("assignment").first()
        if used is not None:
            if used.annotator_id == annotator.id and used.assignment.token == assignment_token:
                return _duplicate(used)
            # A key belongs to one assignment: storing nothing here must not look like success.
            # (Whose assignment it was is not said.)
            return _conflict()
        existing = Label.objects.filter(
            assignment__token=assignment_token, annotator=annotator
        ).first()
        if existing is None:
            raise
        return _duplicate(existing)


_LOCK_SQL = (
    "SELECT id, study_id, unit_id, purpose, status, position, presentation, repeat_of_id,"
    " guide_version_id, leased_at, expires_at FROM annotation_assignment"
    " WHERE token = %s AND annotator_id = %s AND study_id = COALESCE(%s, study_id)"
)
_FIELDS = [
    "id",
    "study_id",
    "unit_id",
    "purpose",
    "status",
    "position",
    "presentation",
    "repeat_of_id",
    "guide_version_id",
    "leased_at",
    "expires_at",
]
_LABEL_SQL = (
    "INSERT INTO annotation_label (assignment_id, study_id, unit_id, annotator_id, purpose,"
    " idempotency_key, choice, score, winner_id, value, guide_version_id, rendered_at,"
    " duration_ms, active_ms, exposure, created_at)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"
)

_CLOSE_SQL = "UPDATE annotation_assignment SET status = 'submitted', closed_at = %s WHERE id = %s"
_CLOSE_AND_LABEL_SQL = "WITH closed AS (" + _CLOSE_SQL + ") " + _LABEL_SQL


# The assignment's columns as `assignment_from_row` takes them (alias a).
ASSIGNMENT_COLUMNS = ", ".join(f"a.{name}" for name in _FIELDS)


def _locked_assignment(token: str, annotator, study) -> Assignment | None:
    """The annotator's assignment with this token, locked until the end of the transaction."""
    sql = _LOCK_SQL + (" FOR UPDATE" if connection.vendor == "postgresql" else "")
    row = _execute(
        connection.cursor(), sql, (token, annotator.id, study.id if study else None)
    ).fetchone()
    return None if row is None else assignment_from_row(row, token, annotator, study)


def assignment_from_row(row, token: str, annotator, study) -> Assignment:
    """The Assignment from its ASSIGNMENT_COLUMNS (`study`: its study, or None to read it)."""
    values = dict(zip(_FIELDS, row, strict=True))
    # Raw rows come back as the driver returns them: decode JSON (and SQLite's text dates).
    meta = Assignment._meta
    values["presentation"] = meta.get_field("presentation").from_db_value(
        values["presentation"], None, connection
    )
    for name in ("leased_at", "expires_at"):
        values[name] = meta.get_field(name).to_python(values[name])
    a = Assignment(token=token, annotator_id=annotator.id, **values)
    a._state.adding, a._state.db = False, connection.alias
    a.study = study if study is not None else Study.objects.get(pk=a.study_id)
    return a


def _store(annotator, assignment, data, key, db_key, timings) -> SubmitResult:
    if assignment is None:
        return _not_found()
    if assignment.status == Assignment.Status.SUBMITTED:
        # A stale form or a retry under another key: the first answer stands.
        return _duplicate(Label.objects.get(assignment_id=assignment.id))
    if (shut := _shut(assignment)) is not None:
        return SubmitResult(shut, None, NOT_TAKEN[shut])
    answer = clean_answer(assignment.study, assignment.presentation, data)
    now = timezone.now()
    timed = clean_timings(timings, assignment, now)
    if assignment.status != Assignment.Status.LEASED and not _retake(assignment):
        return SubmitResult(
            REASSIGNED,
            None,
            "This item was reassigned after your time ran out; your answer was not needed.",
        )
    cursor = connection.cursor()
    ops = connection.ops
    closing = (ops.adapt_datetimefield_value(now), assignment.id)
    pg = connection.vendor == "postgresql"
    if not pg:
        _execute(cursor, _CLOSE_SQL, closing)
    assignment.status, assignment.closed_at = Assignment.Status.SUBMITTED, now
    label = _label(annotator, assignment, answer, key, now, timed)
    row = _execute(
        cursor,
        # PostgreSQL: the assignment's close rides along in the label's statement (one round
        # trip instead of two); a data-modifying WITH runs whether or not it is referenced.
        _CLOSE_AND_LABEL_SQL if pg else _LABEL_SQL,
        (
            *(closing if pg else ()),
            assignment.id,
            label.study_id,
            label.unit_id,
            label.annotator_id,
            label.purpose,
            db_key,
            label.choice,
            label.score,
            label.winner_id,
            ops.adapt_json_value(label.value, None),
            label.guide_version_id,
            ops.adapt_datetimefield_value(label.rendered_at),
            label.duration_ms,
            label.active_ms,
            ops.adapt_json_value(label.exposure, None),
            ops.adapt_datetimefield_value(now),
        ),
    ).fetchone()
    label.id = row[0]
    label._state.adding, label._state.db = False, connection.alias
    if answer.spa_answers:
        SpaAnswer.objects.bulk_create(
            SpaAnswer(label=label, comparison_id=c, reverse=r, probability=p, position=i)
            for c, r, p, i in answer.spa_answers
        )
    if answer.output_ratings:
        OutputRating.objects.bulk_create(
            OutputRating(label=label, output_id=o, score=s) for o, s in answer.output_ratings
        )
    label_submitted.send(sender=Label, label=label, study_id=assignment.study_id)
    return SubmitResult(STORED, label, "Saved.")


def _shut(assignment: Assignment) -> str | None:
    """ "closed" or "paused" when the study takes no answer to this assignment now, else None."""
    status = assignment.study.status
    if status == Study.Status.CLOSED:
        return CLOSED
    if status == Study.Status.PAUSED:
        return PAUSED
    if status != Study.Status.LIVE and assignment.purpose in LIVE_ONLY:
        return PAUSED  # a draft or qualifying study hands out no work either
    return None


def _retake(assignment: Assignment) -> bool:
    """Put a late answer's lease back in force if it can be counted; False if it cannot."""
    if assignment.purpose != Assignment.Purpose.PRODUCTION:
        return True
    try:
        with transaction.atomic():
            taken = Unit.objects.filter(pk=assignment.unit_id, open_slots__gt=0).update(
                open_slots=F("open_slots") - 1
            )
            if not taken:
                return False
            # Fails on the unique (annotator, unit) if they were given this unit again since.
            Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.LEASED)
            assignment.status = Assignment.Status.LEASED
    except IntegrityError:
        return False
    return True


# --- the store in the statement that reads the lease (PostgreSQL) ----------------------------

# Kinds whose answer is cleaned from the study's scheme alone (no presentation, no query), so it
# can be cleaned before the assignment is read.
PLAIN_KINDS = frozenset(
    {
        Study.TaskKind.CATEGORICAL,
        Study.TaskKind.ORDINAL,
        Study.TaskKind.LIKERT,
        Study.TaskKind.CONTINUOUS,
    }
)


@dataclass(frozen=True)
class PreparedLabel:
    """A label's values cleaned before its assignment was read (see `prepare_label`)."""

    key: uuid.UUID
    answer: object  # schemes.CleanAnswer
    timed: dict
    now: object


@dataclass(frozen=True)
class _AnyLease:
    """Stands in for the assignment while timings are cleaned before it is read: a lease begun
    long ago, so only the checks that do not depend on the lease apply (the rest are re-run
    on the real one by `finish_prepared`)."""

    leased_at: object
    presentation: dict


def prepare_label(study: Study, data, idempotency_key, timings) -> PreparedLabel | None:
    """The label's values cleaned with `study` (a copy read earlier) before the assignment is
    read, for `store_prepared_sql`; None when that cannot be done (another kind, or anything
    invalid: the standard path then answers in its own order of checks)."""
    if study.task_kind not in PLAIN_KINDS:
        return None
    try:
        key = _key(idempotency_key)
        answer = clean_answer(study, {}, data)
        now = timezone.now()
        timed = clean_timings(timings, _AnyLease(now - timedelta(days=36500), {}), now)
    except AnswerError:
        return None
    return PreparedLabel(key, answer, timed, now)


def store_prepared_sql(loaded_sql: str, columns: list[str], study_names: dict) -> str:
    """PostgreSQL: `loaded_sql` (which reads and locks the assignment, ASSIGNMENT_COLUMNS last,
    as `columns`) and, when the lease is open and the study live with the kind and scheme the
    label was cleaned with, the close and the label, in one statement. `study_names` names the
    study's status, task_kind and label_scheme among `columns`. Rows: the loaded row, then the
    new label's id or NULL (nothing written)."""
    a = dict(zip(_FIELDS, columns[len(columns) - len(_FIELDS) :], strict=True))
    return (
        f"WITH loaded ({', '.join(columns)}) AS ("
        + loaded_sql
        + "), closed AS (UPDATE annotation_assignment t SET status = 'submitted',"
        f" closed_at = %s::timestamptz FROM loaded WHERE t.id = loaded.{a['id']}"
        f" AND loaded.{a['status']} = 'leased' AND loaded.{study_names['status']} = 'live'"
        f" AND loaded.{study_names['task_kind']} = %s::varchar"
        f" AND loaded.{study_names['label_scheme']} = %s::jsonb"
        " RETURNING t.id, t.study_id, t.unit_id, t.purpose, t.guide_version_id),"
        " stored AS (INSERT INTO annotation_label (assignment_id, study_id, unit_id,"
        " annotator_id, purpose, idempotency_key, choice, score, winner_id, value,"
        " guide_version_id, rendered_at, duration_ms, active_ms, exposure, created_at)"
        " SELECT closed.id, closed.study_id, closed.unit_id, %s::integer, closed.purpose,"
        " %s::uuid, %s::varchar, %s::double precision, NULL, %s::jsonb, closed.guide_version_id,"
        " %s::timestamptz, %s::integer, %s::integer, %s::jsonb, %s::timestamptz FROM closed"
        " RETURNING id)"
        " SELECT loaded.*, (SELECT id FROM stored) FROM loaded"
    )


def store_prepared_params(study: Study, annotator_id: int, prepared: PreparedLabel) -> tuple:
    """The parameters of `store_prepared_sql` after those of its `loaded_sql`."""
    ops = connection.ops
    key = Label._meta.get_field("idempotency_key").get_db_prep_value(prepared.key, connection)
    now = ops.adapt_datetimefield_value(prepared.now)
    timed, answer = prepared.timed, prepared.answer
    return (
        now,
        study.task_kind,
        ops.adapt_json_value(study.label_scheme, None),
        annotator_id,
        key,
        answer.choice,
        answer.score,
        ops.adapt_json_value(answer.raw, None),
        ops.adapt_datetimefield_value(timed.get("rendered_at")),
        timed.get("duration_ms"),
        timed.get("active_ms"),
        ops.adapt_json_value(timed.get("exposure", {}), None),
        now,
    )


def _label(annotator, assignment: Assignment, answer, key, now, timed: dict) -> Label:
    """The label of a cleaned answer to a lease, as both ways of storing it write it."""
    return Label(
        assignment=assignment,
        study_id=assignment.study_id,
        unit_id=assignment.unit_id,
        annotator_id=annotator.id,
        purpose=assignment.purpose,
        idempotency_key=key,
        choice=answer.choice,
        score=answer.score,
        winner_id=answer.winner_system_id,
        value=answer.raw,
        guide_version_id=assignment.guide_version_id,
        created_at=now,
        **timed,
    )


def finish_prepared(annotator, assignment: Assignment, label_id: int, prepared, timings):
    """After `store_prepared_sql` stored the label (in the caller's transaction): the timing
    checks that depend on the lease (AnswerError: the caller rolls back, nothing is stored),
    then the signal, as `_store` does."""
    clean_timings(timings, assignment, prepared.now)
    assignment.status, assignment.closed_at = Assignment.Status.SUBMITTED, prepared.now
    label = _label(
        annotator, assignment, prepared.answer, prepared.key, prepared.now, prepared.timed
    )
    label.id, label._state.adding, label._state.db = label_id, False, connection.alias
    label_submitted.send(sender=Label, label=label, study_id=assignment.study_id)
    return SubmitResult(STORED, label, "Saved.")


def store_loaded(annotator, assignment, data, idempotency_key, timings) -> SubmitResult:
    """`_store` for a lease read (and locked) by the caller's statement that wrote nothing."""
    key = _key(idempotency_key)
    db_key = Label._meta.get_field("idempotency_key").get_db_prep_value(key, connection)
    return _store(annotator, assignment, data, key, db_key, timings)


# How far a client's clock and the network may be off when its timings are checked.
TIMING_SLACK = timedelta(minutes=5)
TIMING_NAMES = ("rendered_at", "duration_ms", "active_ms", "exposure")


def _timing_error(name: str, message: str) -> AnswerError:
    return AnswerError(f"timings.{name}", message)


def _milliseconds(name: str, value, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _timing_error(name, "must be a whole number of milliseconds")
    try:
        number = float(value)
    except ValueError:
        raise _timing_error(name, "must be a whole number of milliseconds") from None
    if not math.isfinite(number) or number != int(number):
        raise _timing_error(name, "must be a whole number of milliseconds")
    if not 0 <= number <= high:
        raise _timing_error(name, f"{number:.0f} is outside 0 to {high} for this task")
    return int(number)


def clean_timings(timings, assignment: Assignment, now) -> dict:
    """Label fields from a client's timings, each checked for a plausible range, or AnswerError
    naming it: the render time within the lease (give or take TIMING_SLACK), durations between
    0 and the time since the lease began, active time at most the duration, and an exposure
    record only for SPA batches, one entry per output shown (see `exposure_record`)."""
    if timings is None:
        timings = {}
    if not isinstance(timings, dict):
        raise AnswerError("timings", "must be an object")
    unknown = [str(k) for k in timings if k not in TIMING_NAMES]
    if unknown:
        raise AnswerError(
            f"timings.{unknown[0][:40]}", f"is not a timing (known: {', '.join(TIMING_NAMES)})"
        )
    out = {}
    leased_at = assignment.leased_at
    if timezone.is_naive(leased_at):  # e.g. set by hand (demo simulation) without a zone
        leased_at = timezone.make_aware(leased_at)
    if timezone.is_naive(now):
        now = timezone.make_aware(now)
    earliest, latest = leased_at - TIMING_SLACK, now + TIMING_SLACK
    if timings.get("rendered_at") is not None:
        raw = timings["rendered_at"]
        try:
            moment = parse_datetime(raw) if isinstance(raw, str) and len(raw) < 64 else None
        except ValueError:
            moment = None
        if moment is None:
            raise _timing_error("rendered_at", "must be an ISO 8601 date and time")
        if timezone.is_naive(moment):
            moment = timezone.make_aware(moment)
        if not earliest <= moment <= latest:
            raise _timing_error("rendered_at", "is not within this task's lease")
        out["rendered_at"] = moment
    longest = int((latest - leased_at).total_seconds() * 1000)
    if timings.get("duration_ms") is not None:
        out["duration_ms"] = _milliseconds("duration_ms", timings["duration_ms"], longest)
    if timings.get("active_ms") is not None:
        high = out.get("duration_ms", longest)
        out["active_ms"] = _milliseconds("active_ms", timings["active_ms"], high)
    if timings.get("exposure") is not None or assignment.presentation.get("kind") == "spa_batch":
        out["exposure"] = exposure_record(
            timings.get("exposure"), assignment.presentation, out.get("duration_ms", longest)
        )
    return out


def exposure_record(measured, presentation: dict, longest_ms: int) -> dict:
    """The stored exposure of an SPA batch from the page's measure {"outputs": {display index:
    {"ms", "seen"}}} (None: not measured): one entry per output shown, keyed back to its id."""
    shown = presentation.get("outputs", []) if presentation.get("kind") == "spa_batch" else None
    if shown is None:
        raise _timing_error("exposure", "only SPA batches report exposure")
    if measured is None:
        return {
            "measured": False,
            "outputs": [{"output": o, "position": j} for j, o in enumerate(shown)],
        }
    items = measured.get("outputs") if isinstance(measured, dict) else None
    if not isinstance(items, dict) or set(measured) != {"outputs"}:
        raise _timing_error("exposure", 'must be {"outputs": {display index: {"ms", "seen"}}}')
    if not set(items) <= {str(j) for j in range(len(shown))}:
        last = len(shown) - 1
        raise _timing_error("exposure", f"has an entry for an output not shown (0-{last})")
    outputs = []
    for j, output_id in enumerate(shown):
        item = items.get(str(j), {})
        if not isinstance(item, dict) or not set(item) <= {"ms", "seen"}:
            raise _timing_error("exposure", f'entry {j} must be {{"ms": ..., "seen": ...}}')
        if not isinstance(item.get("seen", False), bool):
            raise _timing_error("exposure", f"entry {j}: seen must be true or false")
        outputs.append(
            {
                "output": output_id,
                "position": j,
                "visible_ms": _milliseconds("exposure", item.get("ms", 0), longest_ms),
                "seen": item.get("seen", False),
            }
        )
    return {"measured": True, "outputs": outputs}
