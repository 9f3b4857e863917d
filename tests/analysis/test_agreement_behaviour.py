"""Behaviour of analysis.agreement at the edges: validation, undefined cases, options, bootstrap.

Undefined statistics are NaN with a reason; bad input raises ValueError naming the argument.
"""

import subprocess
import sys
from pathlib import Path

import krippendorff
import numpy as np
import pytest

from analysis import _long, agreement

ROOT = Path(__file__).resolve().parents[2]

ITEMS = np.array([0, 0, 0, 1, 1, 2, 2, 2, 3, 3, 4])
RATERS = np.array([0, 1, 2, 0, 1, 0, 1, 2, 1, 2, 0])
LABELS = np.array(["a", "a", "b", "b", "b", "a", "c", "c", "a", "a", "c"])


def test_package_imports_neither_django_nor_pandas():
    code = (
        "import sys; from analysis import agreement, _long; "
        "print(sorted(m for m in ('django', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"items": [0, 1], "raters": [0, 1, 1], "labels": [1, 2]}, "raters"),
        ({"items": [0, 1], "raters": [0, 1], "labels": [1, 2, 3]}, "labels"),
        ({"items": [0, 1], "raters": [0, 1], "labels": [1.0, np.nan]}, "labels"),
        ({"items": [0, 1], "raters": [0, 1], "labels": ["x", None]}, "labels"),
        ({"items": [0, None], "raters": [0, 1], "labels": [1, 2]}, "items"),
    ],
)
def test_bad_columns_raise_value_error_naming_the_argument(kwargs, name):
    for fn in (agreement.percent_agreement, agreement.krippendorff_alpha, agreement.fleiss_kappa):
        with pytest.raises(ValueError, match=f"^{name}"):
            fn(**kwargs)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: agreement.krippendorff_alpha(ITEMS, RATERS, LABELS, level="cardinal"), "level"),
        (lambda: agreement.icc(ITEMS, RATERS, RATERS * 1.0, form="ICC(4,1)"), "form"),
        (lambda: agreement.cohen_kappa([0, 0], [0, 1], [1, 2], weights="cubic"), "weights"),
        (lambda: agreement.preference_agreement(ITEMS, RATERS, LABELS, ties="maybe"), "ties"),
        (lambda: agreement.cohen_kappa([0, 1], [0, 0], [1, 2]), "raters"),
        (lambda: agreement.cohen_kappa(ITEMS, RATERS, LABELS), "raters"),
        (lambda: agreement.cohen_kappa([0, 0, 0], [0, 1, 1], [1, 2, 2]), "raters"),
        (lambda: agreement.pairwise_kappas([0, 0, 0], [0, 1, 1], [1, 2, 2]), "raters"),
        (lambda: agreement.icc([0, 0, 0], [0, 1, 1], [1.0, 2.0, 2.0]), "raters"),
        (lambda: agreement.icc([0, 0], [0, 1], ["1", "2"]), "scores"),
        (lambda: agreement.fleiss_kappa(ITEMS, RATERS, LABELS, categories=["a", "b"]), "labels"),
        (
            lambda: agreement.fleiss_kappa(ITEMS, RATERS, LABELS, categories=["a", "a"]),
            "categories",
        ),
        (lambda: agreement.krippendorff_alpha(ITEMS, RATERS, LABELS, "ordinal"), "categories"),
        (lambda: agreement.krippendorff_alpha(ITEMS, RATERS, LABELS, "interval"), "labels"),
        (lambda: agreement.krippendorff_alpha([0, 0], [0, 1], [-1, 2], "ratio"), "labels"),
    ],
)
def test_bad_options_raise_value_error_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=f"^{name}"):
        call()


@pytest.mark.parametrize(
    "stat",
    [
        lambda i, r, lab: agreement.krippendorff_alpha(i, r, lab),
        lambda i, r, lab: agreement.fleiss_kappa(i, r, lab),
        lambda i, r, lab: agreement.cohen_kappa(i, r, lab),
        lambda i, r, lab: agreement.pairwise_kappas(i, r, lab),
    ],
)
def test_one_category_in_the_data_is_nan_with_a_reason(stat):
    result = stat([0, 0, 1, 1], ["x", "y", "x", "y"], ["pos"] * 4)
    assert np.isnan(result.value)
    assert result.reason


def test_declared_but_unused_categories_do_not_rescue_a_single_category():
    result = agreement.cohen_kappa([0, 0, 1, 1], [0, 1, 0, 1], [1, 1, 1, 1], categories=[1, 2])
    assert np.isnan(result.value) and "same category" in result.reason


