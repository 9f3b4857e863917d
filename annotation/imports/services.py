"""Importing a file into a study, all or nothing: the one service behind the upload page, the
`import_content` command and the REST API.

- Read: the file is streamed line by line (bounded memory, annotation.imports.parsers); each row
  is checked on its own (types, ranges, known systems, the study's scheme) and staged in batches.
- Check and publish, in one transaction holding the study's row lock: whole-file checks run as
  SQL over the staged rows (duplicate ids, unknown prompts or units, rows that differ from what
  the study already holds); if any row is bad the transaction publishes nothing and the job lists
  every bad row (line, field, reason; the first CONCORD_IMPORT_MAX_ERRORS of them). Otherwise
  the rows are inserted; rows equal to existing content are skipped and counted as unchanged, so
  importing a file twice creates nothing the second time.
- A killed worker leaves the transaction uncommitted (PostgreSQL rolls it back), so nothing is
  published; the task is acks_late, and a rerun starts again from the file.
Text is stored as data: nothing in a file is fetched, evaluated or rendered unescaped.
"""

import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from annotation.imports import staging
from annotation.imports.kinds import CLEANERS, KINDS, Bad, Context
from annotation.imports.parsers import Reader, Row, RowError
from annotation.models import ImportJob, Study

Progress = Callable[[ImportJob], None]
log = logging.getLogger(__name__)
# The tables each kind writes (their statistics are refreshed after a publish).
WRITES = {
    "systems": ("annotation_system",),
    "prompts": ("annotation_prompt",),
    "outputs": ("annotation_output",),
    "comparisons": ("annotation_comparison",),
    "gold": ("annotation_goldanswer", "annotation_unit"),
    "labels": ("annotation_assignment", "annotation_label", "annotation_spaanswer"),
}
READS = {
    "outputs": ("annotation_prompt", "annotation_output"),
    "gold": ("annotation_unit",),
    # The label import looks up the outputs each unit shows: with the units just built and
    # unitoutput's statistics stale, PostgreSQL hashed every output of the database per batch.
    "labels": (
        "annotation_unit",
        "annotation_unitoutput",
        "annotation_label",
        "annotation_assignment",
    ),
}
PROGRESS_EVERY_SECONDS = 0.5


class ImportRejected(Exception):
    """Raised inside the publish transaction to roll it back when any row is bad."""


def max_errors() -> int:
    return int(getattr(settings, "CONCORD_IMPORT_MAX_ERRORS", 1000))


def max_line_bytes() -> int:
    return int(getattr(settings, "CONCORD_IMPORT_MAX_LINE_BYTES", 4 << 20))


