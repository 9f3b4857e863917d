"""Template filters turning a stored report section into its chart spec (no statistics)."""

from django import template

from qc.raters import charts

register = template.Library()


@register.filter
def severity_forest(section, highlight=None):
    return charts.severity_forest(section, highlight)


@register.filter
def gold_chart(page, summary):
    gold = (page or {}).get("gold") or {}
    if not any(w["n"] for w in gold.get("weeks") or []):
        return None
    changes = (summary or {}).get("guide_changes") or []
    return charts.gold_per_week(gold["weeks"], changes, 20)


@register.filter
def confusion_chart(page):
    return charts.confusion_heatmap((page or {}).get("confusion"))


@register.filter
def timing_chart(page):
    return charts.time_per_item((page or {}).get("timing"))


@register.filter
def percent(value, digits=0):
    """0.8636 -> "86%" (None -> "—")."""
    if value is None:
        return "—"
    return f"{100 * float(value):.{int(digits)}f}%"


@register.filter
def get(mapping, key):
    return (mapping or {}).get(key)
