"""Content imports: one ImportJob per uploaded file, and the staging rows it is checked in.

A file is parsed into staging rows, checked as a whole, and published in one transaction, so a
file with a bad row, a killed worker or a crash mid-way publishes nothing (annotation.imports).
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.tokens import new_token


class ImportKind(models.TextChoices):
    SYSTEMS = "systems", "Systems"
    PROMPTS = "prompts", "Prompts"
    OUTPUTS = "outputs", "Outputs"
    GOLD = "gold", "Gold answers"
    COMPARISONS = "comparisons", "Comparisons"
    LABELS = "labels", "Existing labels"


class ImportFormat(models.TextChoices):
    CSV = "csv", "CSV"
    JSONL = "jsonl", "JSON Lines"


class ImportStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    READING = "reading", "Reading the file"
    # The whole-file checks and the publish run in one transaction: all of it or none.
    CHECKING = "checking", "Checking against the study and publishing"
    DONE = "done", "Published"
    FAILED = "failed", "Nothing published: the file has errors"


class ImportJob(models.Model):
    """One file imported into one study: its progress, and what it created or why it failed."""

    Kind = ImportKind
    Format = ImportFormat
    Status = ImportStatus

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="imports")
    token = models.CharField(max_length=32, unique=True, default=new_token, editable=False)
    kind = models.CharField(max_length=16, choices=ImportKind.choices)
    format = models.CharField(max_length=8, choices=ImportFormat.choices)
    status = models.CharField(
        max_length=16, choices=ImportStatus.choices, default=ImportStatus.QUEUED
    )
    file_name = models.CharField(max_length=255, help_text="The name the file was uploaded as.")
    # Where the upload waits for the worker (under CONCORD_IMPORT_DIR); removed when done.
    path = models.CharField(max_length=1000, blank=True)
    file_size = models.BigIntegerField(default=0)
    bytes_read = models.BigIntegerField(default=0)
    rows_read = models.PositiveIntegerField(default=0)
    created = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    error_count = models.PositiveIntegerField(default=0)
    # The first CONCORD_IMPORT_MAX_ERRORS bad rows: [{"line": n, "field": "...", "reason": "..."}].
    errors = models.JSONField(default=list, blank=True)
    message = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # Touched with every progress update, so a page can tell a stopped worker from a slow one.
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=[k.value for k in ImportKind]), name="import_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(format__in=[f.value for f in ImportFormat]), name="import_format_valid"
            ),
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in ImportStatus]), name="import_status_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} from {self.file_name} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (ImportStatus.DONE, ImportStatus.FAILED)

    @property
    def stalled(self) -> bool:
        """Unfinished and untouched for five minutes: the worker has probably stopped (whatever
        it had staged was never published)."""
        from django.utils import timezone

        return not self.finished and (timezone.now() - self.updated_at).total_seconds() > 300

    @property
    def percent(self) -> int:
        if self.status == ImportStatus.DONE:
            return 100
        if not self.file_size:
            return 0
        share = self.bytes_read / self.file_size
        # Reading is most of the work; checking and publishing take the last tenth.
        return int(90 * min(share, 1.0)) + (5 if self.status == ImportStatus.CHECKING else 0)


class ImportRow(models.Model):
    """A parsed, row-checked line of an import, waiting for the whole-file checks and publish.

    Columns are generic (their meaning per kind is in annotation.imports.kinds); the table has no
    foreign key or index so that bulk COPY stays fast, and rows are deleted when the job ends.
    """

    job_id = models.BigIntegerField()
    line = models.PositiveIntegerField()
    key = models.TextField(blank=True)
    a = models.TextField(blank=True)
    b = models.TextField(blank=True)
    c = models.TextField(blank=True)
    d = models.TextField(blank=True)
    text = models.TextField(blank=True)
    number = models.FloatField(null=True, blank=True)
    data = models.JSONField(null=True, blank=True)

    def __str__(self) -> str:
        return f"line {self.line} of import {self.job_id}"
