"""Rows to streamed text: CSV with every formula-like cell escaped, or JSON Lines.

Rows are sequences in the order of the columns (or dicts keyed by them). Both yield text in
blocks of rows, for a StreamingHttpResponse or a file.
"""

import csv
import io
import json
import operator
import re
from collections.abc import Iterable, Iterator, Sequence

from concord.csvsafe import FORMULA_STARTS, safe_cell

BLOCK = 2000
# A cell that starts like a formula, in the checked cells joined by newlines. It can also match
# inside a cell with a line break: such rows just take the exact, slower path.
_RISKY = re.compile("(?:^|\n)[" + re.escape("".join(FORMULA_STARTS)) + "]")


def csv_text(
    rows: Iterable[Sequence], columns: list[str], free_text: Iterable[str] | None = None
) -> Iterator[str]:
    """CSV text; the cells of `free_text` columns (default: all) that a spreadsheet would run as
    a formula are escaped (concord.csvsafe's rule). Name only the columns whose text can come
    from people or files: checking fewer cells is what keeps a million rows fast."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(columns)
    checked = (
        list(range(len(columns))) if free_text is None else [columns.index(c) for c in free_text]
    )
    cells = operator.itemgetter(*checked, checked[0])  # always a tuple, even of one column
    for n, row in enumerate(rows, start=1):
        if row.__class__ is dict:
            row = [row[c] for c in columns]
        if _RISKY.search("\n".join(map(str, cells(row)))):
            row = [safe_cell(v) if i in checked else v for i, v in enumerate(row)]
        writer.writerow(row)
        if n % BLOCK == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def jsonl_text(rows: Iterable, columns: list[str] | None = None) -> Iterator[str]:
    """JSON Lines: one object per row (a dict, or a sequence in the order of `columns`)."""
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    block = []
    for row in rows:
        block.append(encode(row if row.__class__ is dict else dict(zip(columns, row, strict=True))))
        if len(block) >= BLOCK:
            yield "\n".join(block) + "\n"
            block = []
    if block:
        yield "\n".join(block) + "\n"
