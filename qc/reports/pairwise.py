"""The pairwise section: Bradley-Terry strengths with bootstrap intervals, and each annotator's
left-choice rate (position bias), from the sides as they were shown.

Position bias is flagged per annotator by an exact two-sided binomial test of their left-choice
share against 0.5 (ties left out), Holm-adjusted across annotators (Holm 1979), at alpha 0.05.
"""

from __future__ import annotations

import numpy as np

from analysis import preference as pref
from qc.loaders import ReportConfig, Snapshot
from qc.reports.common import num

BIAS_ALPHA = 0.05
BIAS_TEST = (
    "exact two-sided binomial test of the share of left choices (ties left out) against 0.5, "
    "Holm-adjusted across annotators"
)


def pairwise_section(snap: Snapshot, config: ReportConfig) -> dict:
    if snap.pair_unit is None or snap.label_id.size == 0:
        return {"reason": "no pairwise labels yet"}
    pos = np.minimum(np.searchsorted(snap.pair_unit, snap.unit), max(snap.pair_unit.size - 1, 0))
    ok = (snap.pair_unit.size > 0) & (snap.pair_unit[pos] == snap.unit)
    ok &= np.isin(snap.choice, ["left", "right", "tie"])
    pos, choice, winner = pos[ok], snap.choice[ok].astype(str), snap.winner[ok]
    a, b = snap.pair_left[pos], snap.pair_right[pos]
    # The side shown on the left: the winner if "left" was clicked, the other system if "right".
    other = np.where(winner == a, b, a)
    shown_left = np.where(choice == "left", winner, np.where(choice == "right", other, a))
    shown_right = np.where(shown_left == a, b, a)
    names = dict(config.systems)
    name = np.vectorize(lambda s: names.get(int(s), str(s)), otypes=[object])
    bt = pref.bradley_terry(
        snap.unit[ok],
        snap.annotator[ok],
        name(shown_left),
        name(shown_right),
        choice,
        ties="half",
        n_boot=config.n_boot,
        seed=config.seed,
    )
    bias = bt.position_bias
    p_holm = pref.holm(bias.p)
    flagged = np.nan_to_num(p_holm, nan=1.0) <= BIAS_ALPHA
    order = np.argsort(-np.nan_to_num(bt.strength_values, nan=-np.inf))
    return {
        "strengths": [
            {
                "system": str(bt.systems[i]),
                "strength": num(bt.strength_values[i]),
                "ci_low": num(bt.ci_low[i]),
                "ci_high": num(bt.ci_high[i]),
            }
            for i in order.tolist()
        ],
        "reason": bt.reason,
        "n_judgments": bt.n_judgments,
        "n_ties": bt.n_ties,
        "n_boot": bt.n_boot,
        "n_boot_used": bt.n_boot_used,
        "left_choice": {
            "overall_share": num(bias.overall_share_left),
            "overall_p": num(bias.overall_p),
            "test": BIAS_TEST,
            "alpha": BIAS_ALPHA,
            "n_flagged": int(flagged.sum()),
            "annotators": [
                {
                    "annotator": snap.annotator_names.get(int(r), str(r)),
                    "annotator_id": int(r),
                    "judgments": int(n),
                    "share_left": num(s),
                    "p": num(p),
                    "p_holm": num(ph),
                    "position_bias": bool(flag),
                }
                for r, n, s, p, ph, flag in zip(
                    bias.raters.tolist(),
                    bias.n.tolist(),
                    bias.share_left.tolist(),
                    bias.p.tolist(),
                    p_holm.tolist(),
                    flagged.tolist(),
                    strict=True,
                )
            ],
        },
    }
