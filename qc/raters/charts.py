"""Vega-Lite specs of the rater-quality views: forest plot of offsets, gold accuracy per week,
Dawid-Skene confusion heatmap, time per item. Data in, spec out; nothing is computed here.

A chart whose data is too thin says so in its title instead of drawing an empty axis.
"""

from __future__ import annotations

from qc.charts import _base, _intervals

FOREST_MAX_ROWS = 40


def severity_forest(section: dict, highlight: str | None = None) -> dict | None:
    """Forest plot of the rater offsets (point and 95% CI), the dashed line at 0 = average rater.

    With many raters, the FOREST_MAX_ROWS / 2 strictest and most lenient are shown (title says so);
    `highlight` marks one rater (the rater page's own position).
    """
    rows = [r for r in (section or {}).get("raters", []) if r.get("offset") is not None]
    if not rows or any(r.get("ci_low") is None for r in rows):
        return None
    total = len(rows)
    if total > FOREST_MAX_ROWS:
        half = FOREST_MAX_ROWS // 2
        rows = rows[:half] + rows[-half:]
        if highlight and highlight not in {r["annotator"] for r in rows}:
            rows += [r for r in section["raters"] if r["annotator"] == highlight]
            rows.sort(key=lambda r: r["offset"])
    values = [
        {
            "label": r["annotator"],
            "value": r["offset"],
            "ci_low": r["ci_low"],
            "ci_high": r["ci_high"],
            "n": r["n"],
            "this": r["annotator"] == highlight,
        }
        for r in rows
    ]
    shown = f" (the {len(rows)} most extreme of {total})" if len(rows) < total else ""
    spec = _intervals(
        f"Rater offsets{shown}",
        values,
        "Offset in points against the average rater, with 95% CI",
        0.0,
        "Severity offsets: left of the dashed line stricter, right more lenient",
    )
    spec["height"] = max(60, 16 * len(values))
    point = spec["layer"][-1]
    point["encoding"]["color"] = {
        "field": "this",
        "type": "nominal",
        "scale": {"domain": [False, True], "range": ["#1c3d7a", "#c62828"]},
        "legend": None,
    }
    return spec


def gold_per_week(weeks: list[dict], guide_changes: list[dict], min_items: int) -> dict:
    """Gold accuracy per week with Wilson intervals; guide-version changes as dashed rules."""
    values = [w for w in weeks if w["n"] > 0]
    thin = sum(w["n"] for w in values) < min_items
    title = "Gold accuracy per week (Wilson 95% CI)"
    if thin:
        title += f": not enough gold yet (under {min_items} items), read with care"
    spec = _base(title, values, "Share of gold items answered right each week; dashed = guide")
    x = {"field": "week", "type": "temporal", "title": "Week starting"}
    y_scale = {"domain": [0, 1]}
    spec["layer"] = [
        {
            "mark": {"type": "rule"},
            "encoding": {
                "x": x,
                "y": {
                    "field": "ci_low",
                    "type": "quantitative",
                    "scale": y_scale,
                    "axis": {"format": "%"},
                    "title": "Gold accuracy",
                },
                "y2": {"field": "ci_high"},
            },
        },
        {
            "mark": {"type": "line", "point": True},
            "encoding": {"x": x, "y": {"field": "accuracy", "type": "quantitative"}},
        },
    ]
    if guide_changes:
        spec["layer"].append(
            {
                "data": {"values": guide_changes},
                "mark": {"type": "rule", "strokeDash": [4, 4], "color": "#e0a100"},
                "encoding": {"x": {"field": "week", "type": "temporal"}},
            }
        )
        spec["layer"].append(
            {
                "data": {"values": guide_changes},
                "mark": {"type": "text", "dy": -6, "align": "left", "color": "#7a4b00"},
                "encoding": {
                    "x": {"field": "week", "type": "temporal"},
                    "y": {"value": 8},
                    "text": {"field": "label"},
                },
            }
        )
    return spec


def confusion_heatmap(confusion: dict) -> dict | None:
    """The rater's Dawid-Skene confusion matrix: rows true class, columns the answer given."""
    cells = [c for c in (confusion or {}).get("cells", []) if c.get("rate") is not None]
    if not cells:
        return None
    spec = _base(
        "Dawid-Skene confusion (rows: estimated true class)",
        cells,
        "P(answer | true class) for this rater",
    )
    spec["width"] = min(60 * len(confusion["classes"]) + 60, 420)
    enc_x = {"field": "given", "type": "ordinal", "sort": confusion["classes"], "title": "Answer"}
    enc_y = {"field": "true", "type": "ordinal", "sort": confusion["classes"], "title": "True"}
    spec["layer"] = [
        {
            "mark": {"type": "rect"},
            "encoding": {
                "x": enc_x,
                "y": enc_y,
                "color": {
                    "field": "rate",
                    "type": "quantitative",
                    "scale": {"domain": [0, 1], "scheme": "blues"},
                    "title": "P",
                },
            },
        },
        {
            "mark": {"type": "text"},
            "encoding": {
                "x": enc_x,
                "y": enc_y,
                "text": {"field": "rate", "type": "quantitative", "format": ".2f"},
                "color": {
                    "condition": {"test": "datum.rate > 0.5", "value": "white"},
                    "value": "black",
                },
            },
        },
    ]
    return spec


def time_per_item(timing: dict) -> dict | None:
    """The rater's median seconds per item against the pool's quartiles and fast cut-off."""
    if not timing or timing.get("rater_median_s") is None:
        return None
    values = [
        {
            "who": "Pool (quartiles)",
            "low": timing["pool_q1_s"],
            "high": timing["pool_q3_s"],
            "mid": timing["pool_median_s"],
        },
        {
            "who": "This rater (quartiles)",
            "low": timing["rater_q1_s"],
            "high": timing["rater_q3_s"],
            "mid": timing["rater_median_s"],
        },
    ]
    spec = _base("Seconds per item", values, "Median and quartiles of time per item")
    spec["height"] = 70
    y = {"field": "who", "type": "nominal", "sort": None, "title": None}
    spec["layer"] = [
        {
            "mark": {"type": "bar", "height": 14, "opacity": 0.35},
            "encoding": {
                "y": y,
                "x": {"field": "low", "type": "quantitative", "title": "Seconds per item"},
                "x2": {"field": "high"},
            },
        },
        {
            "mark": {"type": "tick", "thickness": 3},
            "encoding": {"y": y, "x": {"field": "mid", "type": "quantitative"}},
        },
    ]
    if timing.get("fast_cutoff_s") is not None:
        spec["layer"].append(
            {
                "data": {"values": [{"cut": timing["fast_cutoff_s"]}]},
                "mark": {"type": "rule", "strokeDash": [4, 4], "color": "#c62828"},
                "encoding": {"x": {"field": "cut", "type": "quantitative"}},
            }
        )
    return spec
