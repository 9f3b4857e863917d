"""A study's quality report: snapshot arrays in, a JSON-safe payload out (NaN -> null + reason).

Every statistic comes from the `analysis` package; this module only shapes arrays and results.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from analysis import agreement as ag
from analysis import labelmodels as lm
from analysis import preference as pref
from annotation.models import Comparison, Study
from qc.loaders import ReportConfig, Snapshot

logger = logging.getLogger(__name__)

TIE = "tie"
# Significance marks of the paper's Table 1, on Holm-adjusted p.
STARS = ((0.01, "***"), (0.05, "**"), (0.10, "*"))
ALPHA = 0.05
POWER_TARGET = 0.8
MAX_TIME_POINTS = 10
PREVIEW_ROWS = 50
KINDS_WITH_CATEGORIES = (
    Study.TaskKind.CATEGORICAL,
    Study.TaskKind.ORDINAL,
    Study.TaskKind.LIKERT,
    Study.TaskKind.PAIRWISE,
)


@dataclass(frozen=True)
class Report:
    summary: dict  # what the dashboard shows (small)
    items: dict  # per-item tables for download (aggregated and soft labels)


Progress = Callable[[str, int], None]


# --------------------------------------------------------------------------- JSON safety


def clean(value):
    """Numpy and float values made JSON-safe: NaN and infinities become None."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return clean(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _num(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def stars(p) -> str:
    if p is None or not math.isfinite(p):
        return ""
    for cut, mark in STARS:
        if p < cut:
            return mark
    return ""


def _stat(key: str, label: str, result, boot=None) -> dict:
    """One statistic row: value, CI (bootstrap or the statistic's own), reason and counts."""
    ci_low = getattr(boot, "ci_low", getattr(result, "ci_low", float("nan")))
    ci_high = getattr(boot, "ci_high", getattr(result, "ci_high", float("nan")))
    return {
        "key": key,
        "label": label,
        "value": _num(result.value),
        "ci_low": _num(ci_low),
        "ci_high": _num(ci_high),
        "reason": result.reason or (boot.reason if boot is not None else None) or "",
        "n_items": int(getattr(result, "n_items", 0)),
        "n_raters": int(getattr(result, "n_raters", 0)),
        "n_labels": int(getattr(result, "n_labels", 0)),
        "n_boot": int(boot.n_boot) if boot is not None else 0,
    }


def _missing(key: str, label: str, reason: str) -> dict:
    return {
        "key": key,
        "label": label,
        "value": None,
        "ci_low": None,
        "ci_high": None,
        "reason": reason,
        "n_items": 0,
        "n_raters": 0,
        "n_labels": 0,
        "n_boot": 0,
    }


def _section(name: str, fn, *args):
    """Run one section; a failure is recorded in the report instead of losing the whole report."""
    try:
        return fn(*args)
    except Exception as exc:  # one bad section must not hide the others
        logger.exception("report section %s failed", name)
        return {"error": f"{type(exc).__name__}: {exc}"}


# --------------------------------------------------------------------------- the label columns


@dataclass(frozen=True)
class Labels:
    """The long-format columns a task kind's agreement and aggregation run on."""

    items: np.ndarray
    raters: np.ndarray
    labels: np.ndarray
    label_ids: np.ndarray  # for cutting the data by time
    categories: tuple | None  # scale order when declared and covering every label
    level: str  # nominal, ordinal, interval, preference
    what: str  # what the items are, for the page


def _declared(labels: np.ndarray, categories: tuple) -> tuple | None:
    if not categories or labels.size == 0:
        return tuple(categories) or None
    seen = np.unique(labels)
    return tuple(categories) if set(seen.tolist()) <= set(categories) else None


