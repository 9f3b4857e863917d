"""Forms of the lead's pages: a new study, its settings with a scheme editor per task kind, people.

Forms check shapes and attach every problem to the field or row at fault; the rules themselves
(scheme validity, lock rules, transitions) are `annotation.schemes` and the services'.
"""

from django import forms
from django.core.exceptions import ValidationError

from annotation.models import Comparison, Enrolment, Study
from annotation.schemes import MAX_LABELS, MAX_LIKERT_POINTS, SchemeProblem, validate_scheme
from annotation.services.studies import SPA_FIELDS

KIND_HELP = {
    "likert": "Rate one output on a labelled scale of 2 to 9 points.",
    "continuous": "Rate one output on a 0-100 slider between two labelled ends.",
    "categorical": "Put one output in one of several categories (e.g. Safe / Unsafe).",
    "ordinal": "Put one output on an ordered scale of levels (e.g. Fully / Partly / Not).",
    "pairwise": "Compare two systems' outputs for the same prompt: A, B (or a tie).",
    "spa": "System-level probabilistic assessment: read m prompts answered by every system, then "
    "state the percent chance that system X is better than system Y.",
}
RATE_FIELDS = ("gold_rate", "repeat_rate", "attention_rate")
COMMON_FIELDS = [
    "name",
    "question",
    "instructions",
    "overlap",
    "lease_seconds",
    "quota_per_annotator",
    "requires_qualification",
    "qualification_pass_score",
    "allowed_pools",
    "crowd_platform",
    "crowd_completion_code",
    "crowd_completion_url",
]
QC_FIELDS = [*RATE_FIELDS, "repeat_min_gap_units", "repeat_min_gap_minutes"]


