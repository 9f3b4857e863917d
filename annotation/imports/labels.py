"""Importing labels given in another tool: one row per label (per question for SPA), all or nothing.

Columns: id (the label's id there; rows of one SPA answer share it), annotator (a pseudonym),
unit (the unit's external id), value (the choice, score, "left"/"right"/"tie", or for SPA the
probability in percent), purpose (production, gold, repeat, attention; default production),
repeat_of (the id of the label a repeat repeats), left/right (pairwise: the systems shown on each
side), system_x/system_y/direction (SPA: the comparison asked and forward or reverse),
created_at, rendered_at (ISO 8601), duration_ms, active_ms, guide_version (a published number),
pool. Staged as key=id, a=annotator, b=unit, c=purpose, d=repeat_of, text=choice,
number=score or probability, data=the rest.

An annotator is a passwordless account named "imported-<workspace id>-<pseudonym>", enrolled in
the study with the pseudonym as its external id (what exports show). Each label gets a submitted
Assignment of its purpose, so the engine's overlap and one-label-per-unit rules hold for imported
labels too (checked before anything is written).
"""

import re
import uuid
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.imports import staging
from annotation.imports.kinds import STAGED, Bad, Check, Context, Kind, R, number, system, text
from annotation.models import (
    Assignment,
    Comparison,
    Enrolment,
    Label,
    SpaAnswer,
    Study,
    Unit,
)
from annotation.schemes import choice_values, likert_values

PSEUDONYM = re.compile(r"[A-Za-z0-9_.@+-]{1,100}")
PURPOSES = ("production", "gold", "repeat", "attention")
BATCH = 2000
NAMESPACE = uuid.UUID("6f1c0b8e-3f5e-4d4f-9a57-2b1c9d6f0a11")


def username_for(study: Study, pseudonym: str) -> str:
    return f"imported-{study.workspace_id}-{pseudonym}"


def _moment(fields: dict, name: str) -> str | None:
    raw = text(fields, name, max_len=64)
    if not raw:
        return None
    try:
        moment = parse_datetime(raw)
    except ValueError:
        moment = None
    if moment is None:
        raise Bad(name, f"{raw!r} is not an ISO 8601 date and time")
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment.isoformat()


def _millis(fields: dict, name: str) -> int | None:
    if fields.get(name) in (None, ""):
        return None
    return int(number(fields, name, 0, 2**31 - 1))


def clean_label(f: dict, ctx: Context) -> dict:
    study = ctx.study
    annotator = text(f, "annotator", required=True, max_len=100)
    if not PSEUDONYM.fullmatch(annotator):
        raise Bad("annotator", "use letters, digits and _ . @ + - only")
    unit = text(f, "unit", required=True, max_len=450)
    purpose = text(f, "purpose", max_len=16, default="production").lower()
    if purpose not in PURPOSES:
        raise Bad("purpose", f"{purpose!r} is not one of {', '.join(PURPOSES)}")
    repeat_of = text(f, "repeat_of", max_len=200)
    if purpose == "repeat" and not repeat_of:
        raise Bad("repeat_of", "a repeat names the id of the label it repeats")
    if repeat_of and purpose != "repeat":
        raise Bad("repeat_of", "only a label with purpose repeat repeats another")
    label_id = text(f, "id", max_len=200) or "|".join([annotator, unit, purpose, repeat_of])
    data: dict = {
        "created_at": _moment(f, "created_at"),
        "rendered_at": _moment(f, "rendered_at"),
        "duration_ms": _millis(f, "duration_ms"),
        "active_ms": _millis(f, "active_ms"),
        "pool": text(f, "pool", max_len=16, default=Enrolment.Pool.TRAINED),
    }
    if data["pool"] not in Enrolment.Pool.values:
        raise Bad("pool", f"{data['pool']!r} is not one of {', '.join(Enrolment.Pool.values)}")
    if f.get("guide_version") not in (None, ""):
        data["guide_version"] = int(number(f, "guide_version", 1, 2**31 - 1))
    choice, score = "", None
    kind = study.task_kind
    if kind in (Study.TaskKind.CATEGORICAL, Study.TaskKind.ORDINAL):
        choice = text(f, "value", required=True, max_len=100)
        if choice not in choice_values(study):
            raise Bad("value", f"{choice!r} is not one of {', '.join(choice_values(study))}")
    elif kind == Study.TaskKind.LIKERT:
        points = likert_values(study.label_scheme.get("points", []))
        if not points:
            raise Bad("value", "the study has no Likert points yet")
        score = number(f, "value", min(points), max(points))
        if score not in points:
            raise Bad("value", f"{score:g} is not a point on the scale")
    elif kind == Study.TaskKind.CONTINUOUS:
        score = number(f, "value", 0, 100)
    elif kind == Study.TaskKind.PAIRWISE:
        choice = text(f, "value", required=True, max_len=8).lower()
        allowed = ["left", "right"] + (
            ["tie"] if study.label_scheme.get("tie_allowed", True) else []
        )
        if choice not in allowed:
            raise Bad("value", f"{choice!r} is not one of {', '.join(allowed)}")
        data["left"], data["right"] = system(f, "left", ctx), system(f, "right", ctx)
        if data["left"] == data["right"]:
            raise Bad("right", "the two sides show the same system")
    else:
        score = number(f, "value", 0, 100)
        data["x"], data["y"] = system(f, "system_x", ctx), system(f, "system_y", ctx)
        direction = text(f, "direction", max_len=8, default="forward").lower()
        if direction not in ("forward", "reverse"):
            raise Bad("direction", f"{direction!r} is not forward (P[X>Y]) or reverse (P[Y>X])")
        data["reverse"] = direction == "reverse"
    return {
        "key": label_id,
        "a": annotator,
        "b": unit,
        "c": purpose,
        "d": repeat_of,
        "text": choice,
        "number": score,
        "data": data,
    }