def task_labels(snap: Snapshot, config: ReportConfig) -> Labels | None:
    kind = config.task_kind
    if kind in (Study.TaskKind.CATEGORICAL, Study.TaskKind.ORDINAL):
        keep = snap.choice != ""
        labels = snap.choice[keep].astype(str)
        level = "nominal" if kind == Study.TaskKind.CATEGORICAL else "ordinal"
        return Labels(
            snap.unit[keep],
            snap.annotator[keep],
            labels,
            snap.label_id[keep],
            _declared(labels, config.categories),
            level,
            "units",
        )
    if kind in (Study.TaskKind.LIKERT, Study.TaskKind.CONTINUOUS):
        keep = np.isfinite(snap.score)
        labels = snap.score[keep]
        if kind == Study.TaskKind.LIKERT:
            return Labels(
                snap.unit[keep],
                snap.annotator[keep],
                labels,
                snap.label_id[keep],
                _declared(labels, config.categories),
                "ordinal",
                "units",
            )
        return Labels(
            snap.unit[keep],
            snap.annotator[keep],
            labels,
            snap.label_id[keep],
            None,
            "interval",
            "units",
        )
    if kind == Study.TaskKind.PAIRWISE:
        names = dict(config.systems)
        winners, codes = np.unique(snap.winner, return_inverse=True)
        lookup = np.array([names.get(int(w), str(w)) for w in winners.tolist()], dtype=object)
        labels = lookup[codes.reshape(-1)]
        labels[snap.winner == 0] = TIE
        cats = tuple(name for _, name in config.systems) + (TIE,)
        return Labels(
            snap.unit,
            snap.annotator,
            labels.astype(str),
            snap.label_id,
            _declared(labels.astype(str), cats),
            "preference",
            "units",
        )
    if kind == Study.TaskKind.SPA and snap.spa is not None and snap.spa["ratings"].size:
        r = snap.spa["ratings"]
        return Labels(
            r["output"].copy(),
            r["annotator"].copy(),
            r["score"].copy(),
            r["label"].copy(),
            _declared(r["score"], config.categories),
            "ordinal",
            "outputs rated on the SPA pages (Likert)",
        )
    return None


# --------------------------------------------------------------------------- progress


def progress_section(snap: Snapshot) -> dict:
    n_units = snap.unit_ids.size
    pos = np.searchsorted(snap.unit_ids, snap.unit)
    pos = np.minimum(pos, max(n_units - 1, 0))
    on_unit = (snap.unit_ids[pos] == snap.unit) if n_units else np.zeros(0, dtype=bool)
    per_unit = np.bincount(pos[on_unit], minlength=n_units)
    complete = per_unit >= snap.unit_overlap
    leased = np.isin(snap.unit_ids, snap.leased_units)
    in_progress = ~complete & ((per_unit > 0) | leased)
    return {
        "units": {
            "total": int(n_units),
            "complete": int(complete.sum()),
            "in_progress": int(in_progress.sum()),
            "waiting": int(n_units - complete.sum() - in_progress.sum()),
        },
        "labels": int(snap.label_id.size),
        "labels_all_purposes": int(snap.label_count),
        "annotators_total": snap.annotators_total,
        "annotators_active_7d": snap.annotators_active_7d,
        "labels_per_day": [
            {"day": day, "labels": n, "annotators": a} for day, n, _last, a in snap.days
        ],
    }


# --------------------------------------------------------------------------- agreement


def _chance_corrected(t: Labels) -> tuple[str, str, dict]:
    """(statistic name, display label, kwargs) of the chance-corrected statistic for the scale."""
    two_raters = np.unique(t.raters).size == 2
    cats = {"categories": t.categories} if t.categories else {}
    if t.level == "nominal":
        if two_raters:
            return "cohen_kappa", "Cohen's kappa", cats
        return "fleiss_kappa", "Fleiss' kappa", cats
    if t.level == "ordinal":
        if two_raters:
            return "cohen_kappa", "Weighted kappa (quadratic)", {"weights": "quadratic", **cats}
        return "krippendorff_alpha", "Krippendorff's alpha (ordinal)", {"level": "ordinal", **cats}
    if t.level == "interval":
        return "krippendorff_alpha", "Krippendorff's alpha (interval)", {"level": "interval"}
    return "specific_agreement", "Preference agreement (ties included)", {}


def _bootstrapped(name: str, t: Labels, items, raters, labels, config, n_boot=None, **kwargs):
    fn = getattr(ag, name)
    result = fn(items, raters, labels, **kwargs)
    boot = ag.bootstrap(
        name, items, raters, labels, n_boot=n_boot or config.n_boot, seed=config.seed, **kwargs
    )
    return result, boot


