"""The SPA section: per comparison, mean stated P[X>Y] against 0.5 beside the paired Likert test,
unfiltered and tau-filtered (Ethayarajh & Jurafsky 2022), with reversals and power flagged.

The filtered table leaves the annotators the tau filter dropped out of both protocols.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from analysis import preference as pref
from annotation.models import Comparison
from qc.loaders import ReportConfig, Snapshot
from qc.reports.common import num, stars

ALPHA = 0.05
POWER_TARGET = 0.8
PAPER_TAU = 1.1  # the paper's threshold, used for the exploratory table when none is set


def _per_annotator_comparison(annotator, comparison, values):
    """One value per (annotator, comparison): the mean of repeated answers (several batches)."""
    keys = np.stack([annotator, comparison], axis=1)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    sums = np.bincount(inv, weights=values, minlength=len(uniq))
    counts = np.bincount(inv, minlength=len(uniq))
    return uniq[:, 0], uniq[:, 1], sums / counts


def _expected_verdict(expected: str) -> str | None:
    return {
        Comparison.Expected.X_BETTER: "X>Y",
        Comparison.Expected.Y_BETTER: "Y>X",
        Comparison.Expected.INDIFFERENT: pref.NO_DIFFERENCE,
    }.get(expected)


def _test_row(row) -> dict:
    effect = row.t / math.sqrt(row.n) if row.n > 1 and math.isfinite(row.t) else float("nan")
    n_needed = None
    if math.isfinite(effect) and effect != 0:
        n_needed = num(
            pref.power(effect, max(row.n, 2), alpha=ALPHA, target=POWER_TARGET).n_for_target
        )
    return {
        "n": int(row.n),
        "mean": num(row.mean),
        "ci_low": num(row.ci_low),
        "ci_high": num(row.ci_high),
        "t": num(row.t),
        "df": int(row.df) if math.isfinite(row.df) and row.n > 1 else None,
        "p": num(row.p),
        "p_holm": num(row.p_holm),
        "stars": stars(row.p_holm),
        "verdict": row.verdict,
        "reason": row.reason,
        "effect_d": num(effect),
        "n_for_power": n_needed,
    }


def _reverse_answers(ann, comp, rev) -> tuple[np.ndarray | None, str]:
    """P[Y>X] aligned with the forward answers, or None and why the tau filter cannot run."""
    if rev.size == 0:
        return None, "the reverse question P[Y>X] was not asked: no tau filter"
    r_ann, r_comp, r_p = _per_annotator_comparison(
        rev["annotator"], rev["comparison"], rev["probability"] / 100.0
    )
    lookup = {
        (a, c): p for a, c, p in zip(r_ann.tolist(), r_comp.tolist(), r_p.tolist(), strict=True)
    }
    matched = [lookup.get(key) for key in zip(ann.tolist(), comp.tolist(), strict=True)]
    missing = sum(p is None for p in matched)
    if missing:
        return None, f"{missing} answers lack the reverse question P[Y>X]: no tau filter"
    return np.array(matched, dtype=float), ""


def spa_section(snap: Snapshot, config: ReportConfig) -> dict:
    answers = snap.spa["answers"] if snap.spa else None
    if answers is None or answers.size == 0:
        return {"reason": "no SPA answers yet"}
    fwd = answers[~answers["reverse"]]
    ann, comp, p_xy = _per_annotator_comparison(
        fwd["annotator"], fwd["comparison"], fwd["probability"] / 100.0
    )
    p_yx, filter_reason = _reverse_answers(ann, comp, answers[answers["reverse"]])
    preregistered = config.spa_tau is not None
    filtered = p_yx is not None
    if preregistered and not filtered:
        filter_reason = f"the pre-registered tau filter could not be applied: {filter_reason}"
    tau = config.spa_tau if preregistered else PAPER_TAU
    result = pref.spa(ann, comp, p_xy, p_yx=p_yx, tau=tau if filtered else None, alpha=ALPHA)
    likert_everyone = _likert_protocol(snap, config)
    variants = [("unfiltered", result.unfiltered, likert_everyone)]
    if filtered:
        # The same annotators on both sides: whoever the tau filter dropped leaves the Likert test.
        likert = _likert_protocol(snap, config, leave_out=result.dropped)
        variants.append(("filtered", result.rows, likert))
    tables = {variant: _table(result, rows, likert, config) for variant, rows, likert in variants}
    primary = "filtered" if preregistered and filtered else "unfiltered"
    dropped = _dropped(snap, config, result.dropped, ann, comp, p_xy, p_yx, tau) if filtered else []
    needed = [
        r["spa"]["n_for_power"]
        for r in tables[primary]
        if r["spa"]["n_for_power"] is not None and r["expected"] != "indifferent"
    ]
    return {
        "alpha": ALPHA,
        "tau": tau if filtered else None,
        "tau_preregistered": preregistered,
        "preregistered_variant": primary,
        "filter_reason": filter_reason,
        "n_annotators": int(result.n_annotators),
        "dropped_annotators": int(result.n_dropped),
        "dropped": dropped,
        # In the filtered table the dropped annotators leave the Likert column too.
        "filter_applies_to_likert": bool(filtered and likert_everyone is not None),
        "tables": tables,
        "recovered": {variant: _recovered(table) for variant, table in tables.items()},
        "likert_reason": "no Likert ratings on the SPA pages" if likert_everyone is None else "",
        "annotators_for_power": max(needed) if needed else None,
        "power_target": POWER_TARGET,
    }


def _table(result, rows, likert, config: ReportConfig) -> list[dict]:
    """One SPA-versus-Likert table: the SPA rows of one variant beside that variant's Likert."""
    cmp_rows = {c[0]: c for c in config.comparisons}
    flags_by = {}
    if likert is not None:
        as_spa = dataclasses.replace(result, rows=rows)
        flags_by = {c.comparison: c for c in pref.compare_protocols(as_spa, likert)}
    table = []
    for row in rows:
        meta = cmp_rows.get(row.comparison)
        expected = meta[5] if meta else ""
        want = _expected_verdict(expected)
        lrow = likert.by_comparison.get(row.comparison) if likert is not None else None
        flags = flags_by.get(row.comparison)
        reversal = _likert_opposite(row, lrow, want)
        table.append(
            {
                "comparison": int(row.comparison),
                "x": meta[2] if meta else str(row.comparison),
                "y": meta[4] if meta else "",
                "expected": expected,
                "spa": _test_row(row),
                "likert": _test_row(lrow) if lrow is not None else None,
                "spa_matches_expected": (row.verdict == want) if want else None,
                "likert_matches_expected": (lrow.verdict == want) if want and lrow else None,
                "reversal": reversal,
                # verdicts differ without a reversal (e.g. one significant, the other not)
                "protocols_disagree": bool(
                    lrow is not None and lrow.verdict != row.verdict and not reversal
                ),
                "both_significant_opposite": bool(flags.reversal) if flags else False,
                "direction_disagrees": bool(flags.direction_disagrees) if flags else False,
                "likert_significant_opposite": reversal,
                "likert_unexpected": bool(want and lrow is not None and lrow.verdict != want),
            }
        )
    return table