def _json(field: str) -> str:
    """SQL for a text field of the staged data (->> works on PostgreSQL and SQLite >= 3.38)."""
    return f"(r.data ->> '{field}')"


# Every match on a unit's or label's external_id also says `external_id <> ''`: the condition of
# their partial unique indexes, which PostgreSQL cannot infer from `= r.key` and without which
# it scans the study's rows (1.5 s per batch of 2,000 units instead of 5 ms).
_EXISTING = (
    "EXISTS (SELECT 1 FROM annotation_label l WHERE l.study_id = %(study)s AND"
    " l.external_id = r.key AND l.external_id <> '')"
)
_UNIT = (
    "JOIN annotation_unit u ON u.study_id = %(study)s AND u.external_id = r.b"
    " AND u.external_id <> ''"
)

CHECKS = (
    Check(
        f"SELECT r.line, 'unit', 'unknown unit ' || r.b FROM {R} WHERE {STAGED} AND NOT EXISTS"
        " (SELECT 1 FROM annotation_unit u WHERE u.study_id = %(study)s AND u.external_id = r.b"
        " AND u.external_id <> '')"
    ),
    Check(
        # One row per label, or per question of an SPA label.
        f"SELECT line, 'id', 'duplicate label ' || key || ' (first on line ' || first || ')' FROM"
        f" (SELECT r.line, r.key, min(r.line) OVER (PARTITION BY r.key, {_json('x')},"
        f" {_json('y')}, {_json('reverse')}) AS first FROM {R} WHERE {STAGED}) d"
        " WHERE line > first"
    ),
    Check(
        f"SELECT line, 'id', 'rows of label ' || key || ' differ in annotator, unit, purpose or"
        f" repeat_of' FROM (SELECT r.line, r.key, r.a || '|' || r.b || '|' || r.c || '|' || r.d"
        f" AS v, first_value(r.a || '|' || r.b || '|' || r.c || '|' || r.d) OVER (PARTITION BY"
        f" r.key ORDER BY r.line) AS f FROM {R} WHERE {STAGED}) d WHERE v <> f"
    ),
    Check(
        f"SELECT r.line, 'id', 'label ' || r.key || ' already exists with another unit or"
        f" purpose' FROM {R} JOIN annotation_label l ON l.study_id = %(study)s AND"
        f" l.external_id = r.key AND l.external_id <> '' JOIN annotation_unit u ON u.id = l.unit_id"
        f" WHERE {STAGED} AND"
        " (u.external_id <> r.b OR l.purpose <> r.c)"
    ),
    Check(
        f"SELECT line, 'annotator', 'annotator ' || a || ' labels unit ' || b || ' in production"
        f" twice (first on line ' || first || ')' FROM (SELECT r.line, r.a, r.b, r.key,"
        f" min(r.line) OVER (PARTITION BY r.a, r.b) AS first, first_value(r.key) OVER"
        f" (PARTITION BY r.a, r.b ORDER BY r.line) AS fk FROM {R} WHERE {STAGED} AND"
        f" r.c = 'production') d WHERE key <> fk"
    ),
    Check(
        f"SELECT r.line, 'annotator', 'annotator ' || r.a || ' already has a production label on"
        f" unit ' || r.b FROM {R} {_UNIT} JOIN annotation_label l ON l.unit_id = u.id AND"
        " l.purpose = 'production' JOIN auth_user au ON au.id = l.annotator_id AND au.username ="
        f" 'imported-' || %(workspace)s || '-' || r.a WHERE {STAGED} AND r.c = 'production' AND"
        f" NOT {_EXISTING}"
    ),
    Check(
        # Production labels beyond the unit's overlap (counting labels it already has).
        f"SELECT line, 'unit', 'unit ' || b || ' would get more production labels than its"
        f" overlap of ' || overlap FROM (SELECT n.line, n.b, u.overlap, (SELECT count(*) FROM"
        f" annotation_assignment a WHERE a.unit_id = u.id AND a.purpose = 'production' AND"
        f" a.status IN ('leased', 'submitted')) + row_number() OVER (PARTITION BY n.b ORDER BY"
        f" n.line) AS n_labels FROM (SELECT min(r.line) AS line, r.key, r.b FROM {R} WHERE"
        f" {STAGED} AND r.c = 'production' AND NOT {_EXISTING} GROUP BY r.key, r.b) n JOIN"
        f" annotation_unit u ON u.study_id = %(study)s AND u.external_id = n.b AND"
        " u.external_id <> '') d"
        " WHERE n_labels > overlap"
    ),
    Check(
        f"SELECT r.line, 'repeat_of', 'repeats label ' || r.d || ', which is neither in this"
        f" file nor in the study' FROM {R} WHERE {STAGED} AND r.d <> '' AND NOT EXISTS (SELECT 1"
        f" FROM annotation_importrow o WHERE o.job_id = %(job)s AND o.key = r.d AND o.c <>"
        " 'repeat') AND NOT EXISTS (SELECT 1 FROM annotation_label l WHERE l.study_id ="
        " %(study)s AND l.external_id = r.d AND l.external_id <> '')"
    ),
    Check(
        f"SELECT r.line, 'guide_version', 'the study has no guide version ' ||"
        f" {_json('guide_version')} FROM {R} WHERE {STAGED} AND {_json('guide_version')} IS NOT"
        " NULL AND NOT EXISTS (SELECT 1 FROM annotation_guideversion g WHERE g.study_id ="
        f" %(study)s AND CAST(g.number AS TEXT) = {_json('guide_version')})"
    ),
    Check(
        f"SELECT r.line, 'left', 'unit ' || r.b || ' does not show ' || {_json('left')} || ' and'"
        f" || ' ' || {_json('right')} FROM {R} {_UNIT} WHERE {STAGED} AND"
        f" {_json('left')} IS NOT NULL AND (SELECT count(*) FROM annotation_unitoutput m JOIN"
        " annotation_output o ON o.id = m.output_id JOIN annotation_system s ON s.id ="
        f" o.system_id WHERE m.unit_id = u.id AND s.name IN ({_json('left')},"
        f" {_json('right')})) <> 2"
    ),
    Check(
        f"SELECT r.line, 'system_x', 'the study does not compare ' || {_json('x')} || ' with '"
        f" || {_json('y')} FROM {R} WHERE {STAGED} AND {_json('x')} IS NOT NULL AND NOT EXISTS"
        " (SELECT 1 FROM annotation_comparison c JOIN annotation_system sx ON sx.id ="
        " c.system_x_id JOIN annotation_system sy ON sy.id = c.system_y_id WHERE c.study_id ="
        f" %(study)s AND sx.name = {_json('x')} AND sy.name = {_json('y')})"
    ),
)