def agreement_section(t: Labels, config: ReportConfig) -> dict:
    rows = []
    it, ra, la = t.items, t.raters, t.labels
    if t.level == "interval":
        rows.append(_missing("percent", "Percent agreement", "not defined for a continuous scale"))
    else:
        res, boot = _bootstrapped("percent_agreement", t, it, ra, la, config)
        rows.append(_stat("percent", "Percent agreement", res, boot))
    name, label, kwargs = _chance_corrected(t)
    if t.level == "preference":
        for ties, key, text in (
            ("include", "preference_with_ties", "Preference agreement (ties included)"),
            ("exclude", "preference_without_ties", "Preference agreement (ties excluded)"),
        ):
            keep = np.ones(la.size, dtype=bool) if ties == "include" else la != TIE
            res = ag.preference_agreement(it, ra, la, ties=ties)
            # The pooled preference agreement is the overall specific agreement of the same pairs.
            boot = ag.bootstrap(
                "specific_agreement",
                it[keep],
                ra[keep],
                la[keep],
                n_boot=config.n_boot,
                seed=config.seed,
            )
            rows.append(_stat(key, text, res, boot))
    else:
        res, boot = _bootstrapped(name, t, it, ra, la, config, **kwargs)
        rows.append(_stat("chance_corrected", label, res, boot))
    if t.level == "interval":
        rows.append(_stat("icc", "ICC(2,1)", ag.icc(it, ra, la, form="ICC(2,1)")))

    payload: dict = {"level": t.level, "items_are": t.what, "statistics": rows}
    if t.level != "interval":
        cats = {"categories": t.categories} if t.categories else {}
        dist = ag.label_distribution(it, ra, la, **cats)
        per_class = ag.specific_agreement(it, ra, la, **cats)
        payload["distribution"] = [
            {
                "label": str(c),
                "count": int(n),
                "share": _num(s),
                "specific_agreement": _num(per_class.per_category.get(c, float("nan"))),
            }
            for c, n, s in zip(dist.categories, dist.counts, dist.shares, strict=True)
        ]
        payload["majority_class_share"] = _num(dist.value)
        percent = next((r["value"] for r in rows if r["key"] == "percent"), None)
        chance = rows[1]["value"] if len(rows) > 1 else None
        if percent is not None and chance is not None and percent >= 0.8 and chance < 0.4:
            payload["prevalence_warning"] = (
                f"Percent agreement is high ({percent:.2f}) but the chance-corrected statistic is "
                f"low ({chance:.2f}): the most frequent class has "
                f"{dist.value:.0%} of the labels (the prevalence paradox). Read the per-class "
                "agreement and the disagreeing items."
            )
    else:
        counts, edges = np.histogram(la, bins=10, range=(0.0, 100.0))
        payload["distribution"] = [
            {
                "label": f"{edges[i]:g}-{edges[i + 1]:g}",
                "count": int(n),
                "share": _num(n / max(la.size, 1)),
                "specific_agreement": None,
            }
            for i, n in enumerate(counts)
        ]
    return payload


def agreement_over_time(t: Labels, snap: Snapshot, config: ReportConfig) -> dict:
    """The chance-corrected statistic on the labels up to the end of each day (cumulative)."""
    days = snap.days
    if len(days) > MAX_TIME_POINTS:
        picks = np.unique(np.linspace(0, len(days) - 1, MAX_TIME_POINTS).round().astype(int))
        days = [days[i] for i in picks]
    name, label, kwargs = _chance_corrected(t)
    points = []
    for day, _n, last_id, _a in days:
        keep = t.label_ids <= last_id
        if t.level == "preference":
            keep &= t.labels != TIE  # over time: the stricter reading, ties excluded
        if not keep.any():
            continue
        boot = ag.bootstrap(
            name,
            t.items[keep],
            t.raters[keep],
            t.labels[keep],
            n_boot=config.n_boot_over_time,
            seed=config.seed,
            **kwargs,
        )
        points.append(
            {
                "day": day,
                "labels": int(keep.sum()),
                "value": _num(boot.value),
                "ci_low": _num(boot.ci_low),
                "ci_high": _num(boot.ci_high),
                "reason": boot.reason or "",
            }
        )
    if t.level == "preference":
        label = "Preference agreement (ties excluded)"
    return {"statistic": label, "points": points}


