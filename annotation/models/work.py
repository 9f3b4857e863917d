"""The work handed out (assignments with their presentation) and the labels that come back.

Labels are append-only: nothing updates or deletes them; corrections are new labels.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.tokens import new_token


class Purpose(models.TextChoices):
    PRODUCTION = "production", "Production"
    GOLD = "gold", "Gold"
    REPEAT = "repeat", "Blind repeat"
    ATTENTION = "attention", "Attention check"
    QUALIFICATION = "qualification", "Qualification"
    CALIBRATION = "calibration", "Calibration"


class SkipReason(models.TextChoices):
    """Why an annotator skipped a task (shown to them as a choice, counted for the lead)."""

    CANNOT_JUDGE = "cannot_judge", "I cannot judge this one"
    UNREADABLE = "unreadable", "The text is broken or unreadable"
    UNCOMFORTABLE = "uncomfortable", "I would rather not read this content"
    OTHER = "other", "Another reason"


def where_set(field: str, name: str) -> models.Index:
    """An index of a nullable foreign key over the rows where it is set: most rows leave it
    NULL, and an index of every row would take an entry on every lease, close or label for
    nothing; Django's `SET_NULL` and `PROTECT` lookups (`field = id`) still use it."""
    return models.Index(fields=[field], condition=Q(**{f"{field}__isnull": False}), name=name)


class Assignment(models.Model):
    """One presentation of a unit to one annotator, under its own opaque token."""

    Purpose = Purpose
    SkipReason = SkipReason

    class Status(models.TextChoices):
        LEASED = "leased", "Leased"
        SUBMITTED = "submitted", "Submitted"
        EXPIRED = "expired", "Expired (slot returned)"
        ABANDONED = "abandoned", "Abandoned (slot returned)"

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="+")
    # No index of their own on unit and annotator: assignment_unit_annotator and
    # assignment_position_unique lead with them (one index less to maintain per lease and close).
    unit = models.ForeignKey(
        "annotation.Unit", on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="assignments",
        db_index=False,
    )
    purpose = models.CharField(max_length=16, choices=Purpose.choices)
    # Unique by assignment_token_unique: a constraint, not unique=True, which on PostgreSQL also
    # builds a second (LIKE) index that every lease and every close would maintain for nothing.
    token = models.CharField(max_length=32, default=new_token, editable=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.LEASED)
    # Position in the annotator's session (1, 2, ...): what they were shown, in order.
    position = models.PositiveIntegerField()
    # Sides, order and letter aliases as drawn for this presentation, mapping back to canonical ids.
    presentation = models.JSONField(default=dict, blank=True)
    # Indexed only where set (`where_set`): most leases are not repeats, and a study without a
    # guide has no version.
    repeat_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="repeats",
        db_index=False,
    )
    guide_version = models.ForeignKey(
        "annotation.GuideVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
    leased_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True)
    # Why the annotator skipped it (status abandoned), "" otherwise.
    skip_reason = models.CharField(
        max_length=16, choices=SkipReason.choices, blank=True, default="", db_default=""
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["token"], name="assignment_token_unique"),
            models.UniqueConstraint(
                fields=["annotator", "unit"],
                condition=Q(purpose="production", status__in=["leased", "submitted"]),
                name="assignment_one_production_per_annotator_unit",
            ),
            models.UniqueConstraint(
                fields=["annotator", "study", "position"], name="assignment_position_unique"
            ),
            models.CheckConstraint(
                condition=Q(purpose__in=[p.value for p in Purpose]), name="assignment_purpose_valid"
            ),
            models.CheckConstraint(
                condition=Q(status__in=["leased", "submitted", "expired", "abandoned"]),
                name="assignment_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(repeat_of__isnull=True) | Q(purpose="repeat"),
                name="assignment_repeat_of_only_for_repeats",
            ),
        ]
        indexes = [
            models.Index(fields=["annotator", "study", "status"], name="assignment_queue"),
            models.Index(
                fields=["expires_at"], condition=Q(status="leased"), name="assignment_live_leases"
            ),
            # "Has this annotator ever been shown this unit?" (gold at most once, repeats).
            models.Index(fields=["unit", "annotator"], name="assignment_unit_annotator"),
            where_set("repeat_of", "assignment_repeat_of"),
            where_set("guide_version", "assignment_guide_version"),
        ]

    def __str__(self) -> str:
        return f"{self.purpose} {self.token} for {self.annotator}"


