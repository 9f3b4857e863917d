"""Published worked examples reproduced by analysis.agreement (evidence kind 1 of issue #3).

Each test names its source; libraries agree to 1e-9, published values to their printed digits.
"""

from fractions import Fraction

import krippendorff
import numpy as np
import pandas as pd
import pingouin
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from analysis import agreement

NAN = np.nan

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers x 12
# units, values 1..5, missing values as NaN (observers in rows).
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)

# Fleiss (1971), Table 1: 30 patients x 6 psychiatrists, diagnoses 1..5 (from statsmodels'
# test_inter_rater.py, where each row lists the six diagnoses of one patient).
FLEISS_1971 = np.array(
    [
        [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5],
        [2, 2, 2, 4, 4, 4], [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4],
        [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5], [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4],
        [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5], [3, 3, 3, 3, 3, 5],
        [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
        [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4],
        [1, 4, 4, 4, 4, 5], [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4],
        [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
    ]
)  # fmt: skip

# Wikipedia "Fleiss' kappa" worked example: 10 subjects x 14 raters, counts per category 1..5.
WIKIPEDIA_FLEISS = np.array(
    [
        [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ]
)  # fmt: skip

# Shrout & Fleiss (1979), Table 2: 6 targets x 4 judges.
SHROUT_FLEISS = np.array(
    [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]],
    dtype=float,
)

# SAS/STAT PROC FREQ kappa example (3 x 3 table, printout reproduced in statsmodels'
# test_inter_rater.py): simple kappa 0.4842, Cicchetti-Allison (linear) weighted kappa 0.4701.
SAS_TABLE = np.array([[0, 4, 1], [0, 8, 0], [0, 1, 5]])


def long_from_matrix(matrix):
    """Long format (items, raters, labels) from an observers x units matrix with NaN = missing."""
    raters, items = np.nonzero(~np.isnan(matrix))
    return items, raters, matrix[raters, items]


def long_from_rows(rows):
    """Long format from an items x slots matrix of labels (slot j is rater j)."""
    items, raters = np.indices(rows.shape)
    return items.ravel(), raters.ravel(), rows.ravel()


def long_from_counts(counts):
    """Long format from an items x categories count table (category codes 1..K, raters 0..)."""
    items, cats = np.nonzero(counts)
    reps = counts[items, cats]
    items, labels = np.repeat(items, reps), np.repeat(cats + 1, reps)
    order = np.argsort(items, kind="stable")
    items, labels = items[order], labels[order]
    raters = np.arange(items.size) - np.repeat(
        np.cumsum(counts.sum(1)) - counts.sum(1), counts.sum(1)
    )
    return items, raters, labels


def long_from_contingency(table):
    """Long format for two raters from a K x K contingency table (row = rater A's category)."""
    a, b = np.nonzero(table)
    reps = table[a, b]
    la, lb = np.repeat(a, reps), np.repeat(b, reps)
    n = la.size
    items = np.concatenate([np.arange(n), np.arange(n)])
    raters = np.repeat(["A", "B"], n)
    return items, raters, np.concatenate([la, lb])


def exact_weighted_kappa(table, power):
    """Cohen (1968) weighted kappa in exact rational arithmetic; power 0 means unweighted."""
    table = [[Fraction(int(x)) for x in row] for row in table]
    k = len(table)
    n = sum(sum(row) for row in table)
    rows = [sum(row) for row in table]
    cols = [sum(table[i][j] for i in range(k)) for j in range(k)]

    def w(i, j):
        return Fraction(i != j) if power == 0 else Fraction(abs(i - j), k - 1) ** power

    observed = sum(w(i, j) * table[i][j] for i in range(k) for j in range(k)) / n
    expected = sum(w(i, j) * rows[i] * cols[j] for i in range(k) for j in range(k)) / n / n
    return 1 - observed / expected


@pytest.mark.parametrize(
    ("level", "published"),
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)],
)
def test_alpha_reproduces_krippendorff_2011_reliability_data(level, published):
    """Krippendorff (2011), sec. C-F: alpha = .743 nominal, .815 ordinal, .849 interval, .797 ratio.

    The krippendorff package computes the same data from the raters x units matrix (to 1e-9).
    """
    items, raters, labels = long_from_matrix(KRIPPENDORFF_2011)
    result = agreement.krippendorff_alpha(items, raters, labels.astype(int), level=level)
    assert round(result.value, 3) == published
    package = krippendorff.alpha(reliability_data=KRIPPENDORFF_2011, level_of_measurement=level)
    assert result.value == pytest.approx(package, abs=1e-9)


