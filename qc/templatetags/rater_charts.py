"""Template filters turning a stored report section into its chart spec (no statistics)."""

from django import template

from qc.raters import charts

register = template.Library()


@register.filter
def severity_forest(section, highlight=None):
    return charts.severity_forest(section, highlight)