@pytest.mark.parametrize(
    "stat",
    [
        agreement.percent_agreement,
        agreement.fleiss_kappa,
        agreement.krippendorff_alpha,
        agreement.specific_agreement,
        agreement.preference_agreement,
        agreement.pairwise_kappas,
    ],
)
def test_no_item_with_two_labels_is_nan_with_a_reason(stat):
    result = stat([0, 1, 2], [0, 1, 0], [1, 2, 1])
    assert np.isnan(result.value) and result.reason
    assert (result.n_items, result.n_dropped_items) == (0, 3)


@pytest.mark.parametrize(
    "stat",
    [agreement.percent_agreement, agreement.fleiss_kappa, agreement.krippendorff_alpha],
)
def test_a_single_rater_is_nan_with_a_reason(stat):
    result = stat([0, 0, 1], ["r", "r", "r"], [1, 2, 1])
    assert np.isnan(result.value) and "one rater" in result.reason


def test_icc_with_a_single_rater_is_nan_with_a_reason():
    result = agreement.icc([0, 1, 2], [0, 0, 0], [1.0, 2.0, 3.0])
    assert np.isnan(result.value) and "raters" in result.reason


def test_icc_with_constant_scores_is_nan_with_a_reason():
    result = agreement.icc([0, 0, 1, 1], [0, 1, 0, 1], [2.0, 2.0, 2.0, 2.0])
    assert np.isnan(result.value) and "variance" in result.reason


@pytest.mark.parametrize(
    "stat",
    [agreement.percent_agreement, agreement.krippendorff_alpha, agreement.label_distribution],
)
def test_empty_input_is_nan_with_a_reason(stat):
    result = stat([], [], [])
    assert np.isnan(result.value) and result.reason == "no labels"


def test_alpha_ignores_units_with_one_value():
    with_lone = agreement.krippendorff_alpha(ITEMS, RATERS, LABELS)
    without = agreement.krippendorff_alpha(ITEMS[:-1], RATERS[:-1], LABELS[:-1])
    assert with_lone.value == without.value
    assert (with_lone.n_dropped_items, with_lone.n_pairable_values) == (1, 10)


def test_ordinal_alpha_with_unused_declared_categories_matches_the_package_value_domain():
    """Unused categories between used ones have n_g = 0, so the ordinal distances are unchanged."""
    data = np.array([[1, 2, 5, 5, 2], [1, 5, 5, 2, 2], [2, 2, np.nan, 5, 1]])
    raters, items = np.nonzero(~np.isnan(data))
    labels = data[raters, items].astype(int)
    ours = agreement.krippendorff_alpha(
        items, raters, labels, "ordinal", categories=[1, 2, 3, 4, 5]
    )
    theirs = krippendorff.alpha(data, value_domain=[1, 2, 3, 4, 5], level_of_measurement="ordinal")
    assert ours.value == pytest.approx(theirs, abs=1e-12)


def test_cohen_kappa_drops_items_labelled_by_only_one_rater():
    items = [0, 0, 1, 1, 2, 3, 3]
    raters = ["ann", "bob", "ann", "bob", "ann", "ann", "bob"]
    labels = ["y", "y", "n", "y", "n", "n", "n"]
    result = agreement.cohen_kappa(items, raters, labels)
    assert (result.n_items, result.n_dropped_items, result.n_labels) == (3, 1, 6)
    # table over items 0, 1, 3: ann (y, n, n), bob (y, y, n): p_o = 2/3, p_e = 1/3*2/3 + 2/3*1/3
    assert result.value == pytest.approx((2 / 3 - 4 / 9) / (1 - 4 / 9), abs=1e-12)


def test_weighted_kappa_uses_the_declared_scale_including_unused_categories():
    items, raters = [0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 0, 1]
    labels = [1, 3, 3, 3, 1, 1]
    observed_scale = agreement.cohen_kappa(items, raters, labels, weights="quadratic")
    declared = agreement.cohen_kappa(
        items, raters, labels, weights="quadratic", categories=[1, 2, 3, 4, 5]
    )
    assert declared.categories == (1, 2, 3, 4, 5)
    # with two used values the weight scale cancels: d_o = 1/3, d_e = 2/3*2/3 + 1/3*1/3 either way
    assert observed_scale.value == pytest.approx(1 - (1 / 3) / (5 / 9), abs=1e-12)
    assert declared.value == pytest.approx(1 - (1 / 3) / (5 / 9), abs=1e-12)
    # with three used values 1, 3, 4 the gap 1-3 is one step on (1, 3, 4) but two steps on 1..4
    four_point = agreement.cohen_kappa(items, raters, [1, 3, 3, 3, 4, 4], weights="linear")
    declared_four = agreement.cohen_kappa(
        items, raters, [1, 3, 3, 3, 4, 4], weights="linear", categories=[1, 2, 3, 4]
    )
    assert four_point.value != pytest.approx(declared_four.value)


