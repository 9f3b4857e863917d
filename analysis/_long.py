"""Long-format helpers shared by the analysis modules (one row per label: item, rater, label).

Validate the columns at the edge and encode each into dense integer codes, without Python loops.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["as_array", "check_same_length", "encode", "group_ends", "unique_inverse"]

# Integer columns whose span (max - min + 1) is at most this many times their length are encoded
# with one np.bincount pass instead of a sort.
_DENSE_SPAN_FACTOR = 4
_DENSE_SPAN_MIN = 1 << 16


def as_array(values: Iterable[Any], name: str, allow_nan: bool = False) -> np.ndarray:
    """Return `values` as a 1-D numpy array, raising ValueError naming `name` on bad input.

    Rejects arrays that are not one-dimensional and any None or NaN entry (a missing label is
    simply absent from the long format, never encoded as a placeholder). allow_nan=True keeps
    them, for a column where NaN means something of its own (an undefined p-value, a score the
    caller drops and counts).
    """
    if isinstance(values, np.ndarray):
        arr = values
    else:
        if not isinstance(values, str | bytes) and not hasattr(values, "__len__"):
            values = list(values)  # a generator or other one-shot iterable
        try:
            arr = np.asarray(values)
        except ValueError:  # sequences of different lengths: each is one element, checked later
            arr = np.fromiter(values, dtype=object, count=len(values))
        if arr.ndim > 1:  # e.g. a list of tuple ids: keep each tuple as one hashable id
            arr = np.fromiter(values, dtype=object, count=len(values))
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a one-dimensional sequence, got shape {arr.shape}")
    kind = arr.dtype.kind
    if allow_nan and kind in "fcO":
        pass
    elif kind == "f" or kind == "c":
        bad = np.flatnonzero(np.isnan(arr))
        if bad.size:
            raise ValueError(
                f"{name}: contains NaN at row {bad[0]}; a missing label is simply absent "
                "(drop the row)"
            )
    elif kind == "O":
        bad = np.flatnonzero(np.equal(arr, None))
        if bad.size:
            raise ValueError(
                f"{name}: contains None at row {bad[0]}; a missing label is simply absent "
                "(drop the row)"
            )
        bad = np.flatnonzero(np.not_equal(arr, arr))  # NaN is the only value unequal to itself
        if bad.size:
            raise ValueError(
                f"{name}: contains NaN at row {bad[0]}; a missing label is simply absent "
                "(drop the row)"
            )
    elif kind not in "iubUSM":
        raise ValueError(f"{name}: unsupported dtype {arr.dtype}")
    return arr


def check_same_length(**columns: np.ndarray) -> int:
    """Return the common length of `columns`, raising ValueError naming the first that differs."""
    names = list(columns)
    n = len(columns[names[0]])
    for name in names[1:]:
        if len(columns[name]) != n:
            raise ValueError(
                f"{name}: length {len(columns[name])} differs from {names[0]} length {n}"
            )
    return n


def unique_inverse(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique values and codes (``uniques[codes] == arr``) of a numeric array; one sort."""
    n = arr.size
    if n == 0:
        return arr[:0].copy(), np.zeros(0, dtype=np.intp)
    order = np.argsort(arr)
    ordered = arr[order]
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    codes = np.empty(n, dtype=np.intp)
    codes[order] = np.cumsum(new) - 1
    return ordered[new], codes


def encode(
    values: Iterable[Any], name: str, return_counts: bool = False, ordered: bool = False
) -> tuple[np.ndarray, ...]:
    """Encode a column as codes 0..U-1: ``(codes, uniques[, counts])``, uniques[codes] == values.

    Uniques are sorted when the values are orderable; integer columns with a compact range take a
    single np.bincount pass (codes are the values themselves when they already are 0..U-1), other
    numbers one sort, strings np.unique, and unorderable mixed objects take first-seen order, or
    raise ValueError naming `name` with ordered=True (for results whose order is the sorted one).
    `counts` (with return_counts=True) is the number of rows of each unique value.
    """
    arr = as_array(values, name)
    kind = arr.dtype.kind
    if arr.size and kind in "iu":
        limit = max(_DENSE_SPAN_FACTOR * arr.size, _DENSE_SPAN_MIN)
        hi, tally = int(arr.max()), None
        if 0 <= hi < limit:  # try non-negative values as their own offsets (no min pass)
            shifted = arr.astype(np.intp, copy=False)
            try:
                tally, lo = np.bincount(shifted), 0
            except ValueError:  # a negative value
                tally = None
        if tally is None:
            lo = int(arr.min())
            if hi - lo + 1 <= limit:
                shifted = (arr - lo).astype(np.intp)
                tally = np.bincount(shifted)
        if tally is not None:
            present = tally > 0
            if present.all():  # already dense: the shifted values are the codes
                codes, uniques, counts = shifted, np.arange(lo, hi + 1).astype(arr.dtype), tally
            else:
                codes = (np.cumsum(present) - 1)[shifted]
                uniques = (np.flatnonzero(present) + lo).astype(arr.dtype)
                counts = tally[present]
            return (codes, uniques, counts) if return_counts else (codes, uniques)
    if kind in "iufb":
        uniques, codes = unique_inverse(arr)
    else:
        try:
            uniques, codes = np.unique(arr, return_inverse=True)
        except TypeError as exc:  # unorderable mix of types: encode in first-seen order
            if ordered:
                raise ValueError(f"{name}: values must be mutually comparable ({exc})") from None
            seen: dict[Any, int] = {}
            try:
                codes = np.fromiter(
                    (seen.setdefault(v, len(seen)) for v in arr.tolist()),
                    dtype=np.intp,
                    count=arr.size,
                )
            except TypeError:  # an unhashable value, e.g. a list where a label belongs
                row = next(i for i, v in enumerate(arr.tolist()) if not _hashable(v))
                message = f"{name}: row {row} holds {arr[row]!r}, not a single value"
                raise ValueError(message) from None
            uniques = np.empty(len(seen), dtype=object)
            uniques[:] = list(seen)
        codes = codes.astype(np.intp, copy=False).reshape(-1)
    if return_counts:
        return codes, uniques, np.bincount(codes, minlength=uniques.size)
    return codes, uniques


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def group_ends(sorted_codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and end offsets of each group in an array of group codes sorted ascending."""
    counts = np.bincount(sorted_codes, minlength=n_groups)
    ends = np.cumsum(counts)
    return ends - counts, ends