def test_alpha_nominal_matches_krippendorffs_own_arithmetic():
    """Krippendorff (2011), sec. C: alpha = 1 - (n - 1) sum_{c != k} o_ck / (n^2 - sum_c n_c^2).

    With n = 40 pairable values, n_c = 9, 13, 10, 5, 3 and 8 off-diagonal coincidences the paper
    gets 1 - 39 * 8 / (1600 - 384) = .743.
    """
    items, raters, labels = long_from_matrix(KRIPPENDORFF_2011)
    result = agreement.krippendorff_alpha(items, raters, labels.astype(int))
    assert result.value == pytest.approx(
        1 - 39 * 8 / (40**2 - (81 + 169 + 100 + 25 + 9)), abs=1e-12
    )


def test_alpha_counts_krippendorff_2011_pairable_values_and_drops_the_lone_unit():
    """Krippendorff (2011), sec. C: unit 12 has a single value, so n.. = 40 values in 11 units."""
    items, raters, labels = long_from_matrix(KRIPPENDORFF_2011)
    result = agreement.krippendorff_alpha(items, raters, labels)
    assert (result.n_pairable_values, result.n_items, result.n_dropped_items) == (40, 11, 1)


def test_ordinal_alpha_on_verbal_categories_reproduces_krippendorff_2011():
    """Krippendorff (2011) data recoded as ordered words; the order comes from `categories`."""
    scale = ["very low", "low", "mid", "high", "very high"]
    items, raters, labels = long_from_matrix(KRIPPENDORFF_2011)
    words = np.array(scale)[labels.astype(int) - 1]
    result = agreement.krippendorff_alpha(items, raters, words, level="ordinal", categories=scale)
    assert round(result.value, 3) == 0.815


def test_fleiss_kappa_reproduces_fleiss_1971_table_1():
    """Fleiss (1971), Psychological Bulletin 76(5), p. 381: kappa = .430 for 30 patients x 6 raters.

    statsmodels' fleiss_kappa on the aggregated table agrees to 1e-9.
    """
    items, raters, labels = long_from_rows(FLEISS_1971)
    result = agreement.fleiss_kappa(items, raters, labels)
    assert round(result.value, 3) == 0.430
    counts = np.stack([(c == FLEISS_1971).sum(1) for c in range(1, 6)], axis=1)
    assert result.value == pytest.approx(sm_fleiss_kappa(counts), abs=1e-9)


def test_fleiss_kappa_reproduces_the_wikipedia_14_rater_table():
    """Wikipedia, "Fleiss' kappa", worked example: P-bar = 0.378, P_e = 0.213, kappa = 0.210."""
    items, raters, labels = long_from_counts(WIKIPEDIA_FLEISS)
    result = agreement.fleiss_kappa(items, raters, labels)
    assert round(result.value, 3) == 0.210
    assert round(result.observed_agreement, 3) == 0.378
    assert round(result.expected_agreement, 3) == 0.213
    assert result.value == pytest.approx(sm_fleiss_kappa(WIKIPEDIA_FLEISS), abs=1e-9)


def test_percent_agreement_is_the_mean_of_wikipedias_per_subject_p_i():
    """Wikipedia, "Fleiss' kappa": P_i = 1.000, .253, .308, .440, .330, .462, .242, .176, .286,
    .286 and their mean P-bar = .378."""
    items, raters, labels = long_from_counts(WIKIPEDIA_FLEISS)
    p_i = WIKIPEDIA_FLEISS * (WIKIPEDIA_FLEISS - 1)
    exact = np.mean(p_i.sum(1) / (14 * 13))
    result = agreement.percent_agreement(items, raters, labels)
    assert result.value == pytest.approx(exact, abs=1e-12)
    assert round(result.value, 3) == 0.378


