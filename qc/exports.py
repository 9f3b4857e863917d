"""The report's tables as rows for CSV download: one function per table, header first.

Reads stored payloads, plus (item tables only) the current adjudications, so the aggregated
export says which items an expert adjudicated even before the next recomputation; the names are
the ones the dashboard's download links use.
"""

from __future__ import annotations

from collections.abc import Iterator

from qc.reports.common import category_label


def _stats(summary, items):
    yield [
        "statistic",
        "value",
        "ci_low",
        "ci_high",
        "n_items",
        "n_raters",
        "n_labels",
        "n_boot",
        "reason",
    ]
    for s in (summary.get("agreement") or {}).get("statistics", []):
        yield [
            s["label"],
            s["value"],
            s["ci_low"],
            s["ci_high"],
            s["n_items"],
            s["n_raters"],
            s["n_labels"],
            s["n_boot"],
            s["reason"],
        ]


def _distribution(summary, items):
    yield ["label", "count", "share", "specific_agreement"]
    for d in (summary.get("agreement") or {}).get("distribution", []):
        yield [d["label"], d["count"], d["share"], d["specific_agreement"]]


def _over_time(summary, items):
    yield ["day", "labels", "value", "ci_low", "ci_high", "reason"]
    for p in (summary.get("agreement_over_time") or {}).get("points", []):
        yield [p["day"], p["labels"], p["value"], p["ci_low"], p["ci_high"], p["reason"]]


def _labels_per_day(summary, items):
    yield ["day", "labels", "annotators"]
    for r in (summary.get("progress") or {}).get("labels_per_day", []):
        yield [r["day"], r["labels"], r["annotators"]]


def _design(summary, items):
    yield ["system", "labels", "annotators", "top_raters", "top_share", "warnings"]
    for r in (summary.get("design") or {}).get("systems", []):
        yield [
            r["system"],
            r["labels"],
            r["annotators"],
            " ".join(r["top_raters"]),
            r["top_share"],
            " ".join(r["warnings"]),
        ]


def _item_columns(items: dict):
    """Per item: token, the lead's external ids, whether gold and its expert answer, then votes.

    External ids are the lead's own names (prompt id, system names, output as prompt:system);
    they appear only in the lead's downloads and dashboard, never on an annotator's page.
    """
    n = len(items.get("unit", []))
    blank = [""] * n
    return zip(
        items.get("unit", []),
        items.get("prompt", blank),
        items.get("systems", blank),
        items.get("output", blank),
        items.get("gold", [False] * n),
        items.get("gold_answer", [None] * n),
        items.get("labels", []),
        items.get("majority", []),
        items.get("majority_tied", []),
        items.get("dawid_skene", []),
        items.get("dawid_skene_posterior", []),
        items.get("soft", [[]] * n),
        strict=False,
    )


ITEM_HEADER = [
    "unit",
    "prompt",
    "systems",
    "output",
    "gold",
    "gold_answer",
    "labels",
    "majority",
    "majority_tied",
    "dawid_skene",
    "dawid_skene_posterior",
]


def _item_row(unit, prompt, systems, output, gold, answer, n, mv, tied, ds, post) -> list:
    expert = category_label(answer) if answer is not None else ""
    return [unit, prompt, systems, output, bool(gold), expert, n, category_label(mv), tied]


# The latest adjudication of the item (a separate, append-only record; raw labels untouched):
# whether there is one, its decision, the reference label it set ("" when it kept the
# distribution or proposed a ruling), who made it and when.
ADJUDICATION_HEADER = [
    "adjudicated",
    "adjudicated_decision",
    "adjudicated_value",
    "adjudicated_by",
    "adjudicated_at",
]


def _adjudication_cells(adjudications: dict, unit: str) -> list:
    found = adjudications.get(unit)
    if found is None:
        return [False, "", "", "", ""]
    return [True, found["decision"], found["reference"], found["by"], found["at"]]


def _disagreements(summary, items, adjudications):
    yield [*ITEM_HEADER, *ADJUDICATION_HEADER]
    for unit, prompt, systems, output, gold, answer, n, mv, tied, ds, post, _soft in _item_columns(
        items
    ):
        if mv != ds:
            row = _item_row(unit, prompt, systems, output, gold, answer, n, mv, tied, ds, post)
            yield [*row, category_label(ds), post, *_adjudication_cells(adjudications, unit)]


def _aggregated(summary, items, adjudications):
    classes = items.get("classes", [])
    yield [*ITEM_HEADER, *ADJUDICATION_HEADER, *[f"soft:{c}" for c in classes]]
    for unit, prompt, systems, output, gold, answer, n, mv, tied, ds, post, soft in _item_columns(
        items
    ):
        row = _item_row(unit, prompt, systems, output, gold, answer, n, mv, tied, ds, post)
        adjudicated = _adjudication_cells(adjudications, unit)
        yield [*row, category_label(ds), post, *adjudicated, *soft]


