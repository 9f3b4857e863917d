"""Quality reports computed by Celery workers, and the heartbeat that shows a worker is alive.

A report is a deterministic function of its input labels and settings, stored under their
fingerprint; pages read the latest report and never compute statistics themselves.
"""

from django.conf import settings
from django.db import models


class QualityReport(models.Model):
    # A report is stored as two rows of one fingerprint: the summary pages show, and the
    # per-item tables (aggregated and soft labels) that only downloads read.
    SUMMARY = "study"
    ITEMS = "items"

    study = models.ForeignKey(
        "annotation.Study", on_delete=models.CASCADE, related_name="quality_reports"
    )
    kind = models.CharField(max_length=32, default="study")
    # Hash of (label count, newest label id, settings): two runs on one snapshot store one report.
    fingerprint = models.CharField(max_length=64)
    # Hash of the settings alone: the page shows a report of the current settings, never another's.
    settings_hash = models.CharField(max_length=64, blank=True, default="")
    label_count = models.PositiveIntegerField()
    newest_label_id = models.BigIntegerField(null=True, blank=True)
    payload = models.JSONField()
    compute_seconds = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        get_latest_by = "created_at"
        constraints = [
            models.UniqueConstraint(
                fields=["study", "kind", "fingerprint"], name="quality_report_snapshot_unique"
            ),
        ]
        indexes = [
            models.Index(
                fields=["study", "kind", "-label_count", "-created_at"],
                name="quality_report_latest",
            ),
            models.Index(
                fields=["study", "kind", "settings_hash", "-created_at"],
                name="quality_report_settings",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} report for {self.study} ({self.label_count} labels)"


class WorkerHeartbeat(models.Model):
    """The last time each Celery worker proved it can run a task against the database."""

    hostname = models.CharField(max_length=255, unique=True)
    seen_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.hostname} at {self.seen_at:%Y-%m-%d %H:%M:%S}"


class ReportOptions(models.Model):
    """What a lead chose to see in a study's report; part of the report's settings hash."""

    study = models.OneToOneField(
        "annotation.Study", on_delete=models.CASCADE, related_name="report_options"
    )
    # Restricting to items every rater agreed on inflates every metric: always shown beside the
    # full-set result, never instead of it.
    unanimous_view = models.BooleanField(default=False)
    # Semi-supervised aggregation: gold items take their expert answer in the label models (off
    # by default, so that accuracy on gold stays a check of the aggregation, not a given).
    clamp_gold = models.BooleanField(default=False)
    # A cut of the report: only labels of annotators from this pool (Enrolment.pool), and only
    # labels made under this guide version number; empty / null: all.
    pool = models.CharField(max_length=16, blank=True, default="")
    guide_version = models.PositiveIntegerField(null=True, blank=True)
    # Ordinal studies only: score the levels as numbers (their stated values when every value is
    # a number, else 0..k-1 in scale order) so the additive severity model applies. Off by
    # default: equal steps between levels is an assumption only the lead can make.
    ordinal_as_interval = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"report options for {self.study}"


class RecomputeState(models.Model):
    """Per study: the debounce marker (one recomputation pending at a time) and run progress.

    `pending_since` is claimed with a conditional UPDATE, so only one task is queued per study;
    the task clears it when it starts, so labels arriving during a run schedule the next one.
    The marker is tied to a task: `task_id` is the id it was queued under (a lost task is found
    by asking the broker and its workers); the run in progress is `run_task_id`, whose worker
    refreshes `heartbeat_at`, so a run whose worker died is seen as stalled, not "storing"
    forever.
    `owed_since` records a run that could not be queued (broker down), caught up on its return.
    """

    study = models.OneToOneField(
        "annotation.Study", on_delete=models.CASCADE, related_name="recompute_state"
    )
    pending_since = models.DateTimeField(null=True, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    stage = models.CharField(max_length=64, blank=True)
    progress = models.PositiveSmallIntegerField(default=0)
    last_error = models.TextField(blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    run_task_id = models.CharField(max_length=64, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    owed_since = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(progress__lte=100), name="recompute_progress_percent"
            ),
        ]

    def __str__(self) -> str:
        return f"recompute state of {self.study}"

    @property
    def running(self) -> bool:
        return self.started_at is not None and (
            self.finished_at is None or self.finished_at < self.started_at
        )


class RaterReport(models.Model):
    """One rater's monitoring numbers in one study, stored by the worker beside the study report.

    Keyed by the rater report's fingerprint (labels, settings, audits and adjudications); pages
    read the latest and never compute. `concern` is the documented ranking score.
    """

    study = models.ForeignKey(
        "annotation.Study", on_delete=models.CASCADE, related_name="rater_reports"
    )
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rater_reports"
    )
    fingerprint = models.CharField(max_length=64)
    concern = models.FloatField(default=0.0)
    alert = models.BooleanField(default=False)
    payload = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["study", "annotator", "fingerprint"], name="rater_report_unique"
            ),
        ]
        indexes = [
            models.Index(fields=["study", "fingerprint", "-concern"], name="rater_report_rank"),
        ]

    def __str__(self) -> str:
        return f"rater report of {self.annotator} in {self.study}"


