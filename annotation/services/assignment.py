"""The assignment engine: which unit each annotator sees next, under a lease, with its presentation.

Everything the engine promises is held by the database, not by Python, so it survives any
number of gunicorn threads and processes:

- Overlap. `Unit.open_slots` (checked 0..overlap) is decremented in the transaction that inserts
  the production Assignment, on a unit row picked `FOR UPDATE SKIP LOCKED` from the partial index
  `unit_open_pick`; a slot returns (+1) only with the status transition leased -> expired/abandoned,
  which happens once per lease (an UPDATE ... WHERE status='leased'). The partial unique constraint
  `assignment_one_production_per_annotator_unit` keeps one live production lease or label per
  (annotator, unit). Hence open_slots == overlap - live production leases - production labels.
- One lease at a time. The annotator's Enrolment row is locked first (`FOR UPDATE`), so parallel
  "next" requests of one annotator are serialised and return the same open lease.
- Order. Each annotator walks the ring of `shuffle_key`s in their own order: the key space is cut
  into 256 blocks (top 8 of 62 bits); the blocks are visited in a permutation seeded by
  (queue_seed, pass), and each block is entered at a seeded point and walked round once (two
  segments). Every probe is one range scan of the partial index, so the cost of a pick does not
  grow with the study. The walk only orders the pool; which units are eligible (open slot, not
  already held) is decided by the database on every pick, so nothing is served twice, and when
  the walk comes up empty a last pick over the whole ring catches units skipped while locked or
  re-opened by expiry (no gaps). `balance_shuffle_keys` lays the ring out so that any stretch of
  it holds the systems in the study's proportions (see there).
- Injection. At position p > 1 a seeded draw u(queue_seed, p) in [0, 1) decides gold
  (u < gold_rate), blind repeat, attention check or production, independently per position: uniform
  over the session, never first, never periodic. It happens only while production work remains and
  the annotator's quota allows at least one more task, so an injected unit is never the last one.
  If no gold (each served to an annotator at most once, and each gold unit to at most `overlap`
  annotators, the least shown first), no repeat (>= repeat_min_gap_units other
  positions and repeat_min_gap_minutes after the original label) or no attention unit is available,
  the position falls back to production.
- Skips. A unit an annotator gave back (`abandon`, status abandoned) is never offered to them
  again; its slot returns to the pool for others.
- Progress. `work_state`'s total is planned from the annotator's production supply, which is the
  same whatever the purpose of the task on screen (see there): it never says what is injected.
- Gates. Only a live study hands out work, and only to an enrolled annotator who passed the
  qualification (if required), calibrated on the latest guide that requires it, and is under quota
  (every task counts, gold and repeats included).

Late submits on expired leases are handled in `annotation.services.submission`.
"""

import functools
import math
import random
import time
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta

from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from annotation.models import Assignment, Comparison, Study, Unit
from annotation.presentation import (
    SALT_GOLD,
    SALT_REPEAT,
    SALT_ROLE,
    SALT_WALK,
    Member,
    draw,
    left_is_first,
    mix64,
    uniform,
)
from annotation.schemes import AnswerError
from annotation.tokens import new_token

Purpose = Assignment.Purpose
LEASED = Assignment.Status.LEASED
ABANDONED = Assignment.Status.ABANDONED

KEY_BITS = 62
BLOCK_BITS = 8
BLOCKS = 1 << BLOCK_BITS
BLOCK_SIZE = 1 << (KEY_BITS - BLOCK_BITS)
SEGMENTS = 2 * BLOCKS
# Empty segments probed in one request before the pick falls back to the whole ring.
MAX_PROBES = 4
# A capped count keeps work_state cheap on huge studies; past it, "assigned" is a lower bound.
ELIGIBLE_COUNT_CAP = 10_000
# How often (seconds) a web process sweeps expired leases of all studies on its own.
RECLAIM_EVERY = 30.0
KEY_MIN, KEY_MAX = -(1 << 63), (1 << 63) - 1


@dataclass(frozen=True)
class WorkState:
    done: int
    assigned: int
    # "" | "paused" | "pool" | "quota" | "qualification" | "recalibration" | "closed" | "done"
    blocked_reason: str


def _pg() -> bool:
    return connection.vendor == "postgresql"


# --- the walk -------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8192)
def _block_order(seed: int, walk_pass: int) -> tuple[int, ...]:
    order = list(range(BLOCKS))
    random.Random(mix64(seed, walk_pass, SALT_WALK)).shuffle(order)
    return tuple(order)


