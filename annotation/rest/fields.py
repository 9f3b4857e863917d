"""What the API's write serializers share: strict scalar fields (a string is not a number, 1 is
not true), a serializer that refuses keys it does not list, and services' errors as 400s.

Write serializers only check shapes; every rule is the service's, and its refusal is answered as
a 400 keyed by the field it names.
"""

from collections.abc import Mapping

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import serializers
from rest_framework.metadata import SimpleMetadata

from annotation.imports.kinds import LONE_SURROGATE
from annotation.rest.serializers import StrictCharField

__all__ = [
    "DescriptionOnly",
    "StrictBooleanField",
    "StrictCharField",
    "StrictFloatField",
    "StrictIntegerField",
    "JsonObjectField",
    "WriteSerializer",
    "id_or_404",
    "service_error",
]

INT_MAX = 2**31 - 1


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer only ("5", 5.5 and true are refused)."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    """A JSON number only (a numeric string or a boolean is refused)."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """true or false only (DRF's would take "yes", "on", 1...)."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class WriteSerializer(serializers.Serializer):
    """A request body: only the fields listed are accepted; any other key (a token, a role, open
    slots, a status on the wrong route...) is a 400 naming it, so nothing is silently ignored."""

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            writable = {name for name, f in self.fields.items() if not f.read_only}
            unknown = sorted(str(k) for k in set(data) - writable)
            if unknown:
                allowed = ", ".join(sorted(writable))
                raise serializers.ValidationError(
                    dict.fromkeys(unknown, [f"is not writable here (this request takes {allowed})"])
                )
        return super().to_internal_value(data)


def id_or_404(value: str) -> int:
    """A row id from the URL (any string there): a number in the database's range, else 404."""
    if not value.isascii() or not value.isdigit() or int(value) > 2**63 - 1:
        raise Http404
    return int(value)


def json_problem(value, path: str = "") -> str | None:
    """Why a JSON value cannot be stored (PostgreSQL refuses NUL in text and JSON, and UTF-8 has
    no lone surrogate), or None."""
    if isinstance(value, str):
        if "\x00" in value:
            return f"{path or 'value'} contains a NUL character"
        if LONE_SURROGATE.search(value):
            return f"{path or 'value'} contains a lone surrogate (not valid Unicode text)"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            problem = json_problem(key, path) or json_problem(item, f"{path}.{key}".lstrip("."))
            if problem:
                return problem
    if isinstance(value, list):
        for i, item in enumerate(value):
            problem = json_problem(item, f"{path}[{i}]")
            if problem:
                return problem
    return None


class JsonObjectField(serializers.DictField):
    """A JSON object whose every string can be stored (no NUL character)."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        problem = json_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value


class DescriptionOnly(SimpleMetadata):
    """OPTIONS answers the route's name and description, not DRF's guess at its actions (which
    reads a list view's object to describe PUT, and the read serializer for POST)."""

    def determine_actions(self, request, view):
        return {}


def service_error(error: Exception) -> serializers.ValidationError:
    """A service's refusal (Django ValidationError, or an error with `field` and `message`) as
    DRF's 400, keyed by the field it names."""
    if isinstance(error, DjangoValidationError):
        if hasattr(error, "error_dict"):
            return serializers.ValidationError(error.message_dict)
        return serializers.ValidationError({"non_field_errors": error.messages})
    field = getattr(error, "field", None) or "non_field_errors"
    return serializers.ValidationError({field: [getattr(error, "message", str(error))]})