def test_pairwise_kappa_of_a_pair_equals_cohen_kappa_on_that_pair():
    rng = np.random.default_rng(5)
    items = np.repeat(np.arange(60), 3)
    raters = np.concatenate([rng.choice(5, 3, replace=False) for _ in range(60)])
    labels = rng.integers(0, 4, items.size)
    result = agreement.pairwise_kappas(
        items, raters, labels, weights="linear", categories=[0, 1, 2, 3]
    )
    for a, b, kappa in zip(result.rater_a, result.rater_b, result.kappa, strict=True):
        keep = (raters == a) | (raters == b)
        single = agreement.cohen_kappa(
            items[keep], raters[keep], labels[keep], weights="linear", categories=[0, 1, 2, 3]
        )
        assert kappa == pytest.approx(single.value, abs=1e-12, nan_ok=True)
    assert result.value == pytest.approx(np.nanmean(result.kappa), abs=1e-12)


def test_specific_agreement_reports_nan_for_a_declared_category_nobody_used():
    result = agreement.specific_agreement(ITEMS, RATERS, LABELS, categories=["a", "b", "c", "d"])
    assert np.isnan(result.per_category["d"])
    # a: items 0 (a,a,b), 2 (a,c,c), 3 (a,a): num 2+0+2 = 4, den 2*2 + 1*2 + 2*1 = 8
    assert result.per_category["a"] == pytest.approx(4 / 8, abs=1e-12)


def test_preference_agreement_pools_pairs_and_counts_two_ties_as_agreement():
    items = [0, 0, 0, 1, 1, 2, 2]
    raters = [0, 1, 2, 0, 1, 0, 1]
    choices = ["sysA", "sysA", "tie", "tie", "tie", "sysB", "sysA"]
    result = agreement.preference_agreement(items, raters, choices)
    # pairs: item 0 -> 3 (1 agrees), item 1 -> 1 (agrees), item 2 -> 1 (disagrees)
    assert (result.n_pairs, result.n_agreeing_pairs) == (5, 2)
    assert result.value == pytest.approx(2 / 5, abs=1e-12)


def test_preference_agreement_excluding_ties_drops_every_pair_with_a_tie():
    items = [0, 0, 0, 1, 1, 2, 2]
    raters = [0, 1, 2, 0, 1, 0, 1]
    choices = ["sysA", "sysA", "tie", "tie", "tie", "sysB", "sysA"]
    result = agreement.preference_agreement(items, raters, choices, ties="exclude")
    assert (result.n_pairs, result.n_agreeing_pairs) == (2, 1)
    assert (result.n_items, result.n_dropped_items) == (2, 1)


def test_label_distribution_counts_labels_overall_and_per_rater():
    result = agreement.label_distribution(ITEMS, RATERS, LABELS)
    assert result.categories == ("a", "b", "c")
    assert result.counts.tolist() == [5, 3, 3]
    assert result.rater_counts.tolist() == [[2, 1, 1], [2, 1, 1], [1, 1, 1]]
    assert result.value == pytest.approx(5 / 11)


def test_bootstrap_is_reproducible_for_a_seed():
    first = agreement.bootstrap(
        agreement.krippendorff_alpha, ITEMS, RATERS, LABELS, n_boot=50, seed=3
    )
    again = agreement.bootstrap("krippendorff_alpha", ITEMS, RATERS, LABELS, n_boot=50, seed=3)
    other = agreement.bootstrap(
        agreement.krippendorff_alpha, ITEMS, RATERS, LABELS, n_boot=50, seed=4
    )
    assert np.array_equal(first.replicates, again.replicates, equal_nan=True)
    assert not np.array_equal(first.replicates, other.replicates, equal_nan=True)


def resampled(items, raters, labels, draw, eligible_ids):
    """Physically copy the rows of each drawn item under a fresh item id (the naive bootstrap)."""
    rows = [np.flatnonzero(items == eligible_ids[d]) for d in draw]
    idx = np.concatenate(rows)
    new_items = np.repeat(np.arange(len(rows)), [r.size for r in rows])
    return new_items, raters[idx], labels[idx]