def publish(job, params: dict) -> int:
    """Create users, enrolments, assignments, labels and SPA answers for the new labels."""
    study = job.study
    users = _annotators(study, job.pk)
    positions = _positions(study)
    systems = dict(study.systems.values_list("name", "id"))
    guides = dict(study.guide_versions.values_list("number", "id"))
    comparisons = {
        (c.system_x.name, c.system_y.name): c.id
        for c in Comparison.objects.filter(study=study).select_related("system_x", "system_y")
    }
    sql = (
        "SELECT r.key, r.line, r.a, r.b, r.c, r.d, r.text, r.number, r.data FROM"
        " annotation_importrow r WHERE r.job_id = %s AND NOT EXISTS (SELECT 1 FROM"
        " annotation_label l WHERE l.study_id = %s AND l.external_id = r.key AND"
        " l.external_id <> '')"
        " ORDER BY CASE WHEN r.c = 'repeat' THEN 1 ELSE 0 END, r.key, r.line"
    )
    created = 0
    group: list = []
    batch: list[list] = []
    cursor = connection.chunked_cursor()
    cursor.execute(sql, [job.pk, study.pk])
    json_field = Label._meta.get_field("value")
    for row in cursor:
        if group and row[0] != group[0][0]:
            batch.append(group)
            group = []
            if len(batch) >= BATCH:
                created += _write(study, batch, users, positions, guides, comparisons, systems)
                batch = []
        data = row[8]
        if isinstance(data, str):
            data = json_field.from_db_value(data, None, connection)
        group.append((*row[:8], data))
    if group:
        batch.append(group)
    if batch:
        created += _write(study, batch, users, positions, guides, comparisons, systems)
    cursor.close()
    _recount_open_slots(study, job.pk)
    return created