def _spa(variant):
    def table(summary, items):
        yield [
            "system_x",
            "system_y",
            "expected",
            "p_x_better",
            "ci_low",
            "ci_high",
            "t",
            "df",
            "p_holm",
            "stars",
            "verdict",
            "n",
            "likert_difference",
            "likert_ci_low",
            "likert_ci_high",
            "likert_t",
            "likert_df",
            "likert_p_holm",
            "likert_stars",
            "likert_verdict",
            "likert_n",
            "reversal",
            "protocols_disagree",
            "annotators_for_power_0.8",
        ]
        for r in ((summary.get("spa") or {}).get("tables") or {}).get(variant, []):
            s, lk = r["spa"], r["likert"] or {}
            yield [
                r["x"],
                r["y"],
                r["expected"],
                s["mean"],
                s["ci_low"],
                s["ci_high"],
                s.get("t"),
                s.get("df"),
                s["p_holm"],
                s["stars"],
                s["verdict"],
                s["n"],
                lk.get("mean"),
                lk.get("ci_low"),
                lk.get("ci_high"),
                lk.get("t"),
                lk.get("df"),
                lk.get("p_holm"),
                lk.get("stars"),
                lk.get("verdict"),
                lk.get("n"),
                r["reversal"],
                r["protocols_disagree"],
                s["n_for_power"],
            ]

    return table


def _system_means(summary, items):
    yield ["system", "n_items", "n_ratings", "mean", "ci_low", "ci_high", "reason"]
    for s in (summary.get("systems") or {}).get("systems", []):
        yield [
            s["system"],
            s["n_items"],
            s["n_ratings"],
            s["mean"],
            s["ci_low"],
            s["ci_high"],
            s["reason"],
        ]


def _spa_dropped(summary, items):
    yield ["annotator", "comparison", "p_xy_plus_p_yx", "over_tau"]
    for d in (summary.get("spa") or {}).get("dropped", []):
        for c in d["sums"]:
            yield [d["annotator"], c["comparison"], c["sum"], c["over"]]


def _bradley_terry(summary, items):
    yield ["system", "strength", "ci_low", "ci_high"]
    for s in (summary.get("pairwise") or {}).get("strengths", []):
        yield [s["system"], s["strength"], s["ci_low"], s["ci_high"]]


def _left_choice(summary, items):
    yield ["annotator", "judgments", "share_left", "p", "p_holm", "position_bias"]
    left = (summary.get("pairwise") or {}).get("left_choice") or {}
    for a in left.get("annotators", []):
        yield [
            a["annotator"],
            a["judgments"],
            a["share_left"],
            a["p"],
            a.get("p_holm"),
            a.get("position_bias"),
        ]


TABLES = {
    "agreement": (_stats, False),
    "label-distribution": (_distribution, False),
    "agreement-over-time": (_over_time, False),
    "labels-per-day": (_labels_per_day, False),
    "design": (_design, False),
    "disagreements": (_disagreements, True),
    "soft-labels": (_aggregated, True),
    "spa-unfiltered": (_spa("unfiltered"), False),
    "spa-filtered": (_spa("filtered"), False),
    "spa-dropped": (_spa_dropped, False),
    "system-means": (_system_means, False),
    "bradley-terry": (_bradley_terry, False),
    "left-choice": (_left_choice, False),
}


def needs_items(name: str) -> bool:
    return TABLES[name][1]


def rows(
    name: str, summary: dict, items: dict | None, adjudications: dict | None = None
) -> Iterator[list]:
    """The named table's rows (header first); None cells become empty in the CSV.

    `adjudications` (item tables only): unit token -> the latest adjudication, as
    `qc.selectors.adjudications_by_unit` gives it."""
    fn, per_item = TABLES[name]
    table = fn(summary, items or {}, adjudications or {}) if per_item else fn(summary, items or {})
    for row in table:
        yield ["" if cell is None else cell for cell in row]


def aggregated_records(summary: dict, items: dict | None, adjudications: dict | None = None):
    """The aggregated labels as one dict per item (for JSON Lines): the soft-labels table's
    columns, the soft labels as {class: probability}, `adjudicated` a bool."""
    table = _aggregated(summary, items or {}, adjudications or {})
    header = next(table)
    classes = (items or {}).get("classes", [])
    n_fixed = len(header) - len(classes)
    for row in table:
        record = dict(zip(header[:n_fixed], row[:n_fixed], strict=True))
        record["soft"] = dict(zip(classes, row[n_fixed:], strict=False))
        yield record
