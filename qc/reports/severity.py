"""The severity section: each rater's additive offset (y = mu + item + rater + e) with SE and CI,
the design's connectivity, per-system means raw and severity-adjusted, and the design confound.

Computed from `analysis.severity`; the confound rule is the engine's (`annotation.diagnostics`).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from analysis import severity
from annotation.diagnostics import balance_of
from annotation.models import Study
from qc.loaders import ReportConfig, Snapshot
from qc.reports.common import num
from qc.reports.labels import Labels, task_labels

SCALAR_KINDS = (Study.TaskKind.LIKERT, Study.TaskKind.CONTINUOUS, Study.TaskKind.SPA)
MAX_PAIRS = 10
MAX_COMPONENTS_LISTED = 20
MAX_NAMES_PER_COMPONENT = 12

DEFINITION = (
    "Raw mean: the mean over the system's items of each item's mean rating. Adjusted mean: the "
    "mean over the same items of the item effect mu + q_i of the additive model, that is each "
    "item's mean with every rating's rater offset removed; it answers 'what would the system "
    "score if every item had been rated by the average rater'."
)


ORDINAL_OFF = (
    "No severity offsets: this is an ordinal scale, and the additive model needs scores. A lead "
    "can choose to treat the levels as equally spaced numbers in the report settings."
)


def ordinal_scores(categories: tuple) -> tuple[dict, str]:
    """Each ordinal level's score and how it was chosen: the levels' stated values when every one
    is a number, else 0..k-1 in scale order."""
    try:
        values = [float(c) for c in categories]
        how = "their stated values"
    except (TypeError, ValueError):
        values = [float(k) for k in range(len(categories))]
        how = f"0 to {len(categories) - 1} in scale order"
    return dict(zip(categories, values, strict=True)), how


def _ordinal_as_scores(t: Labels, config: ReportConfig) -> tuple[Labels, str]:
    """The ordinal labels scored as numbers, and the page's sentence saying so."""
    scores, how = ordinal_scores(config.categories)
    known = np.isin(t.labels, list(scores))
    lookup = np.vectorize(scores.__getitem__, otypes=[float])
    labels = lookup(t.labels[known]) if known.any() else np.zeros(0)
    scored = Labels(
        t.items[known], t.raters[known], labels, t.label_ids[known], None, "interval", t.what
    )
    levels = ", ".join(
        f"{text} = {scores[value]:g}" for value, text in config.category_texts if value in scores
    )
    note = (
        f"This ordinal scale is treated as interval ({levels}; scored by {how}): the lead's "
        "choice in the report settings. Offsets and means below assume equal steps between "
        "levels; the agreement and aggregation sections still treat the scale as ordinal."
    )
    return scored, note


def _systems_of_rows(snap: Snapshot, config: ReportConfig, t) -> np.ndarray:
    """The system of each row of `t` (SPA: of the rated output; else of the unit's only output)."""
    if config.task_kind == Study.TaskKind.SPA:
        return snap.spa["ratings"]["system"].copy()
    order = np.argsort(snap.member_unit, kind="stable")
    m_unit, m_system = snap.member_unit[order], snap.member_system[order]
    pos = np.minimum(np.searchsorted(m_unit, t.items), max(m_unit.size - 1, 0))
    found = m_unit[pos] == t.items if m_unit.size else np.zeros(t.items.size, dtype=bool)
    return np.where(found, m_system[pos] if m_unit.size else 0, 0)


def _offset_reading(offset, low, high, unit: str) -> str:
    if offset is None:
        return "not estimable"
    if low is None or high is None:
        return f"{offset:+.2f} {unit} against the average rater; no interval"
    direction = "lower (stricter)" if offset < 0 else "higher (more lenient)"
    if low > 0 or high < 0:
        return (
            f"rates {abs(offset):.2f} {unit} {direction} than the average rater on the same "
            "items; the interval excludes 0"
        )
    return "no clear tilt: the interval includes 0"


