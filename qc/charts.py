"""Vega-Lite chart specs built from a stored report: data in, a JSON spec out.

Rendered in the page by static/concord/charts.js (vega-embed with the CSP-safe interpreter);
tests check what a chart says by reading the spec, without a browser.
"""

from __future__ import annotations

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"
WIDTH = 520


def _base(title: str, values: list[dict], description: str) -> dict:
    return {
        "$schema": SCHEMA,
        "title": title,
        "description": description,
        "width": WIDTH,
        "data": {"values": values},
        "config": {"view": {"stroke": None}, "axis": {"labelLimit": 220}},
    }


def label_distribution(distribution: list[dict], title="Label distribution") -> dict:
    values = [{"label": d["label"], "share": d["share"], "count": d["count"]} for d in distribution]
    spec = _base(title, values, "Share of labels in each class")
    spec.update(
        mark={"type": "bar"},
        encoding={
            "y": {"field": "label", "type": "nominal", "sort": None, "title": None},
            "x": {
                "field": "share",
                "type": "quantitative",
                "axis": {"format": "%"},
                "title": "Share of labels",
            },
            "tooltip": [{"field": "label"}, {"field": "count"}],
        },
    )
    return spec


def agreement_over_time(points: list[dict], statistic: str) -> dict:
    values = [p for p in points if p.get("value") is not None]
    spec = _base(f"{statistic} over time", values, "Cumulative agreement at the end of each day")
    x = {"field": "day", "type": "temporal", "title": "Day"}
    spec["layer"] = [
        {
            "mark": {"type": "area", "opacity": 0.25},
            "encoding": {
                "x": x,
                "y": {"field": "ci_low", "type": "quantitative", "title": statistic},
                "y2": {"field": "ci_high"},
            },
        },
        {
            "mark": {"type": "line", "point": True},
            "encoding": {"x": x, "y": {"field": "value", "type": "quantitative"}},
        },
    ]
    return spec


def _intervals(title, values, x_title, reference, description, category="label") -> dict:
    spec = _base(title, values, description)
    y = {"field": category, "type": "nominal", "sort": None, "title": None}
    spec["layer"] = [
        {
            "mark": {"type": "rule"},
            "encoding": {
                "y": y,
                "x": {
                    "field": "ci_low",
                    "type": "quantitative",
                    "title": x_title,
                    "scale": {"zero": False},
                },
                "x2": {"field": "ci_high"},
            },
        },
        {
            "mark": {"type": "point", "filled": True, "size": 70},
            "encoding": {"y": y, "x": {"field": "value", "type": "quantitative"}},
        },
    ]
    if reference is not None:
        spec["layer"].insert(
            0,
            {
                "data": {"values": [{"ref": reference}]},
                "mark": {"type": "rule", "strokeDash": [4, 4], "color": "#888"},
                "encoding": {"x": {"field": "ref", "type": "quantitative"}},
            },
        )
    return spec


def spa_intervals(table: list[dict], variant: str) -> dict:
    values = [
        {
            "label": f"{r['x']} vs {r['y']}",
            "value": r["spa"]["mean"],
            "ci_low": r["spa"]["ci_low"],
            "ci_high": r["spa"]["ci_high"],
            "stars": r["spa"]["stars"],
        }
        for r in table
        if r["spa"]["mean"] is not None
    ]
    spec = _intervals(
        f"P[X > Y] per comparison ({variant})",
        values,
        "P[X > Y] with 95% CI",
        0.5,
        "Mean stated probability that X is better than Y; the dashed line is indifference (0.5)",
    )
    spec["layer"][-1]["encoding"]["x"]["scale"] = {"domain": [0, 1]}
    return spec


def bradley_terry(strengths: list[dict]) -> dict:
    values = [
        {
            "label": s["system"],
            "value": s["strength"],
            "ci_low": s["ci_low"],
            "ci_high": s["ci_high"],
        }
        for s in strengths
        if s["strength"] is not None
    ]
    return _intervals(
        "Bradley-Terry strengths",
        values,
        "Strength (log scale, sum zero) with 95% CI",
        0.0,
        "Bradley-Terry system strengths with bootstrap intervals",
    )


def labels_per_day(rows: list[dict]) -> dict:
    spec = _base("Labels per day", rows, "Production labels submitted each day")
    spec.update(
        mark={"type": "bar"},
        encoding={
            "x": {"field": "day", "type": "temporal", "title": "Day"},
            "y": {"field": "labels", "type": "quantitative", "title": "Labels"},
            "tooltip": [
                {"field": "day", "type": "temporal"},
                {"field": "labels"},
                {"field": "annotators"},
            ],
        },
    )
    return spec


NOT_ENOUGH = "Not enough data yet"


def empty_notes(summary: dict) -> dict[str, str]:
    """For each chart that has too little data to say anything, what the page says instead.

    An over-time line needs two days with a value (one day is a single dot); a distribution
    needs labels; interval charts need at least one interval.
    """
    notes: dict[str, str] = {}
    over_time = summary.get("agreement_over_time") or {}
    if "points" in over_time:
        points = [p for p in over_time["points"] if p.get("value") is not None]
        if len(points) < 2:
            notes["agreement_over_time"] = (
                f"{NOT_ENOUGH} for {over_time.get('statistic', 'agreement')} over time: it needs "
                f"a defined value on two days or more (so far {len(points)})."
            )
    agreement = summary.get("agreement") or {}
    if "distribution" in agreement and not any(d["count"] for d in agreement["distribution"]):
        notes["label_distribution"] = f"{NOT_ENOUGH}: no labels to count."
    pairwise = summary.get("pairwise") or {}
    if "strengths" in pairwise:
        drawn = [s for s in pairwise["strengths"] if s.get("strength") is not None]
        if len(drawn) < 2:
            notes["bradley_terry"] = f"{NOT_ENOUGH}: strengths need two systems with judgments."
    spa = summary.get("spa") or {}
    table = (spa.get("tables") or {}).get(spa.get("preregistered_variant", "unfiltered"))
    if table is not None and not [r for r in table if r["spa"]["mean"] is not None]:
        notes["spa"] = f"{NOT_ENOUGH}: no comparison has an answer."
    return notes


def for_report(summary: dict) -> dict[str, dict]:
    """Every chart the dashboard shows for a report, by name (none where `empty_notes` says
    there is not enough data)."""
    charts: dict[str, dict] = {}
    progress = summary.get("progress") or {}
    if progress.get("labels_per_day"):
        charts["labels_per_day"] = labels_per_day(progress["labels_per_day"])
    agreement = summary.get("agreement") or {}
    if agreement.get("distribution"):
        charts["label_distribution"] = label_distribution(agreement["distribution"])
    over_time = summary.get("agreement_over_time") or {}
    if over_time.get("points"):
        charts["agreement_over_time"] = agreement_over_time(
            over_time["points"], over_time.get("statistic", "Agreement")
        )
    spa = summary.get("spa") or {}
    tables = spa.get("tables") or {}
    variant = spa.get("preregistered_variant", "unfiltered")
    if tables.get(variant):
        charts["spa"] = spa_intervals(tables[variant], variant)
    pairwise = summary.get("pairwise") or {}
    if pairwise.get("strengths"):
        charts["bradley_terry"] = bradley_terry(pairwise["strengths"])
    for name in empty_notes(summary):
        charts.pop(name, None)
    return charts
