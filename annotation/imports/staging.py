"""Writing checked rows to the staging table in batches: COPY on PostgreSQL, bulk insert elsewhere.

Staged rows belong to one ImportJob and are deleted when it ends, whatever the outcome.
"""

import json

from django.db import connection

from annotation.models import ImportRow

COLUMNS = ("job_id", "line", "key", "a", "b", "c", "d", "text", "number", "data")
BATCH = 5000


class Stager:
    """Collects staged rows and flushes them every BATCH rows; memory stays at one batch."""

    def __init__(self, job_id: int):
        self.job_id = job_id
        self.pending: list[tuple] = []
        self.count = 0

    def add(self, line: int, row: dict) -> None:
        data = row.get("data")
        self.pending.append(
            (
                self.job_id,
                line,
                row.get("key", ""),
                row.get("a", ""),
                row.get("b", ""),
                row.get("c", ""),
                row.get("d", ""),
                row.get("text", ""),
                row.get("number"),
                None if data is None else json.dumps(data),
            )
        )
        if len(self.pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                sql = f"COPY annotation_importrow ({', '.join(COLUMNS)}) FROM STDIN"
                with cursor.cursor.copy(sql) as copy:
                    for row in self.pending:
                        copy.write_row(row)
        else:
            ImportRow.objects.bulk_create(
                [
                    ImportRow(**dict(zip(COLUMNS[:-1], r[:-1], strict=True)), data=_loads(r[-1]))
                    for r in self.pending
                ]
            )
        self.count += len(self.pending)
        self.pending = []


def _loads(value):
    return None if value is None else json.loads(value)


def analyze(*tables: str) -> None:
    """Fresh planner statistics (autovacuum comes too late for a table just bulk-loaded): with
    stale ones PostgreSQL takes 10 000 new prompts for 10 and loops where it should hash-join."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            for table in tables or ("annotation_importrow",):
                cursor.execute(f"ANALYZE {table}")


def clear(job_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM annotation_importrow WHERE job_id = %s", [job_id])
