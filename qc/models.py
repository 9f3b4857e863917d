"""Quality reports computed by Celery workers, and the heartbeat that shows a worker is alive.

A report is a deterministic function of its input labels and settings, stored under their
fingerprint; pages read the latest report and never compute statistics themselves.
"""

from django.db import models


class QualityReport(models.Model):
    study = models.ForeignKey(
        "annotation.Study", on_delete=models.CASCADE, related_name="quality_reports"
    )
    kind = models.CharField(max_length=32, default="study")
    # Hash of (label count, newest label id, settings): two runs on one snapshot store one report.
    fingerprint = models.CharField(max_length=64)
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

    def __str__(self) -> str:
        return f"{self.kind} report for {self.study} ({self.label_count} labels)"


class WorkerHeartbeat(models.Model):
    """The last time each Celery worker proved it can run a task against the database."""

    hostname = models.CharField(max_length=255, unique=True)
    seen_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.hostname} at {self.seen_at:%Y-%m-%d %H:%M:%S}"