def _positions(study: Study) -> dict[int, int]:
    from django.db.models import Max

    return dict(
        Assignment.objects.filter(study=study)
        .values("annotator_id")
        .annotate(top=Max("position"))
        .values_list("annotator_id", "top")
    )


def _annotators(study: Study, job_id: int) -> dict[str, int]:
    """pseudonym -> user id: passwordless accounts, created and enrolled where new."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT r.a, min(r.data ->> 'pool') FROM annotation_importrow r WHERE r.job_id = %s"
            " GROUP BY r.a",
            [job_id],
        )
        wanted = dict(cursor.fetchall())
    user_model = get_user_model()
    names = {username_for(study, p): p for p in wanted}
    existing = dict(user_model.objects.filter(username__in=names).values_list("username", "id"))
    for username in names:
        if username not in existing:
            user = user_model(username=username)
            user.set_unusable_password()
            user.save()
            existing[username] = user.id
    enrolled = set(Enrolment.objects.filter(study=study).values_list("user_id", flat=True))
    Enrolment.objects.bulk_create(
        [
            Enrolment(study=study, user_id=existing[u], pool=wanted[p], external_id=p)
            for u, p in names.items()
            if existing[u] not in enrolled
        ]
    )
    return {p: existing[u] for u, p in names.items()}


def _write(study, batch, users, positions, guides, comparisons, systems) -> int:
    """Assignments, labels and SPA answers for one batch of label groups, as plain rows: COPYed
    on PostgreSQL (ids drawn from the sequence first), through the ORM elsewhere."""
    unit_ids = {group[0][3] for group in batch}
    units = {
        ext: (pk, kind)
        for ext, pk, kind in Unit.objects.filter(study=study, external_id__in=unit_ids)
        .exclude(external_id="")
        .order_by()
        .values_list("external_id", "id", "kind")
    }
    members: dict[int, dict[str, int]] = {}
    for unit_id, output_id, name in _members([pk for pk, _ in units.values()]):
        members.setdefault(unit_id, {})[name] = output_id
    repeat_keys = {group[0][5] for group in batch if group[0][5]}
    originals = dict(
        Label.objects.filter(study=study, external_id__in=repeat_keys)
        .exclude(external_id="")
        .order_by()
        .values_list("external_id", "assignment_id")
    )
    now = timezone.now()
    assignments, labels, answers = [], [], []
    for group in batch:
        key, line, pseudonym, unit_ext, purpose, repeat_of, choice, score, data = group[0]
        unit_id, unit_kind = units[unit_ext]
        annotator = users[pseudonym]
        positions[annotator] = position = positions.get(annotator, 0) + 1
        moment = _parse(data.get("created_at")) or now
        guide = guides.get(data.get("guide_version"))
        by_system = members.get(unit_id, {})
        winner_name = None
        if unit_kind == Unit.Kind.PAIR:
            presentation = {
                "kind": "pair",
                "left": by_system.get(data.get("left")),
                "right": by_system.get(data.get("right")),
            }
            winner_name = data.get(choice) if choice in ("left", "right") else None
        elif unit_kind == Unit.Kind.SPA_BATCH:
            presentation = {
                "kind": "spa_batch",
                "imported": True,
                "questions": [
                    {
                        "comparison": comparisons[(g[8]["x"], g[8]["y"])],
                        "reverse": bool(g[8]["reverse"]),
                    }
                    for g in group
                ],
            }
        else:
            presentation = {"kind": "output", "output": next(iter(by_system.values()), None)}
        assignments.append(
            {
                "study_id": study.pk,
                "unit_id": unit_id,
                "annotator_id": annotator,
                "purpose": purpose,
                "status": Assignment.Status.SUBMITTED,
                "position": position,
                "presentation": presentation,
                "repeat_of_id": originals.get(repeat_of) if repeat_of else None,
                "guide_version_id": guide,
                "leased_at": moment,
                "expires_at": moment,
                "closed_at": moment,
            }
        )
        labels.append(
            {
                "study_id": study.pk,
                "unit_id": unit_id,
                "annotator_id": annotator,
                "purpose": purpose,
                "idempotency_key": uuid.uuid5(NAMESPACE, f"{study.token}:{key}"),
                "choice": choice,
                "score": score if unit_kind != Unit.Kind.SPA_BATCH else None,
                "winner_id": systems.get(winner_name),
                "value": {"value": choice or score, "imported_from_line": line},
                "guide_version_id": guide,
                "rendered_at": _parse(data.get("rendered_at")),
                "duration_ms": data.get("duration_ms"),
                "active_ms": data.get("active_ms"),
                "external_id": key,
                "created_at": moment,
            }
        )
        if unit_kind == Unit.Kind.SPA_BATCH:
            answers.append(
                [
                    (comparisons[(g[8]["x"], g[8]["y"])], bool(g[8]["reverse"]), g[7], i)
                    for i, g in enumerate(group)
                ]
            )
        else:
            answers.append([])
    copying = connection.vendor == "postgresql"
    if copying:  # ids drawn from the sequence first, so the rows can be COPYed
        for row, pk in zip(assignments, _next_ids(Assignment, len(assignments)), strict=True):
            row["id"] = pk
    else:
        made = Assignment.objects.bulk_create(
            [Assignment(**row) for row in assignments], batch_size=BATCH
        )
        for row, a in zip(assignments, made, strict=True):
            row["id"] = a.id
    # A repeat of a label from this same batch: link it now that the original has its id.
    in_batch = {group[0][0]: row["id"] for group, row in zip(batch, assignments, strict=True)}
    relinked = []
    for group, row in zip(batch, assignments, strict=True):
        repeat_of = group[0][5]
        if repeat_of and row["repeat_of_id"] is None and repeat_of in in_batch:
            row["repeat_of_id"] = in_batch[repeat_of]
            if not copying:  # the COPY writes the link with the row; an insert came earlier
                relinked.append(Assignment(id=row["id"], repeat_of_id=row["repeat_of_id"]))
    for row, label in zip(assignments, labels, strict=True):
        label["assignment_id"] = row["id"]
    if copying:
        copy_rows(Assignment, assignments)
        copy_rows(Label, labels)
    else:
        Assignment.objects.bulk_update(relinked, ["repeat_of"], batch_size=BATCH)
        insert_as_built([Label(**row) for row in labels])
    if any(answers):
        ids = dict(
            Label.objects.filter(
                study=study, external_id__in=[label["external_id"] for label in labels]
            )
            .exclude(external_id="")
            .values_list("external_id", "id")
        )
        SpaAnswer.objects.bulk_create(
            [
                SpaAnswer(
                    label_id=ids[label["external_id"]],
                    comparison_id=c,
                    reverse=r,
                    probability=p,
                    position=i,
                )
                for label, rows in zip(labels, answers, strict=True)
                for c, r, p, i in rows
            ],
            batch_size=BATCH,
        )
    return len(labels)


def _next_ids(model, n: int) -> list[int]:
    """n ids from the table's own id sequence (PostgreSQL), as an INSERT would have taken."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [model._meta.db_table, model._meta.pk.column, n],
        )
        return [pk for (pk,) in cursor.fetchall()]