# --------------------------------------------------------------------------- aggregation


def _tokens(snap: Snapshot, units: np.ndarray) -> np.ndarray:
    if snap.unit_ids.size == 0:
        return np.full(units.size, "", dtype=object)
    pos = np.minimum(np.searchsorted(snap.unit_ids, units), snap.unit_ids.size - 1)
    found = snap.unit_ids[pos] == units
    return np.where(found, snap.unit_tokens[pos], "")


def _class_counts(labels: np.ndarray, classes: np.ndarray) -> list[dict]:
    idx = np.searchsorted(classes, labels)
    counts = np.bincount(idx, minlength=classes.size)
    total = max(int(counts.sum()), 1)
    return [
        {"label": str(c), "count": int(n), "share": n / total}
        for c, n in zip(classes.tolist(), counts.tolist(), strict=True)
    ]


def aggregation_section(t: Labels, snap: Snapshot, config: ReportConfig) -> tuple[dict, dict]:
    it, ra, la = t.items, t.raters, t.labels
    mv = lm.majority_vote(it, ra, la, tie_break="random", seed=config.seed)
    ds = lm.dawid_skene(it, ra, la)
    soft = lm.soft_labels(it, ra, la)
    classes = soft.classes
    if not (np.array_equal(mv.items, soft.items) and np.array_equal(ds.items, soft.items)):
        raise ValueError("label models returned different item sets")
    ds_labels = ds.item_labels
    ds_conf = ds.posteriors.max(axis=1)
    disagree = mv.item_labels != ds_labels
    tokens = _tokens(snap, soft.items)
    n_per_item = soft.counts.sum(axis=1)
    preview = np.flatnonzero(disagree)[:PREVIEW_ROWS]
    summary = {
        "classes": [str(c) for c in classes.tolist()],
        "n_items": int(soft.items.size),
        "n_disagree": int(disagree.sum()),
        "n_majority_ties": int(mv.tied.sum()),
        "majority": _class_counts(mv.item_labels, classes),
        "dawid_skene": _class_counts(ds_labels, classes),
        "dawid_skene_converged": bool(ds.converged),
        "dawid_skene_iterations": int(ds.n_iter),
        "dawid_skene_reason": ds.reason or "",
        "disagreements": [
            {
                "unit": str(tokens[i]),
                "labels": int(n_per_item[i]),
                "majority": str(mv.item_labels[i]),
                "majority_tied": bool(mv.tied[i]),
                "dawid_skene": str(ds_labels[i]),
                "dawid_skene_posterior": _num(ds_conf[i]),
                "votes": {str(c): int(n) for c, n in zip(classes, soft.counts[i], strict=True)},
            }
            for i in preview.tolist()
        ],
    }
    if config.unanimous_view:
        summary["unanimous"] = unanimous_view(t, soft, mv, classes)
    items = {
        "classes": [str(c) for c in classes.tolist()],
        "unit": tokens.tolist(),
        "labels": n_per_item.tolist(),
        "majority": [str(x) for x in mv.item_labels.tolist()],
        "majority_tied": mv.tied.tolist(),
        "dawid_skene": [str(x) for x in ds_labels.tolist()],
        "dawid_skene_posterior": np.round(ds_conf, 6).tolist(),
        "soft": np.round(soft.proportions, 6).tolist(),
    }
    return summary, items


def unanimous_view(t: Labels, soft, mv, classes) -> dict:
    """The same summaries on the items every rater agreed on, always beside the full set."""
    n_i = soft.counts.sum(axis=1)
    pairable = n_i >= 2
    unanimous = pairable & (soft.counts.max(axis=1) == n_i)
    keep = np.isin(t.items, soft.items[unanimous])
    name, label, kwargs = _chance_corrected(t)
    if t.level == "preference":
        name, kwargs = "specific_agreement", {}
    full = getattr(ag, name)(t.items, t.raters, t.labels, **kwargs)
    subset = (
        getattr(ag, name)(t.items[keep], t.raters[keep], t.labels[keep], **kwargs)
        if keep.any()
        else None
    )
    return {
        "note": "Unanimous items only: restricting to items every rater agreed on removes the "
        "hardest items and inflates every metric; the full-set result is shown beside it.",
        "n_items": int(unanimous.sum()),
        "n_items_full": int(pairable.sum()),
        "statistic": label,
        "value_full": _num(full.value),
        "value_unanimous": _num(subset.value) if subset is not None else None,
        "reason_unanimous": (subset.reason or "") if subset is not None else "no unanimous items",
        "majority_full": _class_counts(mv.item_labels[pairable], classes),
        "majority_unanimous": _class_counts(mv.item_labels[unanimous], classes),
    }


