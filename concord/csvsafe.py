"""CSV that a spreadsheet opens as data: every CSV download and export writes through here.

A text cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return is read by Excel,
LibreOffice and Google Sheets as a formula (CSV/formula injection, OWASP): such a cell is written
with a leading apostrophe, which spreadsheets show as text and never evaluate. Numbers stay
numbers (a negative float is not text); only strings are touched.
"""

import csv
from collections.abc import Iterable, Iterator

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value):
    """The value as a spreadsheet should receive it: text that could start a formula, escaped."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def safe_row(row: Iterable) -> list:
    return [safe_cell(value) for value in row]


class SafeWriter:
    """`csv.writer` with every row escaped by `safe_row` (same `writerow`/`writerows`)."""

    def __init__(self, stream, **kwargs):
        self._writer = csv.writer(stream, **kwargs)

    def writerow(self, row: Iterable):
        return self._writer.writerow(safe_row(row))

    def writerows(self, rows: Iterable[Iterable]) -> None:
        for row in rows:
            self.writerow(row)


def writer(stream, **kwargs) -> SafeWriter:
    return SafeWriter(stream, **kwargs)


class _Echo:
    def write(self, value):
        return value


def lines(rows: Iterable[Iterable], **kwargs) -> Iterator[str]:
    """Escaped CSV text, one line per row, for a StreamingHttpResponse."""
    out = SafeWriter(_Echo(), **kwargs)
    return (out.writerow(row) for row in rows)
