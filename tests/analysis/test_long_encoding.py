"""analysis._long: the long-format columns' validation and encoding, cross-checked against
numpy's np.unique and pandas' factorize on every path (dense tally, sort, np.unique, first seen)."""

import re

import numpy as np
import pandas as pd
import pytest

from analysis._long import as_array, check_same_length, encode, group_ends, unique_inverse


def refused(name: str, text: str) -> str:
    """The whole message, case aside: `<name>: <text>`."""
    return rf"(?i)^{re.escape(name)}: {re.escape(text)}$"


def missing(name: str, what: str, row: int) -> str:
    return refused(
        name, f"contains {what} at row {row}; a missing label is simply absent (drop the row)"
    )


# as_array


def test_an_array_is_used_as_it_is_and_a_list_keeps_its_numeric_dtype():
    arr = np.array([3, 1, 2])
    assert as_array(arr, "rater") is arr
    assert as_array([3, 1, 2], "rater").dtype.kind == "i"
    assert as_array([0.5, 1.5], "score").dtype.kind == "f"


def test_a_generator_is_read_once_into_an_array():
    out = as_array((v for v in [4, 5, 6]), "item")
    assert out.tolist() == [4, 5, 6]


def test_a_set_has_no_row_order_and_is_refused():
    with pytest.raises(
        ValueError, match=refused("item", "expected a one-dimensional sequence, got shape ()")
    ):
        as_array({1, 2, 3}, "item")


def test_tuple_ids_are_kept_one_id_a_row():
    out = as_array([(1, "a"), (2, "b"), (1, "a")], "item")
    assert out.shape == (3,) and out.dtype == object
    assert out.tolist() == [(1, "a"), (2, "b"), (1, "a")]


def test_a_table_is_not_a_column():
    with pytest.raises(
        ValueError, match=refused("label", "expected a one-dimensional sequence, got shape (2, 2)")
    ):
        as_array(np.zeros((2, 2)), "label")


@pytest.mark.parametrize(
    "values",
    [
        [1.0, 2.0, np.nan, np.nan],
        np.array([1 + 0j, 2 + 0j, complex(np.nan, 0), 3 + 0j]),
        np.array([1, "a", float("nan"), float("nan")], dtype=object),
    ],
    ids=["float", "complex", "object"],
)
def test_nan_is_refused_naming_the_column_and_its_first_row(values):
    with pytest.raises(ValueError, match=missing("label", "NaN", 2)):
        as_array(values, "label")


def test_none_is_refused_naming_the_column_and_its_first_row():
    with pytest.raises(ValueError, match=missing("rater", "None", 1)):
        as_array(["a", None, "b", None], "rater")


def test_allow_nan_keeps_nan_and_none_where_they_mean_something():
    floats = as_array([0.1, np.nan], "p", allow_nan=True)
    assert np.isnan(floats[1])
    assert as_array([1 + 0j, complex(np.nan, 0)], "z", allow_nan=True).size == 2
    objects = as_array(np.array([0.2, None, float("nan")], dtype=object), "p", allow_nan=True)
    assert objects[1] is None


@pytest.mark.parametrize(
    "values",
    [
        np.array([1, 2], dtype=np.int8),
        np.array([1, 2], dtype=np.uint16),
        np.array([True, False]),
        np.array(["a", "b"]),
        np.array([b"a", b"b"]),
        np.array(["2026-01-01", "2026-01-02"], dtype="datetime64[D]"),
        np.array([1, "a", (2, 3)], dtype=object),
    ],
    ids=["int", "uint", "bool", "str", "bytes", "datetime", "object"],
)
def test_every_column_kind_of_the_long_format_is_accepted(values):
    assert as_array(values, "c") is values


def test_other_dtypes_are_refused_naming_the_column():
    with pytest.raises(ValueError, match=refused("delay", "unsupported dtype timedelta64[D]")):
        as_array(np.array([1, 2], dtype="timedelta64[D]"), "delay")


# check_same_length


def test_check_same_length_returns_the_common_length():
    assert check_same_length(item=[1, 2], rater=[3, 4], label=[5, 6]) == 2


@pytest.mark.parametrize("differs", ["rater", "label"])
def test_check_same_length_names_the_column_that_differs_and_the_first(differs):
    columns = {"item": [1, 2, 3], "rater": [1, 2, 3], "label": [1, 2, 3]}
    columns[differs] = [1, 2]
    with pytest.raises(ValueError, match=refused(differs, "length 2 differs from item length 3")):
        check_same_length(**columns)


# unique_inverse