class Adjudication(models.Model):
    """An expert's decision on a disagreement item: a separate record, raw labels untouched.

    Append-only: a new decision on the same unit is a new row; the latest one counts.
    """

    class Cause(models.TextChoices):
        MISSED_EVIDENCE = "missed_evidence", "Missed evidence"
        RUBRIC_CONFLICT = "rubric_conflict", "Rubric conflict"
        MISSING_CONTEXT = "missing_context", "Missing context"
        GENUINE_AMBIGUITY = "genuine_ambiguity", "Genuine ambiguity"
        LEGITIMATE_PREFERENCE = "legitimate_preference", "Legitimate preference"

    class Decision(models.TextChoices):
        REFERENCE = "reference", "Set the reference label"
        DISTRIBUTION = "distribution", "Keep the distribution"
        RULING = "ruling", "Propose a ruling for the guide"

    study = models.ForeignKey(
        "annotation.Study", on_delete=models.CASCADE, related_name="adjudications"
    )
    unit = models.ForeignKey("annotation.Unit", on_delete=models.CASCADE, related_name="+")
    adjudicator = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    cause = models.CharField(max_length=32, choices=Cause.choices)
    decision = models.CharField(max_length=16, choices=Decision.choices)
    # The reference label (in the report's label space: a class, a score, a system name or "tie").
    reference = models.CharField(max_length=200, blank=True)
    rationale = models.TextField()
    proposed_ruling = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(decision="reference") | ~models.Q(reference=""),
                name="adjudication_reference_needs_label",
            ),
            models.CheckConstraint(
                condition=~models.Q(decision="ruling") | ~models.Q(proposed_ruling=""),
                name="adjudication_ruling_needs_text",
            ),
        ]
        indexes = [models.Index(fields=["study", "unit", "-created_at"], name="adjudication_unit")]

    def __str__(self) -> str:
        return f"{self.get_decision_display()} on unit {self.unit_id}"


class Audit(models.Model):
    """A sample of labels drawn for expert checking: random (estimates the pool's error rate)
    or targeted (a flagged rater, disagreements); the two are never pooled."""

    class Kind(models.TextChoices):
        RANDOM = "random", "Random"
        TARGETED = "targeted", "Targeted"

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="audits")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    reason = models.CharField(max_length=300)
    target_annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    seed = models.BigIntegerField()
    drawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(kind__in=["random", "targeted"]), name="audit_kind_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} audit of {self.study}"


class AuditItem(models.Model):
    """One label drawn into an audit, and the expert's verdict on it (blank until checked)."""

    class Verdict(models.TextChoices):
        PENDING = "", "Not checked yet"
        CORRECT = "correct", "Correct"
        WRONG = "wrong", "Wrong"

    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="items")
    label = models.ForeignKey("annotation.Label", on_delete=models.PROTECT, related_name="+")
    verdict = models.CharField(max_length=16, choices=Verdict.choices, blank=True, default="")
    note = models.TextField(blank=True)
    checked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    checked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["audit", "id"]
        constraints = [
            models.UniqueConstraint(fields=["audit", "label"], name="audit_item_unique"),
            models.CheckConstraint(
                condition=models.Q(verdict__in=["", "correct", "wrong"]),
                name="audit_item_verdict_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"audit item {self.label_id} ({self.verdict or 'pending'})"
