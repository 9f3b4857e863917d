"""Query-string filters, each declared by name (no relation paths from the query string)."""

import datetime

import django_filters as filters
from django import forms

from annotation.models import Enrolment, Label, Membership, Output, Prompt, Study, Unit
from annotation.models.units import UnitKind, UnitRole
from annotation.models.work import Purpose


class StrictBooleanField(forms.NullBooleanField):
    """true/false (or 1/0); anything else is an error, not "no filter"."""

    widget = forms.TextInput

    VALUES = {"true": True, "1": True, "false": False, "0": False}

    def to_python(self, value):
        if value in (None, ""):
            return None
        if isinstance(value, bool):
            return value
        try:
            return self.VALUES[str(value).lower()]
        except KeyError:
            raise forms.ValidationError("must be true or false") from None

    def validate(self, value):
        pass


class StrictBooleanFilter(filters.BooleanFilter):
    field_class = StrictBooleanField


class IntegerFilter(filters.NumberFilter):
    field_class = forms.IntegerField


class StrictFilterSet(filters.FilterSet):
    """A declared filter given without a value is an error (not silently "no filter")."""

    def is_valid(self):
        valid = super().is_valid()
        for name in self.filters:
            if name in self.data and self.data.get(name) == "":
                self.form.add_error(name, "give a value, or leave the parameter out")
                valid = False
        return valid and not self.form.errors


class UtcDateTimeFilter(filters.IsoDateTimeFilter):
    """An ISO 8601 moment, any offset Python accepts, compared in UTC (PostgreSQL refuses offsets
    beyond 15:59 that Python parses, which would otherwise be a 500)."""

    def filter(self, qs, value):
        if value is not None:
            value = value.astimezone(datetime.UTC)
        return super().filter(qs, value)


class StudyFilter(StrictFilterSet):
    workspace = filters.CharFilter(field_name="workspace__slug", help_text="Workspace slug.")

    class Meta:
        model = Study
        fields = ["status", "task_kind", "workspace"]


class MembershipFilter(StrictFilterSet):
    class Meta:
        model = Membership
        fields = ["role"]


class PromptFilter(StrictFilterSet):
    class Meta:
        model = Prompt
        fields = ["external_id", "language", "topic", "source"]


class OutputFilter(StrictFilterSet):
    system = filters.CharFilter(field_name="system__name", help_text="System name.")
    prompt = filters.CharFilter(field_name="prompt__external_id", help_text="Prompt external id.")

    class Meta:
        model = Output
        fields = ["system", "prompt"]


class UnitFilter(StrictFilterSet):
    role = filters.ChoiceFilter(choices=UnitRole.choices)
    kind = filters.ChoiceFilter(choices=UnitKind.choices)
    open = StrictBooleanFilter(
        method="filter_open", help_text="Only units with (true) or without (false) open slots."
    )

    class Meta:
        model = Unit
        fields = ["role", "kind", "open"]

    def filter_open(self, queryset, name, value):
        return queryset.filter(open_slots__gt=0) if value else queryset.filter(open_slots=0)


class EnrolmentFilter(StrictFilterSet):
    class Meta:
        model = Enrolment
        fields = ["pool"]


class LabelFilter(StrictFilterSet):
    purpose = filters.ChoiceFilter(choices=Purpose.choices)
    annotator = filters.CharFilter(field_name="annotator__username", help_text="Username.")
    unit = filters.CharFilter(field_name="unit__token", help_text="Unit token.")
    guide_version = IntegerFilter(
        field_name="guide_version__number", help_text="Guide version number."
    )
    created_after = UtcDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = UtcDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = Label
        fields = [
            "purpose",
            "annotator",
            "unit",
            "guide_version",
            "created_after",
            "created_before",
        ]