def _confound(rows_rater, rows_system, names: dict) -> dict:
    # one integer key per (rater, system): a bincount, not a row-wise unique over 1M pairs
    raters, r_code = np.unique(rows_rater, return_inverse=True)
    systems, s_code = np.unique(rows_system, return_inverse=True)
    n = np.bincount(r_code * systems.size + s_code, minlength=raters.size * systems.size)
    counts = {
        (int(raters[k // systems.size]), int(systems[k % systems.size])): int(n[k])
        for k in np.flatnonzero(n).tolist()
    }
    balance = balance_of(counts, names)
    confounded = bool(balance.warnings)
    if confounded:
        reading = (
            "The raw comparison between systems is confounded with who rated what: the systems "
            "were rated by different raters, so a raw difference can be a rater difference. "
            "Read the severity-adjusted column."
        )
    else:
        reading = (
            "The systems were rated by a similar mix of raters: rater offsets affect them alike, "
            "so raw and adjusted comparisons should agree."
        )
    return {
        "confounded": confounded,
        "warnings": list(balance.warnings),
        "reading": reading,
        "top_share": {names.get(s, str(s)): v for s, v in balance.top_share.items()},
    }


def _components(fit, who: dict) -> list[dict]:
    out = []
    ranked = sorted(fit.components, key=lambda c: (-c[0].size, -c[1].size))
    for raters, items in ranked[:MAX_COMPONENTS_LISTED]:
        names = [who.get(int(r), str(r)) for r in raters.tolist()]
        out.append(
            {
                "n_raters": int(raters.size),
                "n_items": int(items.size),
                "raters": sorted(names)[:MAX_NAMES_PER_COMPONENT],
            }
        )
    return out


def severity_section(snap: Snapshot, config: ReportConfig) -> dict:
    ordinal = config.task_kind == Study.TaskKind.ORDINAL
    if ordinal and not config.ordinal_as_interval:
        return {"applies": False, "ordinal": True, "reason": ORDINAL_OFF}
    if config.task_kind not in SCALAR_KINDS and not ordinal:
        return {"applies": False, "reason": "severity offsets need a scored task (Likert, 0-100)"}
    t = task_labels(snap, config)
    interval_note = ""
    if ordinal and t is not None:
        t, interval_note = _ordinal_as_scores(t, config)
    if t is None or t.labels.size == 0:
        return {"applies": True, "reason": "no scored labels yet", "interval_note": interval_note}
    unit = {Study.TaskKind.CONTINUOUS: "points (0-100)", Study.TaskKind.ORDINAL: "levels"}.get(
        config.task_kind, "points"
    )
    items, raters, scores = t.items, t.raters, t.labels.astype(float)
    systems = _systems_of_rows(snap, config, t)
    names = dict(config.systems)
    who = snap.annotator_names

    fit = severity.rater_offsets(items, raters, scores)
    payload: dict = {
        "applies": True,
        "interval_note": interval_note,
        "items_are": t.what,
        "unit": unit,
        "n_labels": int(fit.n),
        "n_items": int(fit.items.size),
        "n_raters": int(fit.raters.size),
        "identifiable": bool(fit.identifiable),
        "n_components": len(fit.components),
        "components": _components(fit, who) if not fit.identifiable else [],
        "reason": fit.reason,
        "definition": DEFINITION,
        "confound": _confound(raters, systems, names),
    }
    scope = "all raters"
    if not fit.identifiable:
        # Offsets are comparable only within a component: fit the largest one on its own.
        big_raters, _big_items = max(fit.components, key=lambda c: (c[0].size, c[1].size))
        keep = np.isin(raters, big_raters)
        items, raters, scores, systems = items[keep], raters[keep], scores[keep], systems[keep]
        fit = severity.rater_offsets(items, raters, scores)
        scope = f"the largest connected part ({fit.raters.size} raters, {fit.items.size} items)"
    payload["scope"] = scope
    payload["residual_sd"] = num(fit.residual_sd)
    payload["df_resid"] = int(fit.df_resid)
    payload["fit_reason"] = fit.reason

    rows = []
    for j, r in enumerate(fit.raters.tolist()):
        off, lo, hi = (
            num(fit.offset_values[j]),
            num(fit.ci_low[j]),
            num(fit.ci_high[j]),
        )
        rows.append(
            {
                "annotator_id": int(r),
                "annotator": who.get(int(r), str(r)),
                "offset": off,
                "se": num(fit.se[j]),
                "ci_low": lo,
                "ci_high": hi,
                "n": int(fit.n_per_rater[j]),
                "excludes_zero": bool(lo is not None and hi is not None and (lo > 0 or hi < 0)),
                "reading": _offset_reading(off, lo, hi, "levels" if ordinal else "points"),
            }
        )
    rows.sort(key=lambda r: (r["offset"] is None, r["offset"] or 0.0))
    payload["raters"] = rows
    payload["n_excluding_zero"] = sum(r["excludes_zero"] for r in rows)

    gm = severity.group_means(fit, items, raters, scores, systems)
    order = [s for s, _ in config.systems if s in set(gm.groups.tolist())]
    order += [s for s in gm.groups.tolist() if s not in order]
    index = {g: i for i, g in enumerate(gm.groups.tolist())}
    payload["systems"] = [
        {
            "system": names.get(s, str(s)),
            "n_items": int(gm.n_items[index[s]]),
            "n_labels": int(gm.n_labels[index[s]]),
            "raw": num(gm.raw[index[s]]),
            "raw_ci_low": num(gm.raw_ci_low[index[s]]),
            "raw_ci_high": num(gm.raw_ci_high[index[s]]),
            "adjusted": num(gm.adjusted[index[s]]),
            "adjusted_ci_low": num(gm.adjusted_ci_low[index[s]]),
            "adjusted_ci_high": num(gm.adjusted_ci_high[index[s]]),
            "shift": num(gm.raw[index[s]] - gm.adjusted[index[s]]),
        }
        for s in order
    ]
    payload["means_reason"] = gm.reason
    differences = []
    for a, b in list(combinations(order, 2))[:MAX_PAIRS]:
        d = gm.difference(a, b)
        differences.append(
            {
                "a": names.get(a, str(a)),
                "b": names.get(b, str(b)),
                "raw": num(d.raw),
                "raw_ci_low": num(d.raw_ci_low),
                "raw_ci_high": num(d.raw_ci_high),
                "adjusted": num(d.adjusted),
                "adjusted_ci_low": num(d.adjusted_ci_low),
                "adjusted_ci_high": num(d.adjusted_ci_high),
                "reason": d.reason,
                "reading": _difference_reading(d, names.get(a, str(a)), names.get(b, str(b))),
            }
        )
    payload["differences"] = differences
    return payload


def _difference_reading(d, a: str, b: str) -> str:
    if d.reason:
        return d.reason
    lo, hi = d.adjusted_ci_low, d.adjusted_ci_high
    if lo > 0:
        verdict = f"{a} scores higher than {b} once rater offsets are removed"
    elif hi < 0:
        verdict = f"{a} scores lower than {b} once rater offsets are removed"
    else:
        verdict = "the adjusted interval includes 0: no clear difference between the systems"
    moved = d.adjusted - d.raw
    if abs(moved) >= 0.1 * max(abs(d.raw), 1e-9) and abs(moved) > 0.05:
        verdict += f"; the adjustment moves the difference by {moved:+.2f}"
    return verdict