class Label(models.Model):
    """An annotator's answer to one assignment, with the context it was given in."""

    assignment = models.OneToOneField(Assignment, on_delete=models.PROTECT, related_name="label")
    # Copies of the assignment's keys, so analysis loads long-format arrays without joins.
    # No index of their own on study and annotator: label_study_purpose and
    # label_annotator_study lead with them (one index less to maintain per label).
    study = models.ForeignKey(
        "annotation.Study", on_delete=models.CASCADE, related_name="labels", db_index=False
    )
    unit = models.ForeignKey("annotation.Unit", on_delete=models.CASCADE, related_name="labels")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="labels", db_index=False
    )
    purpose = models.CharField(max_length=16, choices=Purpose.choices)
    idempotency_key = models.UUIDField(unique=True)
    # Categorical/ordinal value, or for pairwise the side clicked ("left", "right", "tie").
    choice = models.CharField(max_length=100, blank=True)
    # Likert or continuous score.
    score = models.FloatField(null=True, blank=True)
    # Pairwise: the canonical winner, the presentation undone (null for a tie). Indexed only
    # where set (`where_set`), as is the guide version.
    winner = models.ForeignKey(
        "annotation.System",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        db_index=False,
    )
    value = models.JSONField(default=dict, blank=True, help_text="The answer as submitted.")
    guide_version = models.ForeignKey(
        "annotation.GuideVersion",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        db_index=False,
    )
    rendered_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    active_ms = models.PositiveIntegerField(null=True, blank=True)
    # SPA: which outputs were shown, for how long, and whether each was scrolled into view.
    exposure = models.JSONField(default=dict, blank=True)
    # The id of a label moved in from another tool (empty for labels given here).
    external_id = models.CharField(max_length=200, blank=True, default="", db_default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(score__isnull=True) | Q(score__gte=0, score__lte=100),
                name="label_score_range",
            ),
            models.CheckConstraint(
                condition=Q(purpose__in=[p.value for p in Purpose]), name="label_purpose_valid"
            ),
            models.UniqueConstraint(
                fields=["study", "external_id"],
                condition=~Q(external_id=""),
                name="label_external_id_unique",
            ),
        ]
        indexes = [
            models.Index(fields=["study", "purpose", "id"], name="label_study_purpose"),
            models.Index(fields=["annotator", "study"], name="label_annotator_study"),
            where_set("winner", "label_winner"),
            where_set("guide_version", "label_guide_version"),
        ]

    def __str__(self) -> str:
        return f"label {self.pk} on {self.assignment.token}"


class SpaAnswer(models.Model):
    """One stated probability from an SPA batch: P[X>Y] in percent, or P[Y>X] when reversed."""

    label = models.ForeignKey(Label, on_delete=models.CASCADE, related_name="spa_answers")
    comparison = models.ForeignKey(
        "annotation.Comparison", on_delete=models.PROTECT, related_name="answers"
    )
    reverse = models.BooleanField(default=False, help_text="True if this is P[Y>X].")
    probability = models.FloatField(help_text="Percent chance, 0 to 100.")
    position = models.PositiveSmallIntegerField(help_text="Order in which it was asked.")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["label", "comparison", "reverse"], name="spa_answer_unique"
            ),
            models.CheckConstraint(
                condition=Q(probability__gte=0, probability__lte=100),
                name="spa_answer_probability_range",
            ),
        ]

    def __str__(self) -> str:
        side = "P[Y>X]" if self.reverse else "P[X>Y]"
        return f"{side} = {self.probability:g}% on {self.comparison}"


class OutputRating(models.Model):
    """A Likert rating of one output given on an SPA page (the standard protocol, same people)."""

    label = models.ForeignKey(Label, on_delete=models.CASCADE, related_name="output_ratings")
    output = models.ForeignKey("annotation.Output", on_delete=models.PROTECT, related_name="+")
    score = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["label", "output"], name="output_rating_unique"),
            models.CheckConstraint(
                condition=Q(score__gte=0, score__lte=100), name="output_rating_score_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.score:g} for output {self.output_id}"
