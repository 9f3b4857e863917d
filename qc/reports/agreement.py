"""The agreement section: percent and chance-corrected agreement for the scale, per-class
agreement beside the label distribution, and the chance-corrected statistic over time."""

from __future__ import annotations

import numpy as np

from analysis import agreement as ag
from qc.loaders import ReportConfig, Snapshot
from qc.reports.common import category_label, missing_row, num, stat_row
from qc.reports.labels import TIE, Labels

MAX_TIME_POINTS = 10


def chance_corrected(t: Labels) -> tuple[str, str, dict]:
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


def _bootstrapped(name: str, items, raters, labels, config: ReportConfig, **kwargs):
    result = getattr(ag, name)(items, raters, labels, **kwargs)
    boot = ag.bootstrap(
        name, items, raters, labels, n_boot=config.n_boot, seed=config.seed, **kwargs
    )
    return result, boot


def agreement_section(t: Labels, config: ReportConfig) -> dict:
    rows = []
    it, ra, la = t.items, t.raters, t.labels
    if t.level == "interval":
        rows.append(
            missing_row("percent", "Percent agreement", "not defined for a continuous scale")
        )
    else:
        res, boot = _bootstrapped("percent_agreement", it, ra, la, config)
        rows.append(stat_row("percent", "Percent agreement", res, boot))
    name, label, kwargs = chance_corrected(t)
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
            rows.append(stat_row(key, text, res, boot))
    else:
        res, boot = _bootstrapped(name, it, ra, la, config, **kwargs)
        rows.append(stat_row("chance_corrected", label, res, boot))
    if t.level == "interval":
        rows.append(stat_row("icc", "ICC(2,1)", ag.icc(it, ra, la, form="ICC(2,1)")))

    payload: dict = {"level": t.level, "items_are": t.what, "statistics": rows}
    if t.level != "interval":
        cats = {"categories": t.categories} if t.categories else {}
        dist = ag.label_distribution(it, ra, la, **cats)
        per_class = ag.specific_agreement(it, ra, la, **cats)
        payload["distribution"] = [
            {
                "label": category_label(c),
                "value": c,  # the raw category (a Likert score stays a number in the JSON)
                "count": int(n),
                "share": num(s),
                "specific_agreement": num(per_class.per_category.get(c, float("nan"))),
            }
            for c, n, s in zip(dist.categories, dist.counts, dist.shares, strict=True)
        ]
        payload["majority_class_share"] = num(dist.value)
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
                "share": num(n / max(la.size, 1)),
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
    name, label, kwargs = chance_corrected(t)
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
                "value": num(boot.value),
                "ci_low": num(boot.ci_low),
                "ci_high": num(boot.ci_high),
                "reason": boot.reason or "",
            }
        )
    if t.level == "preference":
        label = "Preference agreement (ties excluded)"
    return {"statistic": label, "points": points}