# --------------------------------------------------------------------------- SPA table


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
        n_needed = _num(
            pref.power(effect, max(row.n, 2), alpha=ALPHA, target=POWER_TARGET).n_for_target
        )
    return {
        "n": int(row.n),
        "mean": _num(row.mean),
        "ci_low": _num(row.ci_low),
        "ci_high": _num(row.ci_high),
        "t": _num(row.t),
        "p": _num(row.p),
        "p_holm": _num(row.p_holm),
        "stars": stars(row.p_holm),
        "verdict": row.verdict,
        "reason": row.reason,
        "effect_d": _num(effect),
        "n_for_power": n_needed,
    }


def spa_section(snap: Snapshot, config: ReportConfig) -> dict:
    answers = snap.spa["answers"] if snap.spa else None
    if answers is None or answers.size == 0:
        return {"reason": "no SPA answers yet"}
    fwd = answers[~answers["reverse"]]
    rev = answers[answers["reverse"]]
    ann, comp, p_xy = _per_annotator_comparison(
        fwd["annotator"], fwd["comparison"], fwd["probability"] / 100.0
    )
    p_yx = None
    filter_reason = ""
    if rev.size:
        r_ann, r_comp, r_p = _per_annotator_comparison(
            rev["annotator"], rev["comparison"], rev["probability"] / 100.0
        )
        lookup = {
            (a, c): p for a, c, p in zip(r_ann.tolist(), r_comp.tolist(), r_p.tolist(), strict=True)
        }
        matched = [lookup.get(key) for key in zip(ann.tolist(), comp.tolist(), strict=True)]
        if all(p is not None for p in matched):
            p_yx = np.array(matched, dtype=float)
        else:
            missing = sum(p is None for p in matched)
            filter_reason = f"{missing} answers lack the reverse question P[Y>X]: no tau filter"
    else:
        filter_reason = "the reverse question P[Y>X] was not asked: no tau filter"
    preregistered = config.spa_tau is not None
    tau = config.spa_tau if preregistered else 1.1
    result = pref.spa(
        ann, comp, p_xy, p_yx=p_yx, tau=tau if p_yx is not None else None, alpha=ALPHA
    )
    likert = _likert_protocol(snap, config)
    cmp_rows = {c[0]: c for c in config.comparisons}
    tables = {}
    variants = [("unfiltered", result.unfiltered)]
    if p_yx is not None:
        variants.append(("filtered", result.rows))
    for variant, rows in variants:
        comparison_flags = {}
        if likert is not None:
            as_spa = dataclasses.replace(result, rows=rows)
            comparison_flags = {c.comparison: c for c in pref.compare_protocols(as_spa, likert)}
        table = []
        for row in rows:
            meta = cmp_rows.get(row.comparison)
            expected = meta[5] if meta else ""
            want = _expected_verdict(expected)
            lrow = likert.by_comparison.get(row.comparison) if likert is not None else None
            flags = comparison_flags.get(row.comparison)
            entry = {
                "comparison": int(row.comparison),
                "x": meta[2] if meta else str(row.comparison),
                "y": meta[4] if meta else "",
                "expected": expected,
                "spa": _test_row(row),
                "likert": _test_row(lrow) if lrow is not None else None,
                "spa_matches_expected": (row.verdict == want) if want else None,
                "likert_matches_expected": (lrow.verdict == want) if want and lrow else None,
                "protocols_disagree": bool(lrow is not None and lrow.verdict != row.verdict),
                "reversal": bool(flags.reversal) if flags else False,
                "direction_disagrees": bool(flags.direction_disagrees) if flags else False,
                "likert_significant_opposite": _likert_opposite(row, lrow, want),
                "likert_unexpected": bool(want and lrow is not None and lrow.verdict != want),
            }
            table.append(entry)
        tables[variant] = table
    needed = [
        r["spa"]["n_for_power"]
        for r in tables.get("filtered" if preregistered and p_yx is not None else "unfiltered", [])
        if r["spa"]["n_for_power"] is not None and r["expected"] != "indifferent"
    ]
    return {
        "alpha": ALPHA,
        "tau": tau if p_yx is not None else None,
        "tau_preregistered": preregistered,
        "preregistered_variant": "filtered" if preregistered else "unfiltered",
        "filter_reason": filter_reason,
        "n_annotators": int(result.n_annotators),
        "dropped_annotators": int(result.n_dropped),
        "tables": tables,
        "likert_reason": "" if likert is not None else "no Likert ratings on the SPA pages",
        "annotators_for_power": max(needed) if needed else None,
        "power_target": POWER_TARGET,
    }


