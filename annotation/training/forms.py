"""Forms of the lead's training pages: field validation only; rules live in the services."""

from django import forms

from annotation.models import Enrolment, QualificationItem


class PublishForm(forms.Form):
    body = forms.CharField(widget=forms.Textarea(attrs={"rows": 14}), label="Guide (Markdown)")
    changes = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="What changed",
    )
    requires_recalibration = forms.BooleanField(
        required=False, label="Requires recalibration before production continues"
    )
    recalibration_items = forms.CharField(
        required=False,
        label="Recalibration items (prompt ids, e.g. p3 or p3:alpha; empty: drawn from the items"
        " the rulings cite)",
    )


class RulingForm(forms.Form):
    """One new ruling in the guide editor (a few blank ones are offered)."""

    title = forms.CharField(required=False, max_length=200, label="Ruling")
    text = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}), label="Why")
    examples = forms.CharField(
        required=False, label="Example items (prompt ids, e.g. p3 or p3:alpha)"
    )


class SessionRulingForm(forms.Form):
    item = forms.IntegerField(widget=forms.HiddenInput)
    title = forms.CharField(max_length=200, label="Ruling")
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), label="Why")


class FlagForm(forms.Form):
    gold = forms.IntegerField(widget=forms.HiddenInput)
    answer = forms.CharField(required=False)


class AddItemForm(forms.Form):
    unit = forms.IntegerField(widget=forms.HiddenInput)
    answer = forms.CharField()
    difficulty = forms.ChoiceField(choices=QualificationItem.Difficulty.choices)


class SettingsForm(forms.Form):
    requires_qualification = forms.BooleanField(
        required=False, label="Annotators must pass the test before production"
    )
    pass_score = forms.FloatField(
        min_value=0, max_value=1, label="Passing score (share of items right, 0 to 1)"
    )
    attempts = forms.IntegerField(min_value=1, max_value=20, label="Attempts allowed")
    retry_after_guide = forms.BooleanField(
        required=False, label="A failed annotator retries only after re-reading the guide"
    )
    before_guide = forms.BooleanField(
        required=False, label="Show the test before the guide (guide hidden during the test)"
    )
    allowed_pools = forms.MultipleChoiceField(
        required=False,
        choices=Enrolment.Pool.choices,
        widget=forms.CheckboxSelectMultiple,
        label="Pools that may work on this study (none ticked: every pool)",
    )


class SessionForm(forms.Form):
    title = forms.CharField(max_length=200)
    raters = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple)
    items = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Disputed items"
    )
    more_items = forms.CharField(
        required=False, label="More items (prompt ids, e.g. p3 or p3:alpha)"
    )

    def __init__(self, *args, raters=(), items=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["raters"].choices = [(str(u.pk), u.get_username()) for u in raters]
        self.fields["items"].choices = list(items)
