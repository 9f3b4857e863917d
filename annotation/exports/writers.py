"""Rows to streamed text: CSV with every formula-like cell escaped, or JSON Lines.

Both yield text in blocks of rows, for a StreamingHttpResponse or a file.
"""

import csv
import io
import json
from collections.abc import Iterable, Iterator

from concord.csvsafe import safe_row

BLOCK = 2000


def csv_text(rows: Iterable[dict], columns: list[str]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(columns)
    for n, row in enumerate(rows, start=1):
        writer.writerow(safe_row(["" if row[c] is None else row[c] for c in columns]))
        if n % BLOCK == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def jsonl_text(rows: Iterable[dict]) -> Iterator[str]:
    block = []
    for row in rows:
        block.append(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
        if len(block) >= BLOCK:
            yield "\n".join(block) + "\n"
            block = []
    if block:
        yield "\n".join(block) + "\n"