def _likert_opposite(spa_row, lrow, want) -> bool:
    """Likert significant against the stated direction, or (none stated) against SPA."""
    if lrow is None or lrow.verdict not in ("X>Y", "Y>X"):
        return False
    opposite = {"X>Y": "Y>X", "Y>X": "X>Y"}[lrow.verdict]
    if want in ("X>Y", "Y>X"):
        return want == opposite
    return spa_row.verdict == opposite


def _likert_protocol(snap: Snapshot, config: ReportConfig):
    ratings = snap.spa["ratings"] if snap.spa else None
    if ratings is None or ratings.size == 0 or not config.comparisons:
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


# --------------------------------------------------------------------------- pairwise


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
    order = np.argsort(-np.nan_to_num(bt.strength_values, nan=-np.inf))
    return {
        "strengths": [
            {
                "system": str(bt.systems[i]),
                "strength": _num(bt.strength_values[i]),
                "ci_low": _num(bt.ci_low[i]),
                "ci_high": _num(bt.ci_high[i]),
            }
            for i in order.tolist()
        ],
        "reason": bt.reason,
        "n_judgments": bt.n_judgments,
        "n_ties": bt.n_ties,
        "n_boot": bt.n_boot,
        "n_boot_used": bt.n_boot_used,
        "left_choice": {
            "overall_share": _num(bias.overall_share_left),
            "overall_p": _num(bias.overall_p),
            "annotators": [
                {"annotator": int(r), "judgments": int(n), "share_left": _num(s), "p": _num(p)}
                for r, n, s, p in zip(
                    bias.raters.tolist(),
                    bias.n.tolist(),
                    bias.share_left.tolist(),
                    bias.p.tolist(),
                    strict=True,
                )
            ],
        },
    }


# --------------------------------------------------------------------------- the report


def build_report(snap: Snapshot, config: ReportConfig, progress: Progress | None = None) -> Report:
    step = progress or (lambda stage, pct: None)
    summary: dict = {
        "version": config.version,
        "task_kind": config.task_kind,
        "settings": config.as_dict(),
        "snapshot": {
            "label_count": snap.label_count,
            "newest_label_id": snap.newest_label_id,
            "taken_at": snap.taken_at.isoformat(),
        },
    }
    items: dict = {}
    step("progress", 5)
    summary["progress"] = _section("progress", progress_section, snap)
    t = task_labels(snap, config)
    if t is None or t.labels.size == 0:
        summary["agreement"] = {"reason": "no labels to compare yet"}
    else:
        step("agreement", 15)
        summary["agreement"] = _section("agreement", agreement_section, t, config)
        step("agreement over time", 40)
        summary["agreement_over_time"] = _section("over time", agreement_over_time, t, snap, config)
        if config.task_kind in KINDS_WITH_CATEGORIES:
            step("aggregation", 60)
            both = _section("aggregation", aggregation_section, t, snap, config)
            if isinstance(both, tuple):
                summary["aggregation"], items = both
            else:
                summary["aggregation"] = both
    if config.task_kind == Study.TaskKind.SPA:
        step("spa", 75)
        summary["spa"] = _section("spa", spa_section, snap, config)
    if config.task_kind == Study.TaskKind.PAIRWISE:
        step("bradley-terry", 80)
        summary["pairwise"] = _section("pairwise", pairwise_section, snap, config)
    step("done", 90)
    return Report(summary=clean(summary), items=clean(items))