@pytest.mark.parametrize(
    ("form", "published"),
    [
        ("ICC(1,1)", 0.17),
        ("ICC(2,1)", 0.29),
        ("ICC(3,1)", 0.71),
        ("ICC(1,k)", 0.44),
        ("ICC(2,k)", 0.62),
        ("ICC(3,k)", 0.91),
    ],
)
def test_icc_reproduces_shrout_fleiss_1979_table_4(form, published):
    """Shrout & Fleiss (1979), Psychological Bulletin 86(2), Table 4 for the Table 2 data.

    pingouin.intraclass_corr agrees to 1e-9 on the value and (unrounded) 95% CI.
    """
    items, raters = np.indices(SHROUT_FLEISS.shape)
    result = agreement.icc(items.ravel(), raters.ravel(), SHROUT_FLEISS.ravel(), form=form)
    assert round(result.value, 2) == published
    long = pd.DataFrame({"t": items.ravel(), "r": raters.ravel(), "s": SHROUT_FLEISS.ravel()})
    old = pingouin.options["round.column.CI95"]
    pingouin.options["round.column.CI95"] = None
    try:
        table = pingouin.intraclass_corr(long, "t", "r", "s").set_index("Type")
    finally:
        pingouin.options["round.column.CI95"] = old
    name = {
        "ICC(2,1)": "ICC(A,1)",
        "ICC(3,1)": "ICC(C,1)",
        "ICC(2,k)": "ICC(A,k)",
        "ICC(3,k)": "ICC(C,k)",
    }
    row = table.loc[name.get(form, form)]
    assert result.value == pytest.approx(row["ICC"], abs=1e-9)
    assert (result.ci_low, result.ci_high) == pytest.approx(tuple(row["CI95"]), abs=1e-9)


def test_icc_reproduces_shrout_fleiss_1979_table_3_mean_squares():
    """Shrout & Fleiss (1979), Table 3: BMS = 11.24, WMS = 6.26, JMS = 32.49, EMS = 1.02."""
    items, raters = np.indices(SHROUT_FLEISS.shape)
    result = agreement.icc(items.ravel(), raters.ravel(), SHROUT_FLEISS.ravel())
    assert round(result.ms_rows, 2) == 11.24
    assert round(result.ms_within, 2) == 6.26
    assert round(result.ms_raters, 2) == 32.49
    assert round(result.ms_error, 2) == 1.02


def test_cohen_kappa_reproduces_the_sas_proc_freq_simple_kappa():
    """SAS/STAT PROC FREQ printout (statsmodels test_inter_rater.py, table10): kappa = 0.4842."""
    items, raters, labels = long_from_contingency(SAS_TABLE)
    result = agreement.cohen_kappa(items, raters, labels)
    assert round(result.value, 4) == 0.4842
    assert result.value == pytest.approx(float(exact_weighted_kappa(SAS_TABLE, 0)), abs=1e-12)


def test_linear_weighted_kappa_reproduces_the_sas_cicchetti_allison_kappa():
    """SAS/STAT PROC FREQ printout: weighted kappa 0.4701, Cicchetti-Allison (linear) weights."""
    items, raters, labels = long_from_contingency(SAS_TABLE)
    result = agreement.cohen_kappa(items, raters, labels, weights="linear")
    assert round(result.value, 4) == 0.4701
    assert result.value == pytest.approx(float(exact_weighted_kappa(SAS_TABLE, 1)), abs=1e-12)


def test_quadratic_weighted_kappa_matches_cohen_1968_in_exact_arithmetic():
    """Cohen (1968) weighted kappa with Fleiss-Cohen (quadratic) weights, exact rational check."""
    items, raters, labels = long_from_contingency(SAS_TABLE)
    result = agreement.cohen_kappa(items, raters, labels, weights="quadratic")
    assert result.value == pytest.approx(float(exact_weighted_kappa(SAS_TABLE, 2)), abs=1e-12)


def test_cohen_kappa_reproduces_the_wikipedia_two_by_two_example():
    """Wikipedia, "Cohen's kappa": 50 proposals, table [[20, 5], [10, 15]], p_o = .7, kappa = .4."""
    items, raters, labels = long_from_contingency(np.array([[20, 5], [10, 15]]))
    result = agreement.cohen_kappa(items, raters, labels)
    assert result.value == pytest.approx(0.4, abs=1e-12)
    assert result.observed_agreement == pytest.approx(0.7, abs=1e-12)
    assert result.expected_agreement == pytest.approx(0.5, abs=1e-12)


def test_specific_agreement_is_positive_and_negative_agreement_for_two_raters():
    """Cicchetti & Feinstein (1990); Uebersax: PA = 2a / (2a + b + c), NA = 2d / (2d + b + c).

    For the Wikipedia table [[20, 5], [10, 15]]: PA = 40 / 55, NA = 30 / 45, overall = 35 / 50.
    """
    items, raters, labels = long_from_contingency(np.array([[20, 5], [10, 15]]))
    result = agreement.specific_agreement(items, raters, np.where(labels == 0, "yes", "no"))
    assert result.per_category["yes"] == pytest.approx(40 / 55, abs=1e-12)
    assert result.per_category["no"] == pytest.approx(30 / 45, abs=1e-12)
    assert result.value == pytest.approx(35 / 50, abs=1e-12)