@pytest.mark.parametrize(
    ("statistic", "kwargs"),
    [
        (agreement.krippendorff_alpha, {"level": "ordinal", "categories": ["a", "b", "c"]}),
        (agreement.fleiss_kappa, {}),
        (agreement.percent_agreement, {}),
        (agreement.specific_agreement, {}),
    ],
)
def test_bootstrap_replicates_equal_the_statistic_on_physically_resampled_items(statistic, kwargs):
    """Item-multiplicity weights reproduce copying the drawn items' rows under new item ids."""
    rng = np.random.default_rng(11)
    items = np.repeat(np.arange(40), 3)
    raters = np.tile([0, 1, 2], 40)
    labels = np.array(["a", "b", "c"])[
        np.where(rng.random(120) < 0.6, items % 3, rng.integers(0, 3, 120))
    ]
    result = agreement.bootstrap(statistic, items, raters, labels, n_boot=20, seed=9, **kwargs)
    draws = np.random.default_rng(9)
    for b in range(20):
        draw = draws.integers(0, 40, size=40)
        naive = statistic(*resampled(items, raters, labels, draw, np.arange(40)), **kwargs)
        assert result.replicates[b] == pytest.approx(naive.value, abs=1e-12)


def test_bootstrap_of_cohen_kappa_resamples_only_items_both_raters_labelled():
    rng = np.random.default_rng(2)
    items = np.concatenate([np.arange(30), np.arange(5, 30)])
    raters = np.repeat([0, 1], [30, 25])
    labels = rng.integers(0, 3, 55)
    result = agreement.bootstrap(
        agreement.cohen_kappa, items, raters, labels, n_boot=10, seed=1, weights="linear"
    )
    assert (result.n_items, result.n_dropped_items) == (25, 5)
    draws = np.random.default_rng(1)
    for b in range(10):
        draw = draws.integers(0, 25, size=25)
        naive = agreement.cohen_kappa(
            *resampled(items, raters, labels, draw, np.arange(5, 30)), weights="linear"
        )
        assert result.replicates[b] == pytest.approx(naive.value, abs=1e-12)


def test_bootstrap_interval_brackets_the_estimate_on_a_large_sample():
    rng = np.random.default_rng(0)
    items = np.repeat(np.arange(500), 3)
    raters = np.tile([0, 1, 2], 500)
    labels = np.where(rng.random(1500) < 0.7, items % 4, rng.integers(0, 4, 1500))
    result = agreement.bootstrap(agreement.krippendorff_alpha, items, raters, labels, n_boot=300)
    assert result.ci_low < result.value < result.ci_high
    assert result.ci_high - result.ci_low < 0.2
    assert result.n_valid == 300


def test_bootstrap_of_an_undefined_statistic_is_nan_with_a_reason():
    result = agreement.bootstrap(
        agreement.fleiss_kappa, [0, 0, 1, 1], [0, 1, 0, 1], [2, 2, 2, 2], n_boot=5
    )
    assert np.isnan(result.value) and np.isnan(result.ci_low) and result.reason


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"statistic": agreement.icc}, "statistic"),
        ({"statistic": agreement.fleiss_kappa, "n_boot": 0}, "n_boot"),
        ({"statistic": agreement.fleiss_kappa, "ci": 1.5}, "ci"),
        ({"statistic": agreement.fleiss_kappa, "level": "ordinal"}, "level"),
    ],
)
def test_bootstrap_rejects_bad_arguments_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name}"):
        agreement.bootstrap(items=ITEMS, raters=RATERS, labels=LABELS, **kwargs)


def test_results_are_frozen():
    result = agreement.percent_agreement(ITEMS, RATERS, LABELS)
    with pytest.raises(AttributeError):
        result.value = 1.0


def test_encode_returns_codes_that_index_the_uniques_for_every_kind_of_id():
    columns = [
        np.array([10**12, 5, 10**12, -3]),  # wide-span ints take the sort path
        np.array([7, 5, 7, 9]),  # compact ints with gaps take the bincount path
        np.array([0, 2, 1, 2]),  # already codes
        [("a", 1), ("b", 2), ("a", 1), ("c", 0)],  # tuple ids stay whole
        np.array([1, "x", 1, "y"], dtype=object),  # unorderable mix: first-seen order
        np.array([0.5, -1.25, 0.5, 3.0]),
    ]
    for values in columns:
        codes, uniques, counts = _long.encode(values, "items", return_counts=True)
        assert [uniques[c] for c in codes] == list(values)
        assert len(set(map(repr, uniques.tolist()))) == len(uniques)
        assert counts.sum() == len(values)