def import_dir() -> Path:
    path = Path(getattr(settings, "CONCORD_IMPORT_DIR", Path(settings.BASE_DIR) / "var/imports"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def guess_format(file_name: str) -> str:
    """csv or jsonl from the file name (.csv, .jsonl, .ndjson, .json), else ValueError."""
    suffix = Path(file_name).suffix.lower()
    if suffix in (".csv", ".tsv"):
        return ImportJob.Format.CSV
    if suffix in (".jsonl", ".ndjson", ".json"):
        return ImportJob.Format.JSONL
    raise ValueError(f"cannot tell the format of {file_name!r}: name it .csv or .jsonl")


def _validate(kind: str, fmt: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown import kind {kind!r}; one of {', '.join(KINDS)}")
    if fmt not in ImportJob.Format.values:
        raise ValueError(f"unknown format {fmt!r}; one of csv, jsonl")


def start_import(
    study: Study, kind: str, fmt: str, upload, file_name: str, user=None, enqueue: bool = True
):
    """Store an upload (anything with .chunks() or .read()) and queue its import in a worker
    (on commit; `enqueue=False` leaves the sending to the caller).

    The request only copies the file to CONCORD_IMPORT_DIR in chunks; the worker does the rest.
    """
    from annotation.imports.tasks import run_import_task

    _validate(kind, fmt)
    job = ImportJob(study=study, kind=kind, format=fmt, file_name=file_name[:255], created_by=user)
    path = import_dir() / f"{job.token}.{fmt}"
    with open(path, "wb") as out:
        if hasattr(upload, "chunks"):
            for chunk in upload.chunks():
                out.write(chunk)
        else:
            shutil.copyfileobj(upload, out, 1 << 20)
    job.path = str(path)
    job.file_size = path.stat().st_size
    job.save()
    if enqueue:
        transaction.on_commit(lambda: run_import_task.delay(job.pk))
    return job


def run_job(job_id: int, progress: Progress | None = None) -> ImportJob:
    """Run a queued job from its stored file (the worker's entry point); a finished job is left
    alone, so a redelivered task does nothing twice."""
    job = ImportJob.objects.select_related("study").get(pk=job_id)
    if job.finished:
        return job
    try:
        with open(job.path, "rb") as stream:
            return _run(job, stream, progress)
    except FileNotFoundError:
        return _fail(job, [], 0, "The uploaded file is gone; upload it again.")
    finally:
        job.refresh_from_db(fields=["status"])
        if job.finished and Path(job.path).name.startswith(job.token):
            Path(job.path).unlink(missing_ok=True)  # an upload's copy, named by start_import


def import_file(
    study: Study,
    kind: str,
    stream,
    file_name: str,
    fmt: str | None = None,
    user=None,
    progress: Progress | None = None,
) -> ImportJob:
    """Import a binary stream in this process (the command and the tests); returns the job."""
    fmt = fmt or guess_format(file_name)
    _validate(kind, fmt)
    size = 0
    if hasattr(stream, "fileno"):
        try:
            size = os.fstat(stream.fileno()).st_size
        except OSError:
            size = 0
    job = ImportJob.objects.create(
        study=study,
        kind=kind,
        format=fmt,
        file_name=file_name[:255],
        path=str(getattr(stream, "name", "")),
        file_size=size,
        created_by=user,
    )
    return _run(job, stream, progress)


class _Errors:
    """Bad rows: all counted, the first `limit` kept."""

    def __init__(self, limit: int):
        self.limit = limit
        self.items: list[dict] = []
        self.count = 0

    def add(self, line: int, field: str, reason: str) -> None:
        self.count += 1
        if len(self.items) < self.limit:
            self.items.append({"line": line, "field": field, "reason": reason})


def _save(job: ImportJob, *fields: str) -> None:
    job.save(update_fields=[*fields, "updated_at"])


def _run(job: ImportJob, stream, progress: Progress | None) -> ImportJob:
    staging.clear(job.pk)
    study = job.study
    kind, clean = KINDS[job.kind], CLEANERS[job.kind]
    job.status, job.started_at = ImportJob.Status.READING, timezone.now()
    job.bytes_read = job.rows_read = 0
    _save(job, "status", "started_at", "bytes_read", "rows_read")
    ctx = Context.load(study)
    errors = _Errors(max_errors())
    stager = staging.Stager(job.pk)
    reader = Reader(stream, job.format, max_line_bytes())
    header_checked = job.format != ImportJob.Format.CSV
    rows = 0
    last = started = time.monotonic()
    phases: dict[str, float] = {}
    try:
        for item in reader:
            if isinstance(item, RowError):
                errors.add(item.line, item.field, item.reason)
                continue
            if not header_checked:
                header_checked = True
                if not _header_ok(kind, reader.header, errors):
                    break
            rows += 1
            _stage(kind, clean, ctx, item, stager, errors, per_row_fields=not reader.header)
            now = time.monotonic()
            if now - last >= PROGRESS_EVERY_SECONDS:
                last = now
                job.bytes_read, job.rows_read = reader.bytes_read, rows
                _save(job, "bytes_read", "rows_read")
                if progress:
                    progress(job)
        stager.finish()
        phases["read"] = time.monotonic() - started
        staging.analyze()
        if rows > 10_000:  # large files: the checks join the study's content too
            staging.analyze(*READS.get(job.kind, ()))
        phases["analyze"] = time.monotonic() - started - sum(phases.values())
        job.bytes_read, job.rows_read = reader.bytes_read, rows
        job.status = ImportJob.Status.CHECKING
        _save(job, "bytes_read", "rows_read", "status")
        if progress:
            progress(job)
        try:
            with transaction.atomic():
                Study.objects.select_for_update().filter(pk=study.pk).first()
                _check(kind, job, errors)
                phases["check"] = time.monotonic() - started - sum(phases.values())
                if errors.count:
                    raise ImportRejected
                created = _publish(kind, job)
                phases["publish"] = time.monotonic() - started - sum(phases.values())
                _test_pause()
                job.status, job.finished_at = ImportJob.Status.DONE, timezone.now()
                job.created, job.unchanged = created, rows - created
                job.message = f"{created:,} created, {rows - created:,} unchanged."
                _save(job, "status", "finished_at", "created", "unchanged", "message")
        except ImportRejected:
            return _fail(job, errors.items, errors.count)
        phases["commit"] = time.monotonic() - started - sum(phases.values())
        if created:
            staging.analyze(*WRITES[job.kind])
            phases["statistics"] = time.monotonic() - started - sum(phases.values())
    finally:
        stager.abandon()  # nothing, unless reading failed part-way
        staging.clear(job.pk)
        phases["clean-up"] = time.monotonic() - started - sum(phases.values())
        log.info(
            "import %s (%s, %s rows): %s",
            job.pk,
            job.kind,
            f"{rows:,}",
            ", ".join(f"{name} {seconds:.1f} s" for name, seconds in phases.items()),
        )
    if progress:
        progress(job)
    return job


def _header_ok(kind, header: list[str], errors: _Errors) -> bool:
    missing = kind.missing_columns(header)
    for column in missing:
        spellings = " or ".join(kind.columns[column])
        errors.add(1, column, f"missing column ({spellings})")
    for column in kind.unknown_columns(header):
        known = ", ".join(kind.columns)
        errors.add(1, column, f"unknown column (this file's columns are {known})")
    return not missing


def _stage(kind, clean, ctx, item: Row, stager, errors: _Errors, per_row_fields: bool) -> bool:
    if per_row_fields:
        # JSON Lines: every object names its own fields.
        for name in kind.unknown_columns(item.fields):
            errors.add(item.line, name, f"unknown field (expected {', '.join(kind.columns)})")
            return False
    try:
        staged = clean(kind.canonical(item.fields), ctx)
    except Bad as bad:
        errors.add(item.line, bad.field, bad.reason)
        return False
    stager.add(item.line, staged)
    return True


def _params(job: ImportJob) -> dict:
    guide = job.study.current_guide()
    return {
        "job": job.pk,
        "study": job.study_id,
        "workspace": str(job.study.workspace_id),
        "empty": "{}",
        "guide": guide.pk if guide else None,
        "now": timezone.now(),
    }


def _check(kind, job: ImportJob, errors: _Errors) -> None:
    params = _params(job)
    found, needs_met = [], {}
    with connection.cursor() as cursor:
        for number, check in enumerate(kind.checks, start=1):
            began = time.monotonic()
            if check.needs and check.needs not in needs_met:
                cursor.execute(check.needs, params)
                needs_met[check.needs] = cursor.fetchone() is not None
            if check.needs and not needs_met[check.needs]:
                continue
            sql = check.sql_for(connection.vendor)
            cursor.execute(f"SELECT count(*) FROM ({sql}) q", params)
            n = cursor.fetchone()[0]
            log.debug("import %s: check %s took %.2f s", job.pk, number, time.monotonic() - began)
            if not n:
                continue
            errors.count += n
            cursor.execute(f"{sql} ORDER BY 1 LIMIT {errors.limit}", params)
            found += [{"line": line, "field": f, "reason": r} for line, f, r in cursor.fetchall()]
    errors.items = sorted(errors.items + found, key=lambda e: e["line"])[: errors.limit]


def _publish(kind, job: ImportJob) -> int:
    if callable(kind.publish):
        return kind.publish(job, _params(job))
    params = _params(job)
    created = None
    with connection.cursor() as cursor:
        for sql in kind.publish:
            cursor.execute(sql, params)
            if created is None:
                created = max(cursor.rowcount, 0)
    return created or 0


def _test_pause() -> None:
    # Lets a test kill the worker while the publish transaction is open (tests/imports).
    seconds = float(os.environ.get("CONCORD_IMPORT_TEST_PAUSE_SECONDS", "0") or 0)
    if seconds:
        time.sleep(seconds)


def _fail(job: ImportJob, items: list, count: int, message: str = "") -> ImportJob:
    job.status, job.finished_at = ImportJob.Status.FAILED, timezone.now()
    job.errors, job.error_count = items, count
    job.message = message or (
        f"Nothing was published: {count:,} bad row{'s' if count != 1 else ''}. Fix them and"
        " upload the file again."
    )
    _save(job, "status", "finished_at", "errors", "error_count", "message")
    return job
