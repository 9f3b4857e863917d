"""Writing checked rows to the staging table: one COPY on PostgreSQL, bulk inserts elsewhere.

Staged rows belong to one ImportJob and are deleted when it ends, whatever the outcome.
"""

import contextlib
import json

from django.db import connection
from psycopg.copy import QueuedLibpqWriter

from annotation.models import ImportRow

COLUMNS = ("job_id", "line", "key", "a", "b", "c", "d", "text", "number", "data")
BATCH = 5000


class Stager:
    """Stages checked rows as they come; memory stays bounded.

    PostgreSQL: one COPY for the whole file, on a connection of its own and fed by psycopg's
    writer thread, so the server stores rows while Python parses the next ones (two processes at
    work, not one waiting for the other), and the main connection stays free for the job's
    progress. The COPY's transaction commits in finish(): an import killed while reading leaves
    nothing staged. Elsewhere: bulk inserts of BATCH rows on the main connection.
    """

    def __init__(self, job_id: int):
        self.job_id = job_id
        self.pending: list[tuple] = []
        self.count = 0
        self._copy = None
        self._open = contextlib.ExitStack()
        self._postgres = connection.vendor == "postgresql"

    def add(self, line: int, row: dict) -> None:
        data = row.get("data")
        values = (
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
        self.count += 1
        if self._postgres:
            if self._copy is None:
                self._copy = self._start_copy()
            self._copy.write_row(values)
            return
        self.pending.append(values)
        if len(self.pending) >= BATCH:
            self._insert()

    def finish(self) -> None:
        """Every added row is staged and visible to the main connection when this returns."""
        if self._postgres:
            self._open.close()  # ends the COPY, commits and closes its connection, in that order
            self._copy = None
        else:
            self._insert()

    def abandon(self) -> None:
        """Drop what is not yet committed (an error while reading); safe after finish()."""
        self._open.__exit__(RuntimeError, RuntimeError("import abandoned"), None)
        self._copy = None

    def _start_copy(self):
        own = connection.Database.connect(**connection.get_connection_params())
        self._open.callback(own.close)
        self._open.enter_context(own.transaction())
        cursor = self._open.enter_context(own.cursor())
        sql = f"COPY annotation_importrow ({', '.join(COLUMNS)}) FROM STDIN"
        return self._open.enter_context(cursor.copy(sql, writer=QueuedLibpqWriter(cursor)))

    def _insert(self) -> None:
        if self.pending:
            ImportRow.objects.bulk_create(
                [
                    ImportRow(**dict(zip(COLUMNS[:-1], r[:-1], strict=True)), data=_loads(r[-1]))
                    for r in self.pending
                ]
            )
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
