"""The agreement section: percent and chance-corrected agreement for the scale, per-class
agreement beside the label distribution, and the chance-corrected statistic over time."""

from __future__ import annotations

import numpy as np

from analysis import agreement as ag
from qc.loaders import ReportConfig, Snapshot
from qc.reports.common import display_label, missing_row, num, stat_row
from qc.reports.labels import TIE, Labels

MAX_TIME_POINTS = 10
# Raw minus chance-corrected agreement at which the page explains the prevalence paradox.
PARADOX_GAP = 0.25
# ... when chance alone makes two labels agree this often (sum of squared class shares): the
# paradox is a prevalence effect, not any gap between two different statistics.
PARADOX_CHANCE = 0.55


def chance_share(shares) -> float:
    return float(np.sum(np.square(np.asarray(shares, dtype=float))))


def _without_duplicate(rows: list[dict]) -> list[dict]:
    """Pairwise: percent agreement counts a tie as a third answer, which makes it the same number
    as preference agreement with ties; show it once and say so."""
    percent = next((r for r in rows if r["key"] == "percent"), None)
    ties = next((r for r in rows if r["key"] == "preference_with_ties"), None)
    if percent is None or ties is None:
        return rows
    same = (
        percent["value"] is not None
        and ties["value"] is not None
        and abs(percent["value"] - ties["value"]) < 1e-9
    )
    if not same:
        return rows
    percent["label"] = "Percent agreement (ties count as an answer)"
    percent["same_as"] = "preference agreement with ties included: the same pairs, the same number"
    return [r for r in rows if r is not ties]


def reading(row: dict) -> str:
    """One line saying what the number means, for the page beside it."""
    value, low, high = row["value"], row["ci_low"], row["ci_high"]
    if value is None:
        return ""
    key = row["key"]
    if key == "percent":
        text = f"Two raters of one item gave the same label in {value:.0%} of pairs"
        if row.get("same_as"):
            text += f" (also the {row['same_as']})"
        return text + "; chance alone produces some of this."
    if key == "preference_without_ties":
        return f"Where both raters picked a side, they picked the same one in {value:.0%} of pairs."
    scale = "1 is perfect agreement, 0 is what chance alone gives"
    if key == "icc":
        scale = "the share of rating variance due to the items (1: raters agree exactly)"
    if low is None or high is None:
        return f"{value:.2f}: {scale}; no interval."
    if low > 0:
        return f"Above chance: the whole interval is above 0 ({scale})."
    if high < 0:
        return (
            f"Below chance: raters disagree more often than chance alone would make them ({scale})."
        )
    return f"The interval crosses 0: no clear agreement beyond chance in these labels ({scale})."


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


def _bootstrapped(statistics: dict, t: Labels, config: ReportConfig) -> dict:
    """key -> (result, bootstrap) for key -> (name, kwargs): the bootstraps share their
    resampled items (one set of draws for the statistics of the same items)."""
    specs = list(statistics.values())
    boots = ag.bootstrap_many(
        specs, t.items, t.raters, t.labels, n_boot=config.n_boot, seed=config.seed
    )
    return {
        key: (getattr(ag, name)(t.items, t.raters, t.labels, **kwargs), boot)
        for (key, (name, kwargs)), boot in zip(statistics.items(), boots, strict=True)
    }


def agreement_section(t: Labels, config: ReportConfig) -> dict:
    rows = []
    it, ra, la = t.items, t.raters, t.labels
    name, label, kwargs = chance_corrected(t)
    wanted = {}
    if t.level != "interval":
        wanted["percent"] = ("percent_agreement", {})
    if t.level != "preference":
        wanted["chance_corrected"] = (name, kwargs)
    found = _bootstrapped(wanted, t, config)
    if t.level == "interval":
        rows.append(
            missing_row("percent", "Percent agreement", "not defined for a continuous scale")
        )
    else:
        res, boot = found["percent"]
        rows.append(stat_row("percent", "Percent agreement", res, boot))
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
        res, boot = found["chance_corrected"]
        rows.append(stat_row("chance_corrected", label, res, boot))
    if t.level == "interval":
        rows.append(stat_row("icc", "ICC(2,1)", ag.icc(it, ra, la, form="ICC(2,1)")))
    rows = _without_duplicate(rows)
    for row in rows:
        row["reading"] = reading(row)

    payload: dict = {"level": t.level, "items_are": t.what, "statistics": rows}
    if t.level != "interval":
        cats = {"categories": t.categories} if t.categories else {}
        dist = ag.label_distribution(it, ra, la, **cats)
        per_class = ag.specific_agreement(it, ra, la, **cats)
        payload["distribution"] = [
            {
                "label": display_label(c, config.category_texts),
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
        if (
            percent is not None
            and chance is not None
            and percent - chance >= PARADOX_GAP
            and chance_share(dist.shares) >= PARADOX_CHANCE
            and t.level != "preference"
        ):
            payload["prevalence_warning"] = (
                f"Raw agreement ({percent:.0%}) and the chance-corrected statistic "
                f"({chance:.2f}) diverge: the most frequent class has {dist.value:.0%} of the "
                f"labels, so two labels agree {chance_share(dist.shares):.0%} of the time by "
                "chance alone and raters agree little beyond that (the "
                "prevalence paradox). Read the per-class agreement below and the items where "
                "raters disagree."
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