def test_bootstrap_of_preference_agreement_without_ties_resamples_items_with_a_non_tie_pair():
    items = np.repeat(np.arange(30), 3)
    raters = np.tile([0, 1, 2], 30)
    choices = np.array(["sysA", "sysB", "tie"])[np.random.default_rng(4).integers(0, 3, 90)]
    result = agreement.bootstrap(
        "preference_agreement", items, raters, choices, n_boot=15, seed=2, ties="exclude"
    )
    point = agreement.preference_agreement(items, raters, choices, ties="exclude")
    assert result.value == point.value and result.n_items == point.n_items
    eligible = np.unique(
        items[choices != "tie"][np.bincount(items[choices != "tie"])[items[choices != "tie"]] >= 2]
    )
    draws = np.random.default_rng(2)
    for b in range(15):
        draw = draws.integers(0, eligible.size, size=eligible.size)
        naive = agreement.preference_agreement(
            *resampled(items, raters, choices, draw, eligible), ties="exclude"
        )
        assert result.replicates[b] == pytest.approx(naive.value, abs=1e-12)


def five_point_design(seed=3, n_items=60):
    """Three ratings per item on a 1..5 scale, some items with a single rating (not pairable)."""
    rng = np.random.default_rng(seed)
    items = np.repeat(np.arange(n_items), 3)
    raters = rng.integers(0, 6, items.size)
    labels = np.clip(items % 5 + 1 + rng.integers(-1, 2, items.size), 1, 5)
    keep = ~((items % 7 == 0) & (np.arange(items.size) % 3 > 0))
    return items[keep], raters[keep], labels[keep]


BOOTSTRAPPED = [
    ("percent_agreement", {}),
    ("krippendorff_alpha", {"level": "ordinal"}),
    ("krippendorff_alpha", {"level": "interval"}),
    ("krippendorff_alpha", {"level": "nominal"}),
    ("fleiss_kappa", {}),
    ("specific_agreement", {}),
]


def test_bootstrap_many_equals_one_bootstrap_per_statistic():
    items, raters, labels = five_point_design()
    many = agreement.bootstrap_many(BOOTSTRAPPED, items, raters, labels, n_boot=40, seed=5)
    for (name, kwargs), got in zip(BOOTSTRAPPED, many, strict=True):
        alone = agreement.bootstrap(name, items, raters, labels, n_boot=40, seed=5, **kwargs)
        assert got.statistic == name and got.value == alone.value
        np.testing.assert_allclose(got.replicates, alone.replicates, rtol=0, atol=1e-12)
        assert (got.ci_low, got.ci_high, got.n_valid) == pytest.approx(
            (alone.ci_low, alone.ci_high, alone.n_valid), abs=1e-12
        )


def test_bootstrap_sums_by_matrix_product_equal_the_replicate_by_replicate_path(monkeypatch):
    """The fast path (multiplicities x per-item features, in blocks of replicates) against the
    statistic recomputed from the weights of each replicate; blocks of 7 do not divide 45."""
    items, raters, labels = five_point_design(seed=8)
    n_pairable = int((np.bincount(items) >= 2).sum())
    monkeypatch.setattr(agreement, "_REPLICATE_BLOCK_CELLS", 7 * n_pairable)
    fast = agreement.bootstrap_many(BOOTSTRAPPED, items, raters, labels, n_boot=45, seed=2)
    monkeypatch.setattr(agreement._Prepared, "linear", lambda self: None)
    slow = agreement.bootstrap_many(BOOTSTRAPPED, items, raters, labels, n_boot=45, seed=2)
    for got, ref in zip(fast, slow, strict=True):
        assert np.isfinite(ref.replicates).all()
        np.testing.assert_allclose(got.replicates, ref.replicates, rtol=0, atol=1e-12)


def test_bootstrap_of_fleiss_kappa_on_many_categories_takes_the_replicate_path():
    rng = np.random.default_rng(1)
    items = np.repeat(np.arange(50), 3)
    labels = np.where(rng.random(150) < 0.5, items % 12, rng.integers(0, 12, 150))
    raters = np.tile([0, 1, 2], 50)
    result = agreement.bootstrap("fleiss_kappa", items, raters, labels, n_boot=10, seed=4)
    draws = np.random.default_rng(4)
    for b in range(10):
        draw = draws.integers(0, 50, size=50)
        naive = agreement.fleiss_kappa(*resampled(items, raters, labels, draw, np.arange(50)))
        assert result.replicates[b] == pytest.approx(naive.value, abs=1e-12)