class NewStudyForm(forms.Form):
    name = forms.CharField(max_length=200)
    workspace = forms.ModelChoiceField(queryset=None, empty_label=None)
    task_kind = forms.ChoiceField(
        choices=Study.TaskKind.choices, widget=forms.RadioSelect, label="Task kind"
    )

    def __init__(self, *args, workspaces, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["workspace"].queryset = workspaces
        self.only_workspace = workspaces.first() if workspaces.count() == 1 else None
        if self.only_workspace is not None:
            self.fields["workspace"].required = False
        self.kind_help = KIND_HELP

    def clean_workspace(self):
        return self.cleaned_data.get("workspace") or self.only_workspace


class PercentField(forms.FloatField):
    """A share entered as a percent (10 -> 0.10)."""

    def __init__(self, **kwargs):
        super().__init__(min_value=0, max_value=99, **kwargs)
        self.widget.attrs.update({"step": "any", "inputmode": "decimal"})

    def prepare_value(self, value):
        if isinstance(value, float) and not isinstance(self.widget, forms.HiddenInput):
            return round(value * 100, 6)
        return value

    def clean(self, value):
        cleaned = super().clean(value)
        return None if cleaned is None else cleaned / 100


class StudySettingsForm(forms.ModelForm):
    """The settings a study of one kind uses; SPA fields only on SPA studies and so on."""

    gold_rate = PercentField(label="Gold rate (% of tasks)", required=False)
    repeat_rate = PercentField(label="Blind repeat rate (% of tasks)", required=False)
    attention_rate = PercentField(label="Attention check rate (% of tasks)", required=False)
    crowd_completion_url = forms.URLField(
        required=False, assume_scheme="https", label="Crowd completion URL"
    )
    allowed_pools = forms.MultipleChoiceField(
        choices=Enrolment.Pool.choices,
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="Who may work on this study; none ticked means every pool.",
    )

    class Meta:
        model = Study
        fields = [*COMMON_FIELDS, *QC_FIELDS, *SPA_FIELDS]
        labels = {
            "overlap": "Overlap (labels per unit)",
            "lease_seconds": "Lease (seconds a task is held)",
            "quota_per_annotator": "Quota per annotator (tasks; empty = no limit)",
            "repeat_min_gap_units": "Repeat spacing (tasks in between, at least)",
            "repeat_min_gap_minutes": "Repeat spacing (minutes in between, at least)",
            "spa_exposure_m": "Exposure m (prompts per batch)",
            "spa_fixed_sample": "Fixed sample",
            "spa_both_directions": "Ask both directions (P[X>Y] and, later, P[Y>X])",
            "spa_collect_likert": "Collect Likert ratings on the SPA page",
            "spa_tau": "Pre-registered tau (empty = no filter)",
        }
        widgets = {
            "question": forms.Textarea(attrs={"rows": 2}),
            "instructions": forms.Textarea(attrs={"rows": 4}),
        }

    def __init__(self, *args, locked: dict[str, str], **kwargs):
        super().__init__(*args, **kwargs)
        kind = self.instance.task_kind
        drop = set()
        if kind != Study.TaskKind.SPA:
            drop |= set(SPA_FIELDS)
        else:  # an SPA batch has no gold answer or attention item, and a fixed sample no repeat
            drop |= set(QC_FIELDS)
        for name in drop:
            self.fields.pop(name)
        for name in ("gold_rate", "repeat_rate", "attention_rate"):
            if name in self.fields:
                self.fields[name].required = True
        self.locked = {name: why for name, why in locked.items() if name in self.fields}
        for name in self.locked:
            self.fields[name].disabled = True

    def clean_allowed_pools(self):
        return list(self.cleaned_data.get("allowed_pools") or [])

    def changes(self) -> dict:
        """The cleaned settings, for `update_study` (locked fields keep their current value)."""
        return {name: self.cleaned_data[name] for name in self.fields}

    def field_groups(self) -> list[tuple[str, list]]:
        groups = [
            ("The task", ["name", "question", "instructions"]),
            ("Design", ["overlap", *QC_FIELDS, *SPA_FIELDS]),
            ("Work", ["lease_seconds", "quota_per_annotator", "allowed_pools"]),
            ("Qualification", ["requires_qualification", "qualification_pass_score"]),
            ("Crowd platform", ["crowd_platform", "crowd_completion_code", "crowd_completion_url"]),
        ]
        return [
            (title, [self[name] for name in names if name in self.fields])
            for title, names in groups
        ]


# --- scheme editors ---------------------------------------------------------------------------


class PointRow(forms.Form):
    value = forms.FloatField(required=False, widget=forms.NumberInput(attrs={"step": "any"}))
    text = forms.CharField(required=False, max_length=200)


class LabelRow(forms.Form):
    value = forms.CharField(required=False, max_length=100)
    text = forms.CharField(required=False, max_length=200, label="Shown as")
    key = forms.CharField(
        required=False, max_length=1, label="Key", widget=forms.TextInput(attrs={"size": 2})
    )


def _is_blank(form) -> bool:
    data = getattr(form, "cleaned_data", None) or {}
    return all(v in (None, "") for v in data.values())


class RowsEditor:
    """A list in the scheme (points or labels) as rows of a formset; blank rows are ignored."""

    def __init__(self, name: str, row_form, items: list[dict], data=None, extra: int = 3):
        self.name = name
        size = MAX_LIKERT_POINTS if row_form is PointRow else MAX_LABELS
        formset_class = forms.formset_factory(
            row_form, extra=extra, max_num=size, absolute_max=size + extra
        )
        initial = [{k: v for k, v in item.items() if k in row_form.base_fields} for item in items]
        self.formset = formset_class(data, initial=initial, prefix=name)
        self.row_index: list[int] = []  # position in the scheme list -> formset row
        self.non_row_errors: list[str] = []

    def is_valid(self) -> bool:
        return self.formset.is_valid()

    def items(self) -> list[dict]:
        items = []
        self.row_index = []
        for i, form in enumerate(self.formset.forms):
            if _is_blank(form):
                continue
            item = {}
            for key, value in form.cleaned_data.items():
                if key == "value" and isinstance(value, float) and value.is_integer():
                    value = int(value)
                if key == "key" and value in ("", None):
                    continue
                item[key] = value
            items.append(item)
            self.row_index.append(i)
        return items

    def attach(self, problem: SchemeProblem) -> None:
        path = problem.path
        if len(path) >= 3 and path[1] < len(self.row_index):
            form = self.formset.forms[self.row_index[path[1]]]
            if path[2] in form.fields:
                form.add_error(path[2], problem.message)
                return
        self.non_row_errors.append(problem.message)


class SchemeEditor:
    """The label scheme of one study, edited as fields instead of JSON.

    `is_valid()` runs the same `validate_scheme` the model runs and puts each problem on its row
    or field; `scheme()` is then the scheme to save.
    """

    def __init__(self, study: Study, data=None, collect_likert: bool | None = None):
        self.kind = study.task_kind
        scheme = study.label_scheme if isinstance(study.label_scheme, dict) else {}
        self.collect_likert = study.spa_collect_likert if collect_likert is None else collect_likert
        self.rows: RowsEditor | None = None
        self.form: forms.Form | None = None
        if self.kind == "likert":
            self.rows = RowsEditor("points", PointRow, scheme.get("points", []), data)
        elif self.kind == "spa":
            self.rows = RowsEditor("likert_points", PointRow, scheme.get("likert_points", []), data)
        elif self.kind in ("categorical", "ordinal"):
            self.rows = RowsEditor("labels", LabelRow, scheme.get("labels", []), data)
        elif self.kind == "continuous":
            self.form = ContinuousForm(data, initial=scheme, prefix="scale")
        elif self.kind == "pairwise":
            self.form = PairwiseForm(
                data, initial={"tie_allowed": scheme.get("tie_allowed", True)}, prefix="pair"
            )
        self.errors: list[str] = []

    def is_valid(self) -> bool:
        parts_ok = (self.rows is None or self.rows.is_valid()) and (
            self.form is None or self.form.is_valid()
        )
        if not parts_ok:
            return False
        problems = validate_scheme(self.kind, self.scheme(), collect_likert=self.collect_likert)
        for problem in problems:
            self.attach(problem)
        return not problems

    def scheme(self) -> dict:
        if self.rows is not None:
            items = self.rows.items()
            if self.kind == "spa" and not items and not self.collect_likert:
                return {}
            return {self.rows.name: items}
        data = self.form.cleaned_data
        if self.kind == "pairwise":
            return {"tie_allowed": bool(data["tie_allowed"])}
        return {key: value for key, value in data.items() if value}

    def attach(self, problem: SchemeProblem) -> None:
        if self.rows is not None and problem.path[:1] == (self.rows.name,):
            self.rows.attach(problem)
        elif self.form is not None and problem.path[0] in self.form.fields:
            self.form.add_error(problem.path[0], problem.message)
        else:
            self.errors.append(str(problem))

    def attach_errors(self, messages: list[str]) -> None:
        """Errors from the model's check that the editor did not place (kept, never dropped)."""
        self.errors.extend(messages)

    @property
    def label(self) -> str:
        return {
            "likert": "Scale points",
            "spa": "Likert points on the SPA page",
            "categorical": "Categories",
            "ordinal": "Levels, lowest first",
            "continuous": "Scale ends",
            "pairwise": "Answers",
        }[self.kind]


class ContinuousForm(forms.Form):
    min_text = forms.CharField(label="Label of 0 (worst end)", max_length=200, required=False)
    max_text = forms.CharField(label="Label of 100 (best end)", max_length=200, required=False)
    worst_reference = forms.CharField(
        label="Reference item for the worst end (optional)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    best_reference = forms.CharField(
        label="Reference item for the best end (optional)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
    )


class PairwiseForm(forms.Form):
    tie_allowed = forms.BooleanField(
        required=False,
        label="Allow a tie",
        help_text="Annotators may answer that neither is better.",
    )


class ComparisonRow(forms.Form):
    system_x = forms.ChoiceField(label="System X", required=False)
    system_y = forms.ChoiceField(label="System Y", required=False)
    expected = forms.ChoiceField(
        label="Expected", choices=Comparison.Expected.choices, required=False
    )

    def __init__(self, *args, systems: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        choices = [("", "—")] + [(name, name) for name in systems]
        self.fields["system_x"].choices = choices
        self.fields["system_y"].choices = choices


def comparison_formset(study: Study, data=None):
    """The SPA (or pairwise) comparisons as rows: X vs Y with the lead's expected relation."""
    systems = list(study.systems.values_list("name", flat=True))
    initial = [
        {"system_x": c.system_x.name, "system_y": c.system_y.name, "expected": c.expected}
        for c in study.comparisons.select_related("system_x", "system_y")
    ]
    formset_class = forms.formset_factory(ComparisonRow, extra=2)
    return formset_class(
        data, initial=initial, prefix="comparisons", form_kwargs={"systems": systems}
    )


def comparison_triples(formset) -> list[tuple[str, str, str]]:
    return [
        (f.cleaned_data["system_x"], f.cleaned_data["system_y"], f.cleaned_data["expected"])
        for f in formset.forms
        if f.cleaned_data.get("system_x") or f.cleaned_data.get("system_y")
    ]


def attach_service_errors(form: forms.BaseForm, error: ValidationError) -> list[str]:
    """Put a service's field errors on the form's fields; return the ones no field shows."""
    leftover = []
    for name, messages in error.message_dict.items():
        if name in form.fields and not form.fields[name].disabled:
            for message in messages:
                form.add_error(name, message)
        else:
            leftover += [f"{name.replace('_', ' ')}: {m}" for m in messages]
    return leftover


# --- people -----------------------------------------------------------------------------------


def _pool_choices(study: Study):
    return [(v, label) for v, label in Enrolment.Pool.choices if study.pool_allowed(v)]


class EnrolmentFields(forms.Form):
    pool = forms.ChoiceField(choices=Enrolment.Pool.choices)
    quota = forms.IntegerField(
        required=False, min_value=1, label="Quota (tasks)", help_text="Empty: the study's quota."
    )

    def __init__(self, *args, study: Study, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["pool"].choices = _pool_choices(study)


class AddUserForm(EnrolmentFields):
    username = forms.CharField(max_length=150, label="Username of an existing account")
    field_order = ["username", "pool", "quota"]


class InviteForm(EnrolmentFields):
    note = forms.CharField(max_length=200, required=False, label="Note (for you: whom it is for)")
    valid_days = forms.IntegerField(min_value=1, max_value=90, initial=7, label="Valid for (days)")


class AcceptInviteForm(forms.Form):
    password = forms.CharField(
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        label="Choose a password",
    )
    password_again = forms.CharField(
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        label="The password again",
    )

    def clean(self):
        data = super().clean()
        if data.get("password") and data.get("password") != data.get("password_again"):
            self.add_error("password_again", "The two passwords differ.")
        return data
