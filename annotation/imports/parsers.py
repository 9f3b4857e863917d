"""Reading an import file row by row with bounded memory: CSV (header first) or JSON Lines.

The file is read line by line as bytes, each line at most `max_line_bytes` (a longer line is
skipped to its end without being held) and decoded as strict UTF-8; a bad line becomes a
`RowError` naming its line, and reading goes on so that every bad row is reported.
"""

import codecs
import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

SKIP_CHUNK = 1 << 20


@dataclass(frozen=True)
class RowError:
    line: int
    field: str
    reason: str

    def as_dict(self) -> dict:
        return {"line": self.line, "field": self.field, "reason": self.reason}


@dataclass(frozen=True)
class Row:
    """One record: the physical line it starts on and its fields (str from CSV, JSON from JSONL)."""

    line: int
    fields: dict


class _Lines:
    """Physical lines of a binary stream, decoded, with the bytes read so far and bad lines."""

    def __init__(self, stream: BinaryIO, max_line_bytes: int):
        self.stream = stream
        self.max = max_line_bytes
        self.bytes_read = 0
        self.number = 0
        self.bad: dict[int, str] = {}  # line -> reason

    def __iter__(self) -> Iterator[str]:
        while True:
            chunk = self.stream.readline(self.max + 1)
            if not chunk:
                return
            self.number += 1
            self.bytes_read += len(chunk)
            if len(chunk) > self.max and not chunk.endswith(b"\n"):
                # Too long: skip to the end of the line in bounded chunks, never holding it.
                while chunk and not chunk.endswith(b"\n"):
                    chunk = self.stream.readline(SKIP_CHUNK)
                    self.bytes_read += len(chunk)
                self.bad[self.number] = f"line is longer than the limit of {self.max:,} bytes"
                yield "\n"
                continue
            if self.number == 1 and chunk.startswith(codecs.BOM_UTF8):
                chunk = chunk[len(codecs.BOM_UTF8) :]
            try:
                yield chunk.decode("utf-8")
            except UnicodeDecodeError as error:
                byte = chunk[error.start]
                self.bad[self.number] = (
                    f"not UTF-8 text (byte 0x{byte:02x} at position {error.start + 1});"
                    " save the file as UTF-8"
                )
                yield chunk.decode("utf-8", errors="replace")


class Reader:
    """Iterate `Row`s or `RowError`s of a file; `bytes_read` tells how far it got."""

    def __init__(self, stream: BinaryIO, fmt: str, max_line_bytes: int):
        self.lines = _Lines(stream, max_line_bytes)
        self.fmt = fmt
        self.header: list[str] = []

    @property
    def bytes_read(self) -> int:
        return self.lines.bytes_read

    def __iter__(self) -> Iterator[Row | RowError]:
        return self._csv() if self.fmt == "csv" else self._jsonl()

    def _bad_line(self, first: int, last: int) -> RowError | None:
        if not self.lines.bad:
            return None
        for n in range(first, last + 1):
            if n in self.lines.bad:
                return RowError(n, "(line)", self.lines.bad.pop(n))
        return None

    def _jsonl(self) -> Iterator[Row | RowError]:
        for text in self.lines:
            n = self.lines.number
            bad = self._bad_line(n, n)
            if bad:
                yield bad
                continue
            if not text.strip():
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as error:
                yield RowError(n, "(line)", f"not valid JSON: {error.msg} at column {error.colno}")
                continue
            if not isinstance(value, dict):
                yield RowError(n, "(line)", "each line must be one JSON object {...}")
                continue
            yield Row(n, {str(k).strip().lower(): v for k, v in value.items()})

    def _csv(self) -> Iterator[Row | RowError]:
        csv.field_size_limit(self.lines.max)
        reader = csv.reader(iter(self.lines), strict=True)
        first = 1
        while True:
            try:
                record = next(reader)
            except StopIteration:
                return
            except csv.Error as error:
                last = self.lines.number
                reason = f"bad CSV in the record starting on this line: {error}"
                if "end of data" in str(error):
                    reason += " (a quote opened here is never closed)"
                yield self._bad_line(first, last) or RowError(first, "(line)", reason)
                first = last + 1
                continue
            last = reader.line_num
            bad = self._bad_line(first, last)
            start, first = first, last + 1
            if bad:
                yield bad
                if not self.header:
                    return  # no header, no file
                continue
            if not record or (len(record) == 1 and not record[0].strip()):
                continue
            if not self.header:
                self.header = [name.strip().lower() for name in record]
                continue
            if len(record) != len(self.header):
                yield RowError(
                    start,
                    "(line)",
                    f"has {len(record)} fields but the header has {len(self.header)}",
                )
                continue
            yield Row(start, dict(zip(self.header, record, strict=True)))