def segment(seed: int, walk_pass: int, step: int) -> tuple[int, int]:
    """The key range [lo, hi) of step `step` (0..SEGMENTS-1) of an annotator's walk."""
    block = _block_order(seed, walk_pass)[step // 2]
    lo = block << (KEY_BITS - BLOCK_BITS)
    hi = lo + BLOCK_SIZE
    entry = lo + mix64(seed, walk_pass, block, SALT_WALK) % BLOCK_SIZE
    return (entry, hi) if step % 2 == 0 else (lo, entry)


@dataclass
class Walk:
    seed: int
    walk_pass: int
    step: int
    cursor: int | None  # lowest key still to visit in the current segment (None: its start)


def _pick_sql(only_if: str = "") -> str:
    lock = " FOR UPDATE OF u SKIP LOCKED" if _pg() else ""
    # The literals must stay literals: they are what matches the partial index unit_open_pick.
    # OFFSET 0 keeps NOT EXISTS a per-row probe of (annotator, unit); as an anti join PostgreSQL
    # would read all of the annotator's assignments on every pick, growing with their work.
    return (
        "SELECT u.id, u.shuffle_key, u.kind FROM annotation_unit u"
        " WHERE " + only_if + "u.study_id = %s AND u.role = 'production' AND u.open_slots > 0"
        " AND u.shuffle_key >= %s AND u.shuffle_key < %s"
        " AND NOT EXISTS (SELECT 1 FROM annotation_assignment a WHERE a.annotator_id = %s"
        " AND a.unit_id = u.id AND a.purpose = 'production'"
        " AND a.status IN ('leased', 'submitted', 'abandoned') LIMIT 1 OFFSET 0)"
        " ORDER BY u.shuffle_key LIMIT 1" + lock
    )


def _pick_with_members_sql() -> str:
    """PostgreSQL: the pick and the picked unit's members (as `present` reads them) in one
    statement, one row per member: (unit id, key, kind, output id, system, prompt, texts)."""
    return (
        "WITH picked AS (" + _pick_sql() + ") SELECT picked.id, picked.shuffle_key,"
        " picked.kind, uo.output_id, o.system_id, o.prompt_id, p.text, o.text FROM picked"
        " JOIN annotation_unitoutput uo ON uo.unit_id = picked.id"
        " JOIN annotation_output o ON o.id = uo.output_id"
        " JOIN annotation_prompt p ON p.id = o.prompt_id ORDER BY uo.position"
    )


def _open_lease_or_pick_sql() -> str:
    """PostgreSQL: the annotator's open lease if they hold one, else the pick and the picked
    unit's members, in one statement. Rows: (open lease id, then as `_pick_with_members_sql`);
    a lease comes as one row with only its id, and then nothing is picked (or locked)."""
    return (
        "WITH open_lease AS ("
        + _OPEN_LEASE_SQL
        + "), picked AS ("
        + _pick_sql(only_if="NOT EXISTS (SELECT 1 FROM open_lease) AND ")
        + ") SELECT NULL::bigint, picked.id, picked.shuffle_key, picked.kind, uo.output_id,"
        " o.system_id, o.prompt_id, p.text, o.text, uo.position FROM picked"
        " JOIN annotation_unitoutput uo ON uo.unit_id = picked.id"
        " JOIN annotation_output o ON o.id = uo.output_id"
        " JOIN annotation_prompt p ON p.id = o.prompt_id"
        " UNION ALL SELECT open_lease.id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL"
        " FROM open_lease ORDER BY 10"
    )


@dataclass(frozen=True)
class OpenLease:
    """What `pick_production` found instead of a unit: the annotator's open lease."""

    id: int


@dataclass(frozen=True)
class Leased:
    """What `pick_production` found when its first probe also took the unit (`_claim_sql`): the
    new lease's id, the unit, its key and its member rows (as `present` reads them)."""

    id: int
    unit_id: int
    key: int
    members: list


# Unit kinds whose presentation `_claim_sql` draws in SQL (see there).
SQL_DRAWN_KINDS = ("output", "pair")


@functools.cache
def _claim_sql() -> str:
    """PostgreSQL, a production position: the annotator's open lease if they hold one; else the
    pick (as `_open_lease_or_pick_sql`), and for a unit of SQL_DRAWN_KINDS its slot, the lease
    and the walk, in one statement (one round trip instead of two).

    The lease's presentation is drawn here as `presentation.draw` draws these kinds: an output
    unit shows its one output; a pair puts its first member (by position) left when the
    parameter `left_is_first(seed, position)` says so. Rows: (open lease id, then as
    `_pick_with_members_sql`, then the member's position and the new lease's id or NULL); a
    unit of another kind is picked and locked but not taken (the caller goes on in Python).
    The walk is saved only with a lease, its cursor just past the taken key.
    """
    return (
        "WITH open_lease AS ("
        + _OPEN_LEASE_SQL
        + "), picked AS ("
        + _pick_sql(only_if="NOT EXISTS (SELECT 1 FROM open_lease) AND ")
        + "), members AS (SELECT uo.position, uo.output_id, o.system_id, o.prompt_id,"
        " p.text AS prompt_text, o.text FROM picked"
        " JOIN annotation_unitoutput uo ON uo.unit_id = picked.id"
        " JOIN annotation_output o ON o.id = uo.output_id"
        " JOIN annotation_prompt p ON p.id = o.prompt_id),"
        " taken AS (UPDATE annotation_unit t SET open_slots = t.open_slots - 1 FROM picked"
        " WHERE t.id = picked.id AND t.open_slots > 0 AND picked.kind IN ('output', 'pair')"
        " RETURNING t.id, picked.kind, picked.shuffle_key),"
        " drawn AS (SELECT taken.id, CASE taken.kind"
        " WHEN 'output' THEN jsonb_build_object('kind', 'output', 'output', m.first)"
        " ELSE jsonb_build_object('kind', 'pair',"
        " 'left', CASE WHEN %s THEN m.first ELSE m.second END,"
        " 'right', CASE WHEN %s THEN m.second ELSE m.first END) END AS presentation"
        " FROM taken, (SELECT (array_agg(output_id ORDER BY position))[1] AS first,"
        " (array_agg(output_id ORDER BY position))[2] AS second FROM members) m),"
        " enrolment AS (UPDATE annotation_enrolment SET queue_seed = %s, positions_issued = %s,"
        " walk_pass = %s, walk_step = %s, walk_cursor = (SELECT shuffle_key + 1 FROM taken)"
        " WHERE id = %s AND EXISTS (SELECT 1 FROM taken)),"
        " lease AS ("
        + _ASSIGNMENT_COLUMNS
        + " SELECT %s::bigint, drawn.id, %s::integer, 'production', %s::varchar, 'leased',"
        " %s::integer, drawn.presentation, NULL, %s::bigint, %s::timestamptz, %s::timestamptz"
        " FROM drawn RETURNING id)"
        " SELECT NULL::bigint, picked.id, picked.shuffle_key, picked.kind, m.output_id,"
        " m.system_id, m.prompt_id, m.prompt_text, m.text, m.position, (SELECT id FROM lease)"
        " FROM picked JOIN members m ON true"
        " UNION ALL SELECT open_lease.id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
        " NULL FROM open_lease ORDER BY 10"
    )


def _execute(cursor, sql: str, params, *, prepare: bool = True):
    """Run a hot-path statement; on PostgreSQL as a server-side prepared statement (planned once
    per connection), or with `prepare=False` planned afresh on every call. Returns a cursor to
    fetch from.

    A prepared statement's generic plan is kept for the connection's life, with the table sizes
    of the moment it was made: made while a study's tables are small, an anti-join against the
    annotator's assignments is a scan per candidate, and it stays one as they grow (until an
    ANALYZE replans it). The statements of the injected positions (gold, attention, repeats: a
    tenth of the labels) are therefore planned each time: a fraction of a millisecond each,
    against a cost that would grow with the annotator's history.

    The per-label statements keep their prepared plans. Made on a new installation, whose
    assignment table is still a page or two, their per-candidate probes are scans too, until
    autovacuum's ANALYZE replans them or the connection is renewed (DB_CONN_MAX_AGE, 60 s by
    default): a minute or so, once. Beside earlier work they probe its indexes (checked with a
    finished study's 300,000 labels in the tables: bench/loop_data.py, `past_work`)."""
    if _pg():
        # Django's wrapper turns psycopg's errors into django.db's (IntegrityError and the rest).
        with connection.wrap_database_errors:
            return _prepared_cursor().execute(sql, params, prepare=prepare)
    cursor.execute(sql, params)
    return cursor


def _prepared_cursor():
    # Django's psycopg cursors bind client-side; a plain psycopg cursor on the same connection
    # (same transaction) binds server-side, so psycopg can prepare the statement once per
    # connection: planning the pick costs more than running it.
    import psycopg

    connection.ensure_connection()
    return psycopg.Cursor(connection.connection)


def pick_production(
    cursor, study_id: int, annotator_id: int, walk: Walk, open_lease_at=None, first_probe=None
):
    """Lock the next eligible production unit on the annotator's walk, or None.

    Returns (unit id, key, members): on PostgreSQL `members` are the unit's member rows as
    `present` reads them (read in the same statement), elsewhere None. Advances `walk` past
    empty segments; the cursor is left *at* the picked key (the caller moves it past when the
    unit is taken). After MAX_PROBES empty segments it jumps to a random point.

    With `open_lease_at` (PostgreSQL; a time, adapted for the database) the first probe first
    looks for the annotator's open lease in this study at that time, in the same statement, and
    returns it as an OpenLease if there is one (nothing is picked then). With `first_probe`
    (a function of (lo, hi)) the first probe is that function's; it may return a Leased.
    """
    pg = _pg()
    sql = _pick_with_members_sql() if pg else _pick_sql()
    first = [open_lease_at] if pg and open_lease_at is not None else []

    firsts = [first_probe] if first_probe is not None else []

    def probe(lo, hi):
        if firsts:
            return firsts.pop()(lo, hi)
        if first:
            params = (annotator_id, study_id, first.pop(), study_id, lo, hi, annotator_id)
            rows = _execute(cursor, _open_lease_or_pick_sql(), params).fetchall()
            if rows and rows[0][0] is not None:
                return OpenLease(rows[0][0])
            return (rows[0][1], rows[0][2], [r[3:9] for r in rows]) if rows else None
        if pg:
            rows = _execute(cursor, sql, (study_id, lo, hi, annotator_id)).fetchall()
            return (rows[0][0], rows[0][1], [r[2:] for r in rows]) if rows else None
        row = _execute(cursor, sql, (study_id, lo, hi, annotator_id)).fetchone()
        return (row[0], row[1], None) if row else None

    for _ in range(MAX_PROBES):
        if walk.step >= SEGMENTS:
            walk.walk_pass, walk.step, walk.cursor = walk.walk_pass + 1, 0, None
        lo, hi = segment(walk.seed, walk.walk_pass, walk.step)
        if walk.cursor is not None:
            lo = max(lo, walk.cursor)
        picked = probe(lo, hi)
        if isinstance(picked, (OpenLease, Leased)):
            return picked
        if picked:
            walk.cursor = picked[1]
            return picked
        walk.step, walk.cursor = walk.step + 1, None
    walk.cursor = None
    # A sparse stretch (a small study, late in a big one, or only skipped/re-opened units left):
    # jump to a random point of the ring and take the next eligible unit, wrapping once.
    jump = mix64(walk.seed, walk.walk_pass, walk.step, SALT_WALK) >> (64 - KEY_BITS)
    for lo, hi in ((jump, KEY_MAX), (KEY_MIN, jump)):
        picked = probe(lo, hi)
        if picked:
            return picked
    return None


# --- gates ----------------------------------------------------------------------------------


# The enrolment's columns as `_Enrolment` takes them (alias e).
ENROLMENT_COLUMNS = (
    "e.id, e.queue_seed, e.positions_issued, e.walk_pass, e.walk_step, e.walk_cursor,"
    " e.qualified_at, e.quota,"
    " (SELECT g.number FROM annotation_guideversion g"
    "  WHERE g.id = e.calibrated_guide_version_id),"
    " (SELECT g.id FROM annotation_guideversion g WHERE g.study_id = e.study_id"
    "  ORDER BY g.number DESC LIMIT 1),"
    " (SELECT MAX(g.number) FROM annotation_guideversion g WHERE g.study_id = e.study_id"
    "  AND g.requires_recalibration AND g.published_at > e.created_at), e.pool"
)


def _enrolment_sql(lock: bool) -> str:
    return (
        "SELECT " + ENROLMENT_COLUMNS + " FROM annotation_enrolment e"
        " WHERE e.study_id = %s AND e.user_id = %s" + (" FOR UPDATE OF e" if lock and _pg() else "")
    )


@dataclass
class _Enrolment:
    id: int
    seed: int
    positions_issued: int
    walk_pass: int
    walk_step: int
    walk_cursor: int | None
    qualified_at: object
    quota: int | None
    calibrated_number: int | None
    current_guide_id: int | None
    recalibration_number: int | None  # the newest change since they enrolled that needs it
    pool: str = ""


def _load_enrolment(cursor, study: Study, annotator, lock: bool) -> _Enrolment | None:
    row = _execute(cursor, _enrolment_sql(lock), (study.id, annotator.id)).fetchone()
    return None if row is None else enrolment_from_row(study, row)


def enrolment_from_row(study: Study, row) -> _Enrolment:
    """The enrolment from its ENROLMENT_COLUMNS."""
    e = _Enrolment(*row)
    if e.quota is None:
        e.quota = study.quota_per_annotator
    return e


def gate_reason(study: Study, e: _Enrolment | None) -> str:
    """Why this annotator gets no work now ("" when nothing stops them, quota aside)."""
    if e is None or study.status == Study.Status.CLOSED:
        return "closed"
    if study.status != Study.Status.LIVE:
        return "paused"  # draft, qualifying and paused studies hand out no work
    if study.allowed_pools and e.pool not in study.allowed_pools:
        return "pool"
    if study.requires_qualification and e.qualified_at is None:
        return "qualification"
    if e.recalibration_number is not None and (e.calibrated_number or 0) < e.recalibration_number:
        return "recalibration"
    return ""


# Qualification and calibration work (annotation.services.qualification, .calibration) is
# handed out there; the engine neither resumes it, nor counts it in progress or quota.
TRAINING = (Purpose.QUALIFICATION, Purpose.CALIBRATION)


def _active_count(annotator, study: Study) -> int:
    return (
        Assignment.objects.filter(
            annotator=annotator, study=study, status__in=[LEASED, Assignment.Status.SUBMITTED]
        )
        .exclude(purpose__in=TRAINING)
        .count()
    )


# --- injection ------------------------------------------------------------------------------


def _injected_role(study: Study, seed: int, position: int) -> str:
    u = uniform(seed, position, SALT_ROLE)
    if u < study.gold_rate:
        return Purpose.GOLD
    if u < study.gold_rate + study.repeat_rate:
        return Purpose.REPEAT
    if u < study.gold_rate + study.repeat_rate + study.attention_rate:
        return Purpose.ATTENTION
    return Purpose.PRODUCTION


_NEVER_SHOWN_SQL = (
    "SELECT u.id FROM annotation_unit u WHERE u.study_id = %s AND u.role = %s"
    " AND u.shuffle_key >= %s"
    " AND NOT EXISTS (SELECT 1 FROM annotation_assignment a WHERE a.unit_id = u.id"
    " AND a.annotator_id = %s LIMIT 1 OFFSET 0) ORDER BY u.shuffle_key LIMIT 1"
)


def _fresh_gold_sql() -> str:
    # Gold with exposures left, never shown to this annotator; the least shown first, then from
    # a seeded point of the ring. The row lock makes a parallel claim skip it or see its take.
    lock = " FOR UPDATE OF u SKIP LOCKED" if _pg() else ""
    return (
        "SELECT u.id FROM annotation_unit u WHERE u.study_id = %s AND u.role = 'gold'"
        " AND u.open_slots > 0"
        " AND NOT EXISTS (SELECT 1 FROM annotation_assignment a WHERE a.unit_id = u.id"
        " AND a.annotator_id = %s LIMIT 1 OFFSET 0)"
        " ORDER BY u.open_slots DESC, u.shuffle_key < %s, u.shuffle_key LIMIT 1" + lock
    )


# Whether an earlier label can be repeated now: a submitted production label, closed long enough
# ago, not under repeat now (alias a).
_REPEATABLE_WHERE = (
    "a.annotator_id = %s AND a.study_id = %s AND a.purpose = 'production'"
    " AND a.status = 'submitted' AND a.closed_at <= %s"
    " AND NOT EXISTS (SELECT 1 FROM annotation_assignment r WHERE r.repeat_of_id = a.id"
    " AND r.status IN ('leased', 'submitted'))"
)
# REPEAT_PROBES positions drawn uniformly from 1..latest, looked up by the (annotator, study,
# position) key: the first that holds a repeatable label is the draw. Rejection sampling, so
# uniform over the repeatable labels whatever the gaps between them, at the cost of a few index
# lookups instead of reading the annotator's whole history.
REPEAT_PROBES = 8
_REPEAT_PROBE_SQL = (
    "WITH d(i, pos) AS (VALUES "
    + ", ".join(f"({i}, CAST(%s AS INTEGER))" for i in range(REPEAT_PROBES))
    + ") SELECT a.id, a.unit_id FROM d JOIN annotation_assignment a ON a.position = d.pos"
    " WHERE " + _REPEATABLE_WHERE + " ORDER BY d.i LIMIT 1"
)
# When every probe misses (a sparse history: few repeatable labels among the positions), the
# k-th of the n repeatable labels by position, k = 1 + draw mod n: uniform too (up to a bias of
# n / 2^62), reading them all.
_REPEATABLE_SQL = (
    "SELECT c.id, c.unit_id FROM (SELECT a.id, a.unit_id,"
    " ROW_NUMBER() OVER (ORDER BY a.position) AS k, COUNT(*) OVER () AS n"
    " FROM annotation_assignment a WHERE a.position <= %s AND " + _REPEATABLE_WHERE + ") c"
    " WHERE c.k = 1 + %s %% c.n"
)


def _gold_unit(cursor, study: Study, role: str, annotator_id: int, seed: int, position: int):
    """A random gold (or attention) unit this annotator was never shown, or None.

    Gold is capped: each gold unit is shown to at most `overlap` annotators, like a production
    unit (its `open_slots` count the exposures left, taken with the lease and never returned),
    and the least shown gold comes first, so no gold item circulates more widely than real
    work. Attention checks are only kept to once per annotator.
    """
    start = mix64(seed, position, SALT_GOLD) >> (64 - KEY_BITS)
    if role == Unit.Role.GOLD:
        params = (study.id, annotator_id, start)
        row = _execute(cursor, _fresh_gold_sql(), params, prepare=False).fetchone()
        return row[0] if row else None
    for lo in (start, KEY_MIN):
        params = (study.id, role, lo, annotator_id)
        row = _execute(cursor, _NEVER_SHOWN_SQL, params, prepare=False).fetchone()
        if row:
            return row[0]
    return None


def repeatable(cursor, study: Study, annotator_id: int, seed: int, position: int, now):
    """The earlier production assignment to repeat at `position`, drawn uniformly among the
    eligible ones (submitted, >= repeat_min_gap_units positions and repeat_min_gap_minutes back,
    not under repeat now): (id, unit id), or None."""
    latest = position - study.repeat_min_gap_units - 1
    if latest < 1:
        return None
    before = connection.ops.adapt_datetimefield_value(
        now - timedelta(minutes=study.repeat_min_gap_minutes)
    )
    probes = [1 + mix64(seed, position, SALT_REPEAT, i) % latest for i in range(REPEAT_PROBES)]
    params = (*probes, annotator_id, study.id, before)
    found = _execute(cursor, _REPEAT_PROBE_SQL, params, prepare=False).fetchone()
    if found is not None:
        return found
    draw_ = mix64(seed, position, SALT_REPEAT) >> 2
    params = (latest, annotator_id, study.id, before, draw_)
    return _execute(cursor, _REPEATABLE_SQL, params, prepare=False).fetchone()


# --- the claim ------------------------------------------------------------------------------

_MEMBERS_SQL = (
    "SELECT u.kind, uo.output_id, o.system_id, o.prompt_id, p.text, o.text FROM annotation_unit u"
    " JOIN annotation_unitoutput uo ON uo.unit_id = u.id"
    " JOIN annotation_output o ON o.id = uo.output_id"
    " JOIN annotation_prompt p ON p.id = o.prompt_id"
    " WHERE u.id = %s ORDER BY uo.position"
)


def present(
    cursor, study: Study, unit_id: int, seed: int, position: int, rows=None
) -> tuple[dict, dict]:
    """Draw the presentation of a unit for (seed, position).

    Returns it with the texts of its outputs (output id -> (prompt id, prompt text, output text,
    system id), as `presentation.task_view` takes them), read in the same statement (or given
    as `rows`, already read with the pick).
    """
    if rows is None:
        rows = _execute(cursor, _MEMBERS_SQL, (unit_id,)).fetchall()
    members = [Member(r[1], r[2], r[3]) for r in rows]
    texts = {r[1]: (r[3], r[4], r[5], r[2]) for r in rows}
    kind = rows[0][0]
    comparisons = ()
    if kind == Unit.Kind.SPA_BATCH:
        comparisons = tuple(
            Comparison.objects.filter(study=study)
            .order_by("position", "id")
            .values_list("id", "system_x_id", "system_y_id")
        )
    return draw(kind, members, seed, position, comparisons, study.spa_both_directions), texts


_last_sweep = [0.0]


def _maybe_reclaim_all(now) -> None:
    """Return the slots of expired leases now and then, so they do not wait for the end."""
    if time.monotonic() - _last_sweep[0] < RECLAIM_EVERY:
        return
    _last_sweep[0] = time.monotonic()
    reclaim_expired(now=now, limit=1000)


def next_assignment(annotator, study: Study, *, now=None) -> Assignment | None:
    """The annotator's open lease in this study, else a new one per the engine's rules, else None.

    None means a gate stops the annotator, or nothing is left for them (decided only after the
    study's expired leases were reclaimed); `work_state` says which.
    """
    found = claim_next(
        lambda cursor: (annotator, study, _load_enrolment(cursor, study, annotator, lock=True)),
        now=now,
    )
    return found[2]


def claim_next(load, *, now=None) -> tuple | None:
    """`next_assignment` for a caller that reads the annotator and study itself, in the first
    statement of the claim's transaction (one statement and one transaction for the sign-in,
    the study and the enrolment's lock).

    `load(cursor)` returns (annotator, study, their enrolment locked `FOR UPDATE`, read as
    ENROLMENT_COLUMNS by `enrolment_from_row`, or None), or None when it cannot tell (nothing
    is claimed and the answer is None). Returns (annotator, study, Assignment or None).
    """
    now = now or timezone.now()
    _maybe_reclaim_all(now)
    for attempt in range(3):
        try:
            with transaction.atomic():
                loaded = load(connection.cursor())
                if loaded is None:
                    return None
                annotator, study, e = loaded
                return annotator, study, _claim(annotator, study, e, now)
        except IntegrityError:
            # Only a race on the same annotator's rows gets here (a lease they were given in a
            # parallel request); the next attempt sees it.
            if attempt == 2:
                raise
    return None


# OFFSET 0 (PostgreSQL) keeps the ORDER BY out of the scan's plan: a prepared statement's generic
# plan would otherwise walk all of the annotator's assignments backwards by position to skip a
# sort (growing with their work) instead of reading the few live leases. SQLite has no OFFSET
# without LIMIT, and prepares nothing.
_OPEN_LEASE_SQL = (
    "SELECT id FROM (SELECT id, position FROM annotation_assignment WHERE annotator_id = %s"
    " AND study_id = %s AND status = 'leased' AND expires_at > %s"
    " AND purpose NOT IN ('qualification', 'calibration') OFFSET 0) leased"
    " ORDER BY position DESC LIMIT 1"
)


def _open_lease_sql() -> str:
    return _OPEN_LEASE_SQL if _pg() else _OPEN_LEASE_SQL.replace(" OFFSET 0", "")


def _claim(annotator, study: Study, e: _Enrolment | None, now) -> Assignment | None:
    cursor = connection.cursor()
    if e is None or gate_reason(study, e):
        return None  # a paused or closed study takes no answers, so its open leases are not shown
    # The open lease is looked for in a statement after the lock: a subquery of the locking
    # statement would read the snapshot from before a parallel claim of this annotator
    # committed. Without a quota it rides along in the pick's first probe (PostgreSQL).
    at = connection.ops.adapt_datetimefield_value(now)
    fused = _pg() and e.quota is None
    quota_left = None
    if not fused:
        lease = _execute(cursor, _open_lease_sql(), (annotator.id, study.id, at)).fetchone()
        if lease is not None:
            return Assignment.objects.get(pk=lease[0])
        if e.quota is not None:
            quota_left = e.quota - _active_count(annotator, study)
            if quota_left <= 0:
                return None
    seed = e.seed or mix64(e.id, 0x5EED) >> 2  # an enrolment made before seeds were drawn
    position = e.positions_issued + 1
    walk = Walk(seed, e.walk_pass, e.walk_step, e.walk_cursor)
    role = _injected_role(study, seed, position)
    # Never first, and never the last task the annotator can get (production remains, and
    # the quota leaves room for at least one more).
    injecting = (
        role != Purpose.PRODUCTION and position > 1 and (quota_left is None or quota_left > 1)
    )
    lease = None
    if fused and not injecting:
        # A production position: the first probe takes the unit too, in the same statement.
        lease = _ProductionClaim(study, annotator.id, e, seed, position, walk, now)

    picked = pick_production(
        cursor, study.id, annotator.id, walk, at if fused else None, first_probe=lease
    )
    if isinstance(picked, OpenLease):
        return Assignment.objects.get(pk=picked.id)
    if isinstance(picked, Leased):
        return lease.assignment(picked)
    if picked is None and reclaim_expired(study, now=now):
        picked = pick_production(cursor, study.id, annotator.id, walk)
    if picked is None:
        _save_enrolment(cursor, e, seed, e.positions_issued, walk)
        return None
    unit_id, key, members = picked

    purpose, repeat_of = Purpose.PRODUCTION, None
    if injecting:
        if role == Purpose.REPEAT:
            found = repeatable(cursor, study, annotator.id, seed, position, now)
            if found:
                purpose, repeat_of, unit_id = Purpose.REPEAT, found[0], found[1]
        else:
            unit_role = Unit.Role.GOLD if role == Purpose.GOLD else Unit.Role.ATTENTION
            found = _gold_unit(cursor, study, unit_role, annotator.id, seed, position)
            if found:
                purpose, unit_id = role, found

    production = purpose == Purpose.PRODUCTION
    takes_slot = purpose in (Purpose.PRODUCTION, Purpose.GOLD)  # gold: one exposure of its cap
    if production:
        walk.cursor = key + 1
    else:  # the production unit stays ahead on the walk (cursor left at its key)
        members = None  # and the injected unit's members are read by `present`

    presentation, texts = present(cursor, study, unit_id, seed, position, members)
    assignment = Assignment(
        study_id=study.id,
        unit_id=unit_id,
        annotator_id=annotator.id,
        purpose=str(purpose),
        position=position,
        presentation=presentation,
        repeat_of_id=repeat_of,
        guide_version_id=e.current_guide_id,
        leased_at=now,
        expires_at=now + timedelta(seconds=study.lease_seconds),
    )
    if _pg():
        _take_insert_and_save(cursor, assignment, takes_slot, e, seed, walk)
    else:
        if takes_slot:
            _take_slot(cursor, unit_id)
        _insert(cursor, assignment)
        _save_enrolment(cursor, e, seed, position, walk)
    # Not a field: lets the caller render the task without reading the texts again.
    assignment.texts = texts
    return assignment


class _ProductionClaim:
    """The first probe of a production position on PostgreSQL (`_claim_sql`): the open lease,
    or the pick, and for an output or pair unit the slot, the lease and the walk at once."""

    def __init__(self, study: Study, annotator_id: int, e: _Enrolment, seed, position, walk, now):
        self.study, self.annotator_id, self.e = study, annotator_id, e
        self.seed, self.position, self.walk, self.now = seed, position, walk, now
        self.token = new_token()
        self.expires_at = now + timedelta(seconds=study.lease_seconds)

    def __call__(self, lo: int, hi: int):
        ops, walk, e = connection.ops, self.walk, self.e
        left_first = left_is_first(self.seed, self.position)
        at = ops.adapt_datetimefield_value(self.now)
        params = (
            *(self.annotator_id, self.study.id, at),  # the open lease
            *(self.study.id, lo, hi, self.annotator_id),  # the pick
            left_first,
            left_first,
            *(self.seed, self.position, walk.walk_pass, walk.step, e.id),  # the walk
            *(self.study.id, self.annotator_id, self.token, self.position, e.current_guide_id),
            at,
            ops.adapt_datetimefield_value(self.expires_at),
        )
        rows = _execute(connection.cursor(), _claim_sql(), params).fetchall()
        if not rows:
            return None
        if rows[0][0] is not None:
            return OpenLease(rows[0][0])
        members = [r[3:9] for r in rows]
        if rows[0][10] is not None:
            return Leased(rows[0][10], rows[0][1], rows[0][2], members)
        return rows[0][1], rows[0][2], members  # picked and locked, not taken (another kind)

    def assignment(self, leased: Leased) -> Assignment:
        """The lease `_claim_sql` stored, as an Assignment, with its texts."""
        presentation, texts = present(
            None, self.study, leased.unit_id, self.seed, self.position, leased.members
        )
        a = Assignment(
            id=leased.id,
            token=self.token,
            study_id=self.study.id,
            unit_id=leased.unit_id,
            annotator_id=self.annotator_id,
            purpose=str(Purpose.PRODUCTION),
            status=LEASED,
            position=self.position,
            presentation=presentation,
            repeat_of_id=None,
            guide_version_id=self.e.current_guide_id,
            leased_at=self.now,
            expires_at=self.expires_at,
        )
        a._state.adding, a._state.db = False, connection.alias
        self.walk.cursor = leased.key + 1
        a.texts = texts
        return a


_INSERT_SQL = (
    "INSERT INTO annotation_assignment (study_id, unit_id, annotator_id, purpose, token, status,"
    " position, presentation, repeat_of_id, guide_version_id, leased_at, expires_at)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"
)


def _take_slot(cursor, unit_id: int) -> None:
    taken = _execute(
        cursor,
        "UPDATE annotation_unit SET open_slots = open_slots - 1 WHERE id = %s AND open_slots > 0",
        (unit_id,),
    )
    if taken.rowcount != 1:  # cannot happen while we hold the row lock; never oversell
        raise IntegrityError(f"unit {unit_id} has no open slot")


# PostgreSQL: the slot, the lease and the enrolment's walk in one statement (one round trip
# instead of three). The lease is inserted only from the row the decrement returns, so a unit
# without an open slot gets no lease; the enrolment update runs whatever the rest does (a
# data-modifying WITH always runs to completion), and the caller's transaction rolls it back
# when no lease came out.
_ENROLMENT_CTE = (
    "enrolment AS (UPDATE annotation_enrolment SET queue_seed = %s, positions_issued = %s,"
    " walk_pass = %s, walk_step = %s, walk_cursor = %s WHERE id = %s)"
)
_ASSIGNMENT_COLUMNS = (
    "INSERT INTO annotation_assignment (study_id, unit_id, annotator_id, purpose, token, status,"
    " position, presentation, repeat_of_id, guide_version_id, leased_at, expires_at)"
)
_TAKE_INSERT_SAVE_SQL = (
    "WITH taken AS (UPDATE annotation_unit SET open_slots = open_slots - 1"
    " WHERE id = %s AND open_slots > 0 RETURNING id), "
    + _ENROLMENT_CTE
    + " "
    + _ASSIGNMENT_COLUMNS
    + " SELECT %s::bigint, taken.id, %s::integer, %s::varchar, %s::varchar, %s::varchar,"
    " %s::integer, %s::jsonb, %s::bigint, %s::bigint, %s::timestamptz, %s::timestamptz"
    " FROM taken RETURNING id"
)
_INSERT_SAVE_SQL = (
    "WITH "
    + _ENROLMENT_CTE
    + " "
    + _ASSIGNMENT_COLUMNS
    + " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"
)


def _take_insert_and_save(cursor, a: Assignment, takes_slot: bool, e, seed: int, walk: Walk):
    """PostgreSQL only: take the unit's slot (production, gold), insert the lease, save the
    walk."""
    ops = connection.ops
    enrolment = (seed, a.position, walk.walk_pass, walk.step, walk.cursor, e.id)
    lease = (
        a.study_id,
        a.annotator_id,
        a.purpose,
        a.token,
        a.status,
        a.position,
        ops.adapt_json_value(a.presentation, None),
        a.repeat_of_id,
        a.guide_version_id,
        ops.adapt_datetimefield_value(a.leased_at),
        ops.adapt_datetimefield_value(a.expires_at),
    )
    if takes_slot:
        sql, params = _TAKE_INSERT_SAVE_SQL, (a.unit_id, *enrolment, *lease)
    else:
        sql, params = _INSERT_SAVE_SQL, (*enrolment, lease[0], a.unit_id, *lease[1:])
    row = _execute(cursor, sql, params).fetchone()
    if row is None:  # cannot happen while we hold the row lock; never oversell
        raise IntegrityError(f"unit {a.unit_id} has no open slot")
    a.id = row[0]
    a._state.adding, a._state.db = False, connection.alias


def _insert(cursor, a: Assignment) -> None:
    """INSERT the new lease in one prepared statement (the ORM's compile costs more than it)."""
    ops = connection.ops
    row = _execute(
        cursor,
        _INSERT_SQL,
        (
            a.study_id,
            a.unit_id,
            a.annotator_id,
            a.purpose,
            a.token,
            a.status,
            a.position,
            ops.adapt_json_value(a.presentation, None),
            a.repeat_of_id,
            a.guide_version_id,
            ops.adapt_datetimefield_value(a.leased_at),
            ops.adapt_datetimefield_value(a.expires_at),
        ),
    ).fetchone()
    a.id = row[0]
    a._state.adding, a._state.db = False, connection.alias


def _save_enrolment(cursor, e: _Enrolment, seed: int, issued: int, walk: Walk) -> None:
    _execute(
        cursor,
        "UPDATE annotation_enrolment SET queue_seed = %s, positions_issued = %s, walk_pass = %s,"
        " walk_step = %s, walk_cursor = %s WHERE id = %s",
        (seed, issued, walk.walk_pass, walk.step, walk.cursor, e.id),
    )


# --- leases ending --------------------------------------------------------------------------


def _return_slots(unit_ids) -> None:
    # In unit id order, so two reclaimers never wait on each other in a cycle.
    for unit_id, n in sorted(Counter(unit_ids).items()):
        Unit.objects.filter(pk=unit_id).update(open_slots=F("open_slots") + n)


def reclaim_expired(study: Study | None = None, *, now=None, limit: int | None = None) -> int:
    """Expire leases past their time and return their production slots, each exactly once.

    Leases being submitted right now are locked by the submit and skipped; returns how many
    leases were expired.
    """
    now = now or timezone.now()
    with transaction.atomic():
        qs = Assignment.objects.filter(status=LEASED, expires_at__lt=now)
        if study is not None:
            qs = qs.filter(study=study)
        rows = list(
            qs.select_for_update(skip_locked=True)
            .order_by("expires_at")
            .values_list("id", "unit_id", "purpose")[:limit]
        )
        if not rows:
            return 0
        Assignment.objects.filter(pk__in=[r[0] for r in rows], status=LEASED).update(
            status=Assignment.Status.EXPIRED, closed_at=now
        )
        _return_slots(r[1] for r in rows if r[2] == Purpose.PRODUCTION)
    return len(rows)


def abandon(assignment: Assignment, reason: str = "") -> bool:
    """The annotator gives an open lease back (skip): its slot returns to the pool, once, and
    the unit is not offered to this annotator again. `reason` is one of Assignment.SkipReason
    ("" when none was given). Returns whether this call closed the lease."""
    with transaction.atomic():
        changed = Assignment.objects.filter(pk=assignment.pk, status=LEASED).update(
            status=ABANDONED, closed_at=timezone.now(), skip_reason=reason
        )
        if changed and assignment.purpose == Purpose.PRODUCTION:
            _return_slots([assignment.unit_id])
    if changed:
        assignment.status, assignment.skip_reason = ABANDONED, reason
    return bool(changed)


def skip(annotator, study: Study, assignment_token: str, reason: str) -> str:
    """Skip the annotator's open task in this study with a reason (see `abandon`).

    Returns "skipped", "not_found" (no such task of theirs here), or "gone" when the task was
    answered or skipped meanwhile. Raises AnswerError for a reason not in the list.
    Expired leases are skipped too: they were shown, and the annotator said why they pass.
    """
    if reason not in Assignment.SkipReason.values:
        raise AnswerError("_skip_reason", "choose why you skip this task")
    assignment = (
        Assignment.objects.filter(token=assignment_token, annotator=annotator, study=study)
        .only("id", "unit_id", "purpose", "status")
        .first()
    )
    if assignment is None:
        return "not_found"
    if assignment.status == Assignment.Status.EXPIRED:
        changed = Assignment.objects.filter(
            pk=assignment.pk, status=Assignment.Status.EXPIRED
        ).update(status=ABANDONED, skip_reason=reason)
        return "skipped" if changed else "gone"  # a late answer took it back meanwhile
    return "skipped" if abandon(assignment, reason) else "gone"


# --- progress -------------------------------------------------------------------------------

# One statement: the production units this annotator could still be given (capped), and the
# study's gold and attention pools (what bounds how many injected tasks they can get).
_SUPPLY_SQL = (
    "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM annotation_unit u"
    " WHERE u.study_id = %s AND u.role = 'production' AND u.open_slots > 0"
    " AND NOT EXISTS (SELECT 1 FROM annotation_assignment a WHERE a.annotator_id = %s"
    " AND a.unit_id = u.id AND a.purpose = 'production'"
    " AND a.status IN ('leased', 'submitted', 'abandoned')) LIMIT %s) t),"
    " (SELECT COUNT(*) FROM annotation_unit g WHERE g.study_id = %s AND g.role = 'gold'),"
    " (SELECT COUNT(*) FROM annotation_unit c WHERE c.study_id = %s AND c.role = 'attention')"
)


def planned_total(study: Study, production: int, gold_pool: int, attention_pool: int) -> int:
    """The tasks an annotator is planned to get for `production` production units of theirs.

    Each production task brings rate_k / (1 - sum of rates) injected tasks of kind k on average
    (the seeded draw is independent per position), bounded by what can be injected at all: each
    gold or attention unit at most once per annotator, each earlier label repeated at most once;
    plus one standard deviation, so the plan is rarely outgrown (then it grows with `done`).
    A function of study-level numbers and the annotator's production supply only, never of the
    purpose of any task they were given, so it carries no signal about the task on screen.
    """
    if production <= 0:
        return 0
    rates = (study.gold_rate, study.repeat_rate, study.attention_rate)
    share = max(1.0 - sum(rates), 0.05)
    caps = (gold_pool, production, attention_pool)
    means = [min(production * rate / share, cap) for rate, cap in zip(rates, caps, strict=True)]
    # Plus one standard deviation of the count of the kinds not at their cap (about
    # sqrt(N r) / s, r their rates), so a run of injections rarely outgrows the plan.
    free = sum(r for r, m, c in zip(rates, means, caps, strict=True) if m < c)
    injected = min(sum(means) + math.sqrt(production * free) / share, sum(caps))
    return production + math.floor(injected + 0.5)


def work_state(annotator, study: Study) -> WorkState:
    """Progress and gate of one annotator: tasks done (answered or skipped), the planned total,
    and why they get no work now ("" if they do).

    The total is `planned_total` of the annotator's production supply: the production units
    they answered, skipped or hold, plus those still open to them. That sum is the same whether
    the task on screen is production work (its unit held) or injected (the unit it displaced
    still open), so the total does not move with the purpose of the task on screen; it moves
    only when the supply does (others fill units, leases expire, the lead adds work), and it is
    never below done + 1 while work remains (an unlucky run of injections just extends it).
    """
    now = timezone.now()
    cursor = connection.cursor()
    e = _load_enrolment(cursor, study, annotator, lock=False)
    production = Q(purpose=Purpose.PRODUCTION)
    counts = (
        Assignment.objects.filter(annotator=annotator, study=study)
        .exclude(purpose__in=TRAINING)
        .aggregate(
            done=Count("id", filter=Q(status__in=[Assignment.Status.SUBMITTED, ABANDONED])),
            skipped=Count("id", filter=Q(status=ABANDONED)),
            open=Count("id", filter=Q(status=LEASED, expires_at__gt=now)),
            active=Count("id", filter=Q(status__in=[LEASED, Assignment.Status.SUBMITTED])),
            closed=Count(
                "id", filter=production & Q(status__in=[Assignment.Status.SUBMITTED, ABANDONED])
            ),
            held=Count("id", filter=production & Q(status=LEASED)),
        )
    )
    done, open_ = counts["done"], counts["open"]
    reason = gate_reason(study, e)
    if reason:
        return WorkState(done=done, assigned=done + open_, blocked_reason=reason)
    if e.quota is not None and counts["active"] >= e.quota and open_ == 0:
        return WorkState(done=done, assigned=done, blocked_reason="quota")

    def supply():
        params = (study.id, annotator.id, ELIGIBLE_COUNT_CAP, study.id, study.id)
        cursor.execute(_SUPPLY_SQL, params)
        return cursor.fetchone()

    eligible, gold_pool, attention_pool = supply()
    if eligible == 0 and open_ == 0 and reclaim_expired(study, now=now):
        eligible, gold_pool, attention_pool = supply()
    if open_ == 0 and eligible == 0:
        return WorkState(done=done, assigned=done, blocked_reason="done")
    # Units left to this annotator, held or open: capped after the sum, so the cap cannot
    # tell a held unit from an open one either.
    left = min(eligible + counts["held"], ELIGIBLE_COUNT_CAP)
    total = max(planned_total(study, counts["closed"] + left, gold_pool, attention_pool), done + 1)
    if e.quota is not None:
        # Every task counts against the quota; skipped ones do not.
        total = min(total, max(e.quota + counts["skipped"], done + 1))
    return WorkState(done=done, assigned=total, blocked_reason="")


# --- laying the ring out ----------------------------------------------------------------------


@transaction.atomic
def balance_shuffle_keys(study: Study, seed: int | None = None) -> int:
    """Re-key the study's production units so every stretch of the ring is balanced by system.

    Units are grouped by the systems they show (one system for single outputs, the pair for
    pairwise units); each group is shuffled, and the ring is laid out in rounds that take one
    unit of each group in a random order, spreading smaller groups evenly. Keys stay random
    62-bit numbers (sorted to follow that sequence), so any walk over a stretch of the ring sees
    the study's system mix, while prompts stay scattered (a prompt's outputs do not come as a
    block, which would make a gold unit stand out by its missing siblings). Call after
    `build_units`, before work starts. Returns the number of units re-keyed.
    """
    rng = random.Random(seed)
    groups: dict[tuple, list[int]] = {}
    rows = (
        Unit.objects.filter(study=study, role=Unit.Role.PRODUCTION)
        .values_list("id", "members__output__system_id")
        .order_by("id", "members__position")
    )
    systems_of: dict[int, list[int]] = {}
    for unit_id, system_id in rows:
        systems_of.setdefault(unit_id, []).append(system_id)
    for unit_id, system_ids in systems_of.items():
        groups.setdefault(tuple(sorted(set(system_ids))), []).append(unit_id)
    # Each unit gets a fractional place (i + jitter) / n_group within its group's shuffled
    # sequence; sorting by place interleaves the groups in their proportions.
    placed = []
    for units in groups.values():
        rng.shuffle(units)
        n = len(units)
        placed += [((i + rng.random()) / n, unit_id) for i, unit_id in enumerate(units)]
    placed.sort()
    keys = sorted(rng.getrandbits(KEY_BITS) for _ in placed)
    updates = [
        Unit(id=unit_id, shuffle_key=key) for (_, unit_id), key in zip(placed, keys, strict=True)
    ]
    Unit.objects.bulk_update(updates, ["shuffle_key"], batch_size=2000)
    return len(updates)
