"""Units, the things a person judges: one output, a pair of outputs, or an SPA batch.

A unit's role (production, gold, attention, qualification, calibration) lives only on the
server; annotators see presentations with their own tokens.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from annotation.tokens import new_token


class UnitKind(models.TextChoices):
    OUTPUT = "output", "One output"
    PAIR = "pair", "A pair of outputs"
    SPA_BATCH = "spa_batch", "An SPA batch (m prompts x the compared systems)"


class UnitRole(models.TextChoices):
    PRODUCTION = "production", "Production"
    GOLD = "gold", "Gold"
    ATTENTION = "attention", "Attention check"
    QUALIFICATION = "qualification", "Qualification"
    CALIBRATION = "calibration", "Calibration"


class Unit(models.Model):
    Kind = UnitKind
    Role = UnitRole

    # Indexed by unit_study_role (study, role), which leads with the study.
    study = models.ForeignKey(
        "annotation.Study", on_delete=models.CASCADE, related_name="units", db_index=False
    )
    # Unique by unit_token_unique (a constraint: unique=True would add a LIKE index on
    # PostgreSQL, maintained on every lease, since taking a slot moves the row out of HOT).
    token = models.CharField(max_length=32, default=new_token, editable=False)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.PRODUCTION)
    # The prompt of an OUTPUT or PAIR unit; SPA batches span several prompts (see UnitOutput).
    prompt = models.ForeignKey(
        "annotation.Prompt", null=True, blank=True, on_delete=models.CASCADE, related_name="units"
    )
    # Production labels this unit needs, and how many are still neither leased nor labelled.
    overlap = models.PositiveSmallIntegerField(default=1)
    open_slots = models.PositiveSmallIntegerField(default=1)
    # A random key fixed at creation: the engine walks units in this order, never by id.
    shuffle_key = models.BigIntegerField(default=0)
    # A readable id, unique within the study, by which imports and exports name the unit.
    external_id = models.CharField(max_length=450, blank=True, default="", db_default="")
    outputs = models.ManyToManyField(
        "annotation.Output", through="annotation.UnitOutput", related_name="units"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(overlap__gte=1), name="unit_overlap_positive"),
            models.CheckConstraint(
                condition=Q(open_slots__gte=0) & Q(open_slots__lte=F("overlap")),
                name="unit_open_slots_within_overlap",
            ),
            models.CheckConstraint(
                condition=Q(kind__in=[k.value for k in UnitKind]), name="unit_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(role__in=[r.value for r in UnitRole]), name="unit_role_valid"
            ),
            models.UniqueConstraint(
                fields=["study", "external_id"],
                condition=~Q(external_id=""),
                name="unit_external_id_unique",
            ),
            models.UniqueConstraint(fields=["token"], name="unit_token_unique"),
        ]
        indexes = [
            # The pick: next open production unit of a study in shuffled order.
            models.Index(
                fields=["study", "shuffle_key"],
                condition=Q(role="production", open_slots__gt=0),
                name="unit_open_pick",
            ),
            models.Index(fields=["study", "role"], name="unit_study_role"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.token} ({self.role})"


class UnitOutput(models.Model):
    """The outputs a unit shows, in canonical order (the presentation may reorder them)."""

    # Indexed by unit_output_position and unit_output_unique, which lead with the unit.
    unit = models.ForeignKey(Unit, on_delete=models.CASCADE, related_name="members", db_index=False)
    output = models.ForeignKey("annotation.Output", on_delete=models.CASCADE, related_name="+")
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["unit", "position"]
        constraints = [
            models.UniqueConstraint(fields=["unit", "position"], name="unit_output_position"),
            models.UniqueConstraint(fields=["unit", "output"], name="unit_output_unique"),
        ]

    def __str__(self) -> str:
        return f"output {self.output_id} at {self.position} of unit {self.unit_id}"


class GoldAnswer(models.Model):
    """The expert answer to a gold (or attention) unit, with its rationale and guide version."""

    unit = models.OneToOneField(Unit, on_delete=models.CASCADE, related_name="gold_answer")
    value = models.JSONField(help_text="The expected label, in the study's label format.")
    rationale = models.TextField(blank=True)
    # Where the expert answer comes from (an adjudicator, a benchmark's key, a paper).
    source = models.CharField(max_length=200, blank=True, default="", db_default="")
    guide_version = models.ForeignKey(
        "annotation.GuideVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Set when a published ruling cites this item: the lead confirms or updates the answer.
    flagged_by_ruling = models.ForeignKey(
        "annotation.Ruling", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    def __str__(self) -> str:
        return f"gold for {self.unit.token}"