def copy_rows(model, rows: list[dict]) -> None:
    """COPY rows (dicts by attribute name) into the model's table (PostgreSQL). A field a row
    leaves out gets its default (a callable one, like a token, drawn per row); no field's
    pre_save runs, so an imported created_at (auto_now_add) is written as given; and no
    statement of 40,000 placeholders is built and parsed per batch."""
    from django.db import models
    from psycopg.types.json import Jsonb

    if not rows:
        return
    fields = [f for f in model._meta.concrete_fields if not f.primary_key or f.attname in rows[0]]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    plan = []
    for f in fields:
        given = f.has_default()  # NOT_PROVIDED, the marker of no default, is a class: callable
        fill = f.default if given and callable(f.default) else None
        constant = f.get_default() if given and not fill else None
        plan.append((f.attname, fill, constant, isinstance(f, models.JSONField)))
    sql = f"COPY {model._meta.db_table} ({columns}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for row in rows:
            out = []
            for name, fill, constant, is_json in plan:
                value = row[name] if name in row else (fill() if fill else constant)
                out.append(Jsonb(value) if is_json and value is not None else value)
            copy.write_row(out)


def insert_as_built(labels: list[Label]) -> None:
    """INSERT the labels with every field as built, in one statement per BATCH rows.

    Unlike bulk_create, no field's pre_save runs, so an imported created_at (an auto_now_add
    field) is written as given instead of being stamped now and updated back row by row; and no
    ids are read back (the SPA answers find theirs by external id).
    """
    fields = [f for f in Label._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    size = min(BATCH, connection.ops.bulk_batch_size(fields, labels))
    with connection.cursor() as cursor:
        for start in range(0, len(labels), size):
            part = labels[start : start + size]
            values = [
                f.get_db_prep_save(getattr(label, f.attname), connection)
                for label in part
                for f in fields
            ]
            cursor.execute(
                f"INSERT INTO {Label._meta.db_table} ({columns}) VALUES"
                f" {', '.join([one] * len(part))}",
                values,
            )


def _members(unit_ids: list[int]):
    from annotation.models import UnitOutput

    # No ordering: the models' default one joins the units and the study only to sort (2 s per
    # batch of 2,000 units on a large database).
    return (
        UnitOutput.objects.filter(unit_id__in=unit_ids)
        .order_by()
        .values_list("unit_id", "output_id", "output__system__name")
    )


def _parse(value) -> datetime | None:
    return parse_datetime(value) if value else None


def _recount_open_slots(study: Study, job_id: int) -> None:
    """Open slots = overlap - live production leases and labels, for the units labelled.

    One grouped join, after fresh statistics: the assignments were just inserted in this
    transaction, and with the table's old statistics (nearly empty) PostgreSQL counted each
    unit's assignments by a sequential scan: 170 s for 50,000 units.
    """
    staging.analyze("annotation_assignment")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE annotation_unit SET open_slots = CASE WHEN c.overlap > c.n THEN c.overlap - c.n"
            " ELSE 0 END FROM (SELECT u.id AS uid, u.overlap, count(a.id) AS n FROM"
            " annotation_unit u JOIN (SELECT DISTINCT r.b FROM annotation_importrow r WHERE"
            " r.job_id = %s) r ON r.b = u.external_id AND u.external_id <> '' LEFT JOIN"
            " annotation_assignment a ON"
            " a.unit_id = u.id AND a.purpose = 'production' AND a.status IN ('leased',"
            " 'submitted') WHERE u.study_id = %s GROUP BY u.id, u.overlap) c"
            " WHERE annotation_unit.id = c.uid",
            [job_id, study.pk],
        )


LABELS = Kind(
    name="labels",
    columns={
        "id": ("id", "label_id"),
        "annotator": ("annotator", "pseudonym", "rater"),
        "unit": ("unit", "unit_id"),
        "value": ("value", "probability", "choice", "score"),
        "purpose": ("purpose",),
        "repeat_of": ("repeat_of",),
        "left": ("left", "left_system"),
        "right": ("right", "right_system"),
        "system_x": ("system_x", "x"),
        "system_y": ("system_y", "y"),
        "direction": ("direction",),
        "created_at": ("created_at", "timestamp"),
        "rendered_at": ("rendered_at",),
        "duration_ms": ("duration_ms",),
        "active_ms": ("active_ms",),
        "guide_version": ("guide_version",),
        "pool": ("pool",),
    },
    required=("annotator", "unit", "value"),
    checks=CHECKS,
    publish=publish,
)
