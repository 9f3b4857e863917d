"""Training before and beside production: qualification items, calibration sessions, and the
fixed batches (qualification attempts, recalibrations, session work) an annotator labels.

Batch units have their own roles (qualification, calibration), so the engine never picks them
and their labels (purpose qualification or calibration) never enter overlap or production.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.tokens import new_token


class QualificationItem(models.Model):
    """One unit of a study's qualification test: a copy of a real item with the expert's answer
    (the unit's GoldAnswer), tagged easy (did they read the guide?) or boundary (a real split)."""

    class Difficulty(models.TextChoices):
        EASY = "easy", "Easy"
        BOUNDARY = "boundary", "Boundary"

    study = models.ForeignKey(
        "annotation.Study", on_delete=models.CASCADE, related_name="qualification_items"
    )
    unit = models.OneToOneField(
        "annotation.Unit", on_delete=models.CASCADE, related_name="qualification_item"
    )
    source_unit = models.ForeignKey(
        "annotation.Unit", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    difficulty = models.CharField(max_length=16, choices=Difficulty.choices)
    # The split among raters when the item was proposed, e.g. {"safe": 2, "unsafe": 1}.
    split = models.JSONField(default=dict, blank=True)
    ruling = models.ForeignKey(
        "annotation.Ruling", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(difficulty__in=["easy", "boundary"]),
                name="qualification_item_difficulty_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.difficulty} qualification item {self.unit_id}"


class CalibrationSession(models.Model):
    """A lead's calibration round: chosen raters label one small batch independently, then see
    the distribution of labels per item; the lead records rulings against the items."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        PUBLISHED = "published", "Published"

    study = models.ForeignKey(
        "annotation.Study", on_delete=models.CASCADE, related_name="calibration_sessions"
    )
    token = models.CharField(max_length=32, unique=True, default=new_token, editable=False)
    title = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    raters = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="+")
    published_version = models.ForeignKey(
        "annotation.GuideVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.title


class CalibrationItem(models.Model):
    """One item of a session's batch: a calibration copy of a real unit."""

    session = models.ForeignKey(CalibrationSession, on_delete=models.CASCADE, related_name="items")
    unit = models.ForeignKey("annotation.Unit", on_delete=models.CASCADE, related_name="+")
    source_unit = models.ForeignKey(
        "annotation.Unit", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["session", "position"]
        constraints = [
            models.UniqueConstraint(fields=["session", "unit"], name="calibration_item_unique"),
        ]

    def __str__(self) -> str:
        return f"item {self.position} of {self.session}"


class TrainingBatch(models.Model):
    """One annotator's pass through a fixed list of units: a qualification attempt, a
    recalibration after a guide change, or their part of a calibration session."""

    class Kind(models.TextChoices):
        QUALIFICATION = "qualification", "Qualification test"
        RECALIBRATION = "recalibration", "Recalibration"
        CALIBRATION = "calibration", "Calibration session"

    study = models.ForeignKey(
        "annotation.Study", on_delete=models.CASCADE, related_name="training_batches"
    )
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="training_batches"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    token = models.CharField(max_length=32, unique=True, default=new_token, editable=False)
    attempt = models.PositiveSmallIntegerField(default=1)
    # Recalibration: the version it calibrates to. Qualification: the version it was taken under.
    guide_version = models.ForeignKey(
        "annotation.GuideVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    session = models.ForeignKey(
        CalibrationSession, null=True, blank=True, on_delete=models.CASCADE, related_name="batches"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Qualification only: share correct overall, on easy and on boundary items, and the verdict.
    score = models.FloatField(null=True, blank=True)
    easy_score = models.FloatField(null=True, blank=True)
    boundary_score = models.FloatField(null=True, blank=True)
    passed = models.BooleanField(null=True, blank=True)
    # When the annotator re-read the guide after this (failed) attempt.
    guide_reread_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["study", "annotator", "created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["qualification", "recalibration", "calibration"]),
                name="training_batch_kind_valid",
            ),
            models.UniqueConstraint(
                fields=["study", "annotator", "attempt"],
                condition=Q(kind="qualification"),
                name="training_batch_one_attempt_number",
            ),
            models.UniqueConstraint(
                fields=["session", "annotator"],
                condition=Q(kind="calibration"),
                name="training_batch_one_per_session_rater",
            ),
            models.UniqueConstraint(
                fields=["guide_version", "annotator"],
                condition=Q(kind="recalibration"),
                name="training_batch_one_recalibration_per_version",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} of {self.annotator} in {self.study}"


class TrainingTask(models.Model):
    """One unit of a batch, in the order shown; the assignment once it was handed out."""

    batch = models.ForeignKey(TrainingBatch, on_delete=models.CASCADE, related_name="tasks")
    unit = models.ForeignKey("annotation.Unit", on_delete=models.CASCADE, related_name="+")
    position = models.PositiveSmallIntegerField()
    assignment = models.OneToOneField(
        "annotation.Assignment",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="training_task",
    )

    class Meta:
        ordering = ["batch", "position"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "position"], name="training_task_position"),
            models.UniqueConstraint(fields=["batch", "unit"], name="training_task_unit"),
        ]

    def __str__(self) -> str:
        return f"task {self.position} of {self.batch}"