def _likert_opposite(spa_row, lrow, want) -> bool:
    """The reversal flag: Likert significant (Holm) in the direction opposite to the SPA
    estimate (the sign of mean P[X>Y] - 0.5, significant or not) or to the expected relation
    when one is stated (Ethayarajh & Jurafsky 2022, Table 1: human vs davinci)."""
    if lrow is None or lrow.verdict not in ("X>Y", "Y>X"):
        return False
    opposite = {"X>Y": "Y>X", "Y>X": "X>Y"}[lrow.verdict]
    if want in ("X>Y", "Y>X") and want == opposite:
        return True
    if not math.isfinite(spa_row.mean) or spa_row.mean == 0.5:
        return False
    spa_direction = "X>Y" if spa_row.mean > 0.5 else "Y>X"
    return spa_direction == opposite


def _recovered(table: list[dict]) -> dict:
    """How many stated expected relations each protocol recovers (the paper's "SPA 5/5, Likert
    2/5"): a stated direction needs a Holm-significant verdict that way; "no difference" needs
    no significant verdict."""
    stated = [r for r in table if r["spa_matches_expected"] is not None]
    with_likert = [r for r in stated if r["likert"] is not None]
    return {
        "expected": len(stated),
        "spa": sum(bool(r["spa_matches_expected"]) for r in stated),
        "likert": sum(bool(r["likert_matches_expected"]) for r in with_likert),
        "likert_expected": len(with_likert),
    }


def _dropped(snap: Snapshot, config: ReportConfig, dropped, ann, comp, p_xy, p_yx, tau) -> list:
    """The annotators the tau filter dropped, each with P[X>Y] + P[Y>X] per comparison."""
    if dropped is None or len(dropped) == 0:
        return []
    names = {c[0]: f"{c[2]} vs {c[4]}" for c in config.comparisons}
    sums = p_xy + p_yx
    out = []
    for a in np.asarray(dropped).tolist():  # the dropped few
        mine = ann == a
        rows = [
            {
                "comparison": names.get(int(c), str(c)),
                "sum": round(float(v), 4),
                "over": bool(v > tau + 1e-9),
            }
            for c, v in zip(comp[mine].tolist(), sums[mine].tolist(), strict=True)
        ]
        out.append(
            {
                "annotator": snap.annotator_names.get(int(a), str(a)),
                "annotator_id": int(a),
                "sums": rows,
                "max_sum": max(r["sum"] for r in rows),
            }
        )
    return sorted(out, key=lambda d: (-d["max_sum"], d["annotator"]))


def _likert_protocol(snap: Snapshot, config: ReportConfig, leave_out=None):
    """The paired Likert test per comparison, on every rater but those in `leave_out`."""
    ratings = snap.spa["ratings"] if snap.spa else None
    if ratings is None or ratings.size == 0 or not config.comparisons:
        return None
    if leave_out is not None and len(leave_out):
        ratings = ratings[~np.isin(ratings["annotator"], leave_out)]
        if ratings.size == 0:
            return None
    # per (annotator, system): the annotator's mean rating of that system's outputs
    a_sys, s_sys, mean = _per_annotator_comparison(
        ratings["annotator"], ratings["system"], ratings["score"]
    )
    by = {(a, s): m for a, s, m in zip(a_sys.tolist(), s_sys.tolist(), mean.tolist(), strict=True)}
    ann, comp, lx, ly = [], [], [], []
    for cid, x_id, _xn, y_id, _yn, _exp in config.comparisons:  # a handful of comparisons
        for a in np.unique(a_sys).tolist():
            if (a, x_id) in by and (a, y_id) in by:
                ann.append(a)
                comp.append(cid)
                lx.append(by[(a, x_id)])
                ly.append(by[(a, y_id)])
    if not ann:
        return None
    return pref.likert_paired(ann, comp, lx, ly, alpha=ALPHA)
