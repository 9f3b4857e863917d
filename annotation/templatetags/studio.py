"""Small template filters for the lead's pages."""

from django import template

from annotation.models import Study

register = template.Library()


@register.filter
def get(mapping, key):
    """`mapping|get:key`: a dict lookup by a variable key ("" when absent)."""
    return (mapping or {}).get(key, "")


@register.filter
def humanize_field(name: str) -> str:
    """A Study field's name as the settings page labels it."""
    try:
        return str(Study._meta.get_field(name).verbose_name)
    except Exception:
        return name.replace("_", " ")