@pytest.mark.parametrize(
    "values",
    [[], [7.5], [2.0, 2.0], [3.0, -1.0, 3.0, 0.5, -1.0, 9.0], [5, 1, 5, 5, 2]],
    ids=["empty", "one", "one-value-twice", "floats", "ints"],
)
def test_unique_inverse_equals_numpy_unique(values):
    arr = np.array(values, dtype=float if not values or isinstance(values[0], float) else int)
    uniques, codes = unique_inverse(arr)
    ref_uniques, ref_codes = np.unique(arr, return_inverse=True)
    np.testing.assert_array_equal(uniques, ref_uniques)
    np.testing.assert_array_equal(codes, ref_codes)
    assert codes.shape == arr.shape and codes.dtype == np.intp and uniques.dtype == arr.dtype
    assert arr[:0].take(codes).size == 0 if arr.size == 0 else (uniques[codes] == arr).all()


# encode


def check_against_numpy(values, codes, uniques, counts):
    ref_uniques, ref_codes, ref_counts = np.unique(values, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(uniques, ref_uniques)
    np.testing.assert_array_equal(codes, ref_codes.reshape(-1))
    np.testing.assert_array_equal(counts, ref_counts)
    assert codes.dtype == np.intp and codes.shape == (len(values),)
    assert uniques.dtype == np.asarray(values).dtype  # ids come back as the caller's ids


@pytest.mark.parametrize(
    "values",
    [
        np.array([0, 1, 2, 1, 0], dtype=np.int32),  # dense from 0: the values are the codes
        np.array([5, 9, 5, 7]),  # non-negative with gaps
        np.array([-2, -1, 0, 1, -2], dtype=np.int16),  # dense, negative
        np.array([-3, 0, 5, -3], dtype=np.int64),  # negative with gaps
        np.array([0, 10**9, 10**9, 3]),  # too sparse to tally: sorted
        np.array([-(2**40), 2**40, 0, 2**40]),  # far apart both sides of zero: sorted
        np.array([0, 0, 0]),
        np.array([3], dtype=np.uint8),
        np.array([0.5, 1.5, 0.5, -2.0]),
        np.array([True, False, True]),
        np.array(["b", "a", "c", "a"]),
        np.array(["2026-01-02", "2026-01-01"], dtype="datetime64[D]"),
    ],
    ids=lambda v: f"{v.dtype}-{v.tolist()[:3]}",
)
def test_encode_equals_numpy_unique_with_counts(values):
    codes, uniques, counts = encode(values, "rater", return_counts=True)
    check_against_numpy(values, codes, uniques, counts)
    plain = encode(values, "rater")
    assert len(plain) == 2
    np.testing.assert_array_equal(plain[0], codes)
    np.testing.assert_array_equal(plain[1], uniques)


def test_encode_random_integer_columns_of_every_span_equals_numpy_unique():
    rng = np.random.default_rng(17)
    for low, high, size in [(0, 50, 40), (-30, 30, 40), (10, 100_000, 50), (-(10**6), 10, 80)]:
        values = rng.integers(low, high, size)
        check_against_numpy(values, *encode(values, "item", return_counts=True))


def test_encode_of_an_empty_column_has_no_codes():
    for values in [np.array([], dtype=int), np.array([], dtype=float), np.array([], dtype=str)]:
        codes, uniques, counts = encode(values, "item", return_counts=True)
        assert codes.size == 0 and uniques.size == 0 and counts.size == 0


def test_unorderable_ids_take_first_seen_order_like_pandas_factorize():
    values = np.empty(7, dtype=object)  # a list would be coerced: ["x", 3] becomes strings
    values[:] = [("p", 1), "x", 3, "x", ("p", 1), 3, 2.5]
    codes, uniques, counts = encode(values, "item", return_counts=True)
    ref_codes, ref_uniques = pd.factorize(values, sort=False)
    np.testing.assert_array_equal(codes, ref_codes)
    assert uniques.dtype == object and uniques.tolist() == list(ref_uniques)
    assert counts.tolist() == [2, 2, 2, 1]
    assert codes.dtype == np.intp


def test_encode_refuses_unorderable_ids_when_the_order_is_the_result():
    with pytest.raises(ValueError, match=r"(?i)^item: values must be mutually comparable \("):
        encode(np.array(["x", 3], dtype=object), "item", ordered=True)


def test_encode_names_the_column_it_refuses():
    with pytest.raises(ValueError, match=missing("rater", "None", 0)):
        encode([None, 1], "rater")


# group_ends


def test_group_ends_cover_every_group_including_empty_ones():
    starts, ends = group_ends(np.array([0, 0, 2, 2, 2]), 4)
    assert starts.tolist() == [0, 2, 2, 5]
    assert ends.tolist() == [2, 2, 5, 5]
