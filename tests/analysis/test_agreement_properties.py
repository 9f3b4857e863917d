"""Property-based tests (hypothesis) of analysis.agreement: invariances every statistic must have.

Permuting rows, raters, items or nominal category names changes nothing; perfect agreement is 1.
"""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from analysis import agreement

NOMINAL_STATS = [
    ("percent", lambda i, r, lab: agreement.percent_agreement(i, r, lab).value),
    ("fleiss", lambda i, r, lab: agreement.fleiss_kappa(i, r, lab).value),
    ("alpha", lambda i, r, lab: agreement.krippendorff_alpha(i, r, lab).value),
    ("specific", lambda i, r, lab: agreement.specific_agreement(i, r, lab).value),
    ("pairwise", lambda i, r, lab: agreement.pairwise_kappas(i, r, lab).value),
]


@st.composite
def long_labels(draw, max_items=10, max_raters=5, max_cats=4):
    """Long-format (items, raters, labels): each rater labels a random subset of the items once."""
    n_items = draw(st.integers(1, max_items))
    n_raters = draw(st.integers(2, max_raters))
    cells = draw(
        st.lists(
            st.tuples(st.integers(0, n_items - 1), st.integers(0, n_raters - 1)),
            min_size=2,
            max_size=n_items * n_raters,
            unique=True,
        )
    )
    labels = draw(st.lists(st.integers(0, max_cats - 1), min_size=len(cells), max_size=len(cells)))
    items = np.array([c[0] for c in cells])
    raters = np.array([c[1] for c in cells])
    return items, raters, np.array(labels)


def same(a, b):
    return (np.isnan(a) and np.isnan(b)) or a == pytest.approx(b, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(data=long_labels(), seed=st.integers(0, 2**32 - 1))
def test_permuting_rows_changes_no_statistic(data, seed):
    items, raters, labels = data
    order = np.random.default_rng(seed).permutation(items.size)
    for _, stat in NOMINAL_STATS:
        assert same(stat(items, raters, labels), stat(items[order], raters[order], labels[order]))


@settings(max_examples=60, deadline=None)
@given(data=long_labels(), seed=st.integers(0, 2**32 - 1))
def test_renaming_raters_and_items_changes_no_statistic(data, seed):
    items, raters, labels = data
    rng = np.random.default_rng(seed)
    new_raters = np.array([f"rater-{x}" for x in rng.permutation(10)])[raters]
    new_items = (rng.permutation(50) * 7 + 1000)[items]
    for _, stat in NOMINAL_STATS:
        assert same(stat(items, raters, labels), stat(new_items, new_raters, labels))


@settings(max_examples=60, deadline=None)
@given(data=long_labels(), seed=st.integers(0, 2**32 - 1))
def test_renaming_nominal_categories_changes_no_statistic(data, seed):
    items, raters, labels = data
    names = np.array(["spam", "ham", "eggs", "toast"])[np.random.default_rng(seed).permutation(4)]
    for _, stat in NOMINAL_STATS:
        assert same(stat(items, raters, labels), stat(items, raters, names[labels]))


@settings(max_examples=60, deadline=None)
@given(data=long_labels(max_raters=2), seed=st.integers(0, 2**32 - 1))
def test_renaming_categories_or_swapping_raters_leaves_cohen_kappa_unchanged(data, seed):
    items, raters, labels = data
    assume(set(raters.tolist()) == {0, 1})
    names = np.array(["a", "b", "c", "d"])[np.random.default_rng(seed).permutation(4)]
    base = agreement.cohen_kappa(items, raters, labels).value
    assert same(base, agreement.cohen_kappa(items, raters, names[labels]).value)
    assert same(base, agreement.cohen_kappa(items, 1 - raters, labels).value)


@settings(max_examples=60, deadline=None)
@given(data=long_labels())
def test_perfect_agreement_gives_one(data):
    items, raters, _ = data
    labels = items % 3  # every rater gives each item the same label
    m = np.bincount(items)
    assume(len(set(labels[m[items] >= 2].tolist())) >= 2)
    for name, stat in NOMINAL_STATS:
        if name != "pairwise":  # a pair sharing one category only has kappa 0/0
            assert stat(items, raters, labels) == pytest.approx(1.0, abs=1e-12)
    kappas = agreement.pairwise_kappas(items, raters, labels).kappa
    assert np.all(kappas[np.isfinite(kappas)] == pytest.approx(1.0, abs=1e-12))
    for level in agreement.LEVELS:
        value = agreement.krippendorff_alpha(items, raters, labels + 1, level=level).value
        assert value == pytest.approx(1.0, abs=1e-12)


@settings(max_examples=80, deadline=None)
@given(data=long_labels(max_cats=5), shift=st.floats(-50, 50), power=st.floats(0.3, 3))
def test_ordinal_alpha_depends_only_on_the_order_of_values(data, shift, power):
    items, raters, labels = data
    values = labels.astype(float) + 1.0
    transformed = shift + values**power * 10  # strictly increasing
    a = agreement.krippendorff_alpha(items, raters, values, level="ordinal").value
    b = agreement.krippendorff_alpha(items, raters, transformed, level="ordinal").value
    assert same(a, b)


@settings(max_examples=40, deadline=None)
@given(data=long_labels(), seed=st.integers(0, 2**32 - 1))
def test_permuting_rows_and_renaming_changes_no_icc(data, seed):
    items, raters, labels = data
    rng = np.random.default_rng(seed)
    scores = labels + rng.normal(0, 1, labels.size)
    order = rng.permutation(items.size)
    for form in agreement.ICC_FORMS:
        a = agreement.icc(items, raters, scores, form=form).value
        b = agreement.icc(items[order] + 5, raters[order] * 3, scores[order], form=form).value
        assert same(a, b)


@settings(max_examples=40, deadline=None)
@given(data=long_labels())
def test_statistics_never_crash_and_explain_every_nan(data):
    items, raters, labels = data
    results = [
        agreement.percent_agreement(items, raters, labels),
        agreement.fleiss_kappa(items, raters, labels),
        agreement.specific_agreement(items, raters, labels),
        agreement.preference_agreement(items, raters, labels),
        agreement.pairwise_kappas(items, raters, labels),
        agreement.icc(items, raters, labels.astype(float)),
        *[agreement.krippendorff_alpha(items, raters, labels, level=lv) for lv in agreement.LEVELS],
    ]
    for result in results:
        assert np.isnan(result.value) == (result.reason is not None)
        assert result.n_items + result.n_dropped_items == np.unique(items).size
