"""A study and its protocol: task kind, label scheme, overlap, quality-control rates, SPA settings.

Also who is enrolled (and from which annotator pool), the versioned guide and its rulings.
"""

import re
import secrets

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from annotation.tokens import new_token

_WRITER_PLACEHOLDER = re.compile(r"\{\s*([xyXY])\s*\}")


def has_writer_placeholders(text: str) -> bool:
    return bool(text) and bool(_WRITER_PLACEHOLDER.search(text))


def fill_writers(text: str, x: str = "X", y: str = "Y") -> str:
    """An SPA question with its {x} / {y} placeholders filled (generic X and Y by default)."""
    return _WRITER_PLACEHOLDER.sub(lambda m: x if m.group(1).lower() == "x" else y, text or "")


class TaskKind(models.TextChoices):
    LIKERT = "likert", "Likert rating"
    CONTINUOUS = "continuous", "Continuous rating (0-100)"
    CATEGORICAL = "categorical", "Categorical label"
    ORDINAL = "ordinal", "Ordinal label"
    PAIRWISE = "pairwise", "Pairwise preference (A / B / Tie)"
    SPA = "spa", "System-level probabilistic assessment"


class Status(models.TextChoices):
    DRAFT = "draft", "Draft"
    QUALIFYING = "qualifying", "Qualifying"
    LIVE = "live", "Live"
    PAUSED = "paused", "Paused"
    CLOSED = "closed", "Closed"


class CrowdPlatform(models.TextChoices):
    NONE = "", "None"
    PROLIFIC = "prolific", "Prolific"
    MTURK = "mturk", "Amazon Mechanical Turk"


class Study(models.Model):
    TaskKind = TaskKind
    Status = Status
    CrowdPlatform = CrowdPlatform

    workspace = models.ForeignKey(
        "annotation.Workspace", on_delete=models.CASCADE, related_name="studies"
    )
    token = models.CharField(max_length=32, unique=True, default=new_token, editable=False)
    name = models.CharField(max_length=200)
    task_kind = models.CharField(max_length=16, choices=TaskKind.choices)
    # Shape depends on the task kind; see annotation.schemes for the format and its validation.
    label_scheme = models.JSONField(default=dict, blank=True)
    question = models.TextField(blank=True, help_text="What the annotator is asked, per task.")
    instructions = models.TextField(blank=True, help_text="Shown before the first task.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)

    overlap = models.PositiveSmallIntegerField(default=3, help_text="Labels per production unit.")
    gold_rate = models.FloatField(default=0.0, help_text="Share of tasks that are hidden gold.")
    repeat_rate = models.FloatField(default=0.0, help_text="Share of tasks that are blind repeats.")
    repeat_min_gap_units = models.PositiveIntegerField(default=10)
    repeat_min_gap_minutes = models.PositiveIntegerField(default=30)
    attention_rate = models.FloatField(default=0.0)
    lease_seconds = models.PositiveIntegerField(default=1800)
    quota_per_annotator = models.PositiveIntegerField(null=True, blank=True)
    requires_qualification = models.BooleanField(default=False)
    qualification_pass_score = models.FloatField(default=0.8)
    qualification_attempts = models.PositiveSmallIntegerField(
        default=2, help_text="Attempts at the qualification test each annotator gets."
    )
    qualification_retry_after_guide = models.BooleanField(
        default=True, help_text="A failed annotator may retry only after re-reading the guide."
    )
    qualification_before_guide = models.BooleanField(
        default=False, help_text="The test comes before the guide (the guide is hidden during it)."
    )
    # Annotator pools (Enrolment.pool) that may work on this study; empty: every pool.
    allowed_pools = models.JSONField(default=list, blank=True)

    # System-level probabilistic assessment (Ethayarajh & Jurafsky 2022).
    spa_exposure_m = models.PositiveSmallIntegerField(
        default=5, help_text="Prompts per SPA batch (the exposure m)."
    )
    spa_fixed_sample = models.BooleanField(
        default=True, help_text="Every annotator reads the same fixed sample of prompts."
    )
    spa_both_directions = models.BooleanField(
        default=False, help_text="Also ask P[Y>X], later and shuffled, for the tau filter."
    )
    spa_tau = models.FloatField(
        null=True, blank=True, help_text="Pre-registered filter: drop if P[X>Y] + P[Y>X] > tau."
    )
    spa_collect_likert = models.BooleanField(
        default=False, help_text="Also collect a Likert rating per output on the SPA page."
    )

    crowd_platform = models.CharField(
        max_length=16, choices=CrowdPlatform.choices, default=CrowdPlatform.NONE, blank=True
    )
    crowd_completion_code = models.CharField(max_length=64, blank=True)
    crowd_completion_url = models.URLField(blank=True)

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "studies"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(overlap__gte=1), name="study_overlap_positive"),
            models.CheckConstraint(
                condition=Q(gold_rate__gte=0, gold_rate__lt=1), name="study_gold_rate_range"
            ),
            models.CheckConstraint(
                condition=Q(repeat_rate__gte=0, repeat_rate__lt=1), name="study_repeat_rate_range"
            ),
            models.CheckConstraint(
                condition=Q(attention_rate__gte=0, attention_rate__lt=1),
                name="study_attention_rate_range",
            ),
            models.CheckConstraint(
                condition=Q(
                    gold_rate__lt=1.0 - models.F("repeat_rate") - models.F("attention_rate")
                ),
                name="study_rates_leave_production",
            ),
            models.CheckConstraint(
                condition=Q(spa_tau__isnull=True) | Q(spa_tau__gte=1, spa_tau__lte=2),
                name="study_spa_tau_range",
            ),
            models.CheckConstraint(
                condition=Q(qualification_pass_score__gte=0, qualification_pass_score__lte=1),
                name="study_pass_score_range",
            ),
            models.CheckConstraint(condition=Q(lease_seconds__gte=10), name="study_lease_min"),
            models.CheckConstraint(
                condition=Q(task_kind__in=[k.value for k in TaskKind]), name="study_task_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in Status]), name="study_status_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self):
        """The builder's rules, so the admin, the pages and the services refuse the same things:
        a scheme the workbench can render, rates that leave production work, coherent settings.
        Each problem is a field error (the scheme's name the point or label at fault)."""
        from annotation.schemes import validate_scheme

        errors: dict[str, list[str]] = {}
        problems = validate_scheme(
            self.task_kind, self.label_scheme, collect_likert=self.spa_collect_likert
        )
        if problems:
            errors["label_scheme"] = [str(p) for p in problems]
        rates = [("gold_rate", self.gold_rate), ("repeat_rate", self.repeat_rate)]
        rates.append(("attention_rate", self.attention_rate))
        for name, value in rates:
            if value is not None and not 0 <= value < 1:
                errors.setdefault(name, []).append("must be at least 0 and below 1")
        if all(0 <= (v or 0) < 1 for _, v in rates) and sum(v or 0 for _, v in rates) >= 1:
            errors.setdefault("gold_rate", []).append(
                "gold, repeat and attention rates together must leave room for production work"
            )
        if self.spa_tau is not None and not 1 <= self.spa_tau <= 2:
            errors.setdefault("spa_tau", []).append("must be between 1 and 2 (the paper uses 1.1)")
        if (
            self.qualification_pass_score is not None
            and not 0 <= self.qualification_pass_score <= 1
        ):
            errors.setdefault("qualification_pass_score", []).append("must be between 0 and 1")
        for name in ("overlap", "spa_exposure_m", "quota_per_annotator"):
            value = getattr(self, name)
            if value is not None and value < 1:
                errors.setdefault(name, []).append("must be at least 1")
        if self.lease_seconds is not None and self.lease_seconds < 10:
            errors.setdefault("lease_seconds", []).append("must be at least 10 seconds")
        pools = self.allowed_pools
        if not isinstance(pools, list) or any(p not in Pool.values for p in pools):
            errors.setdefault("allowed_pools", []).append(
                f"must be a list of pools: {', '.join(Pool.values)}"
            )
        elif len(set(pools)) != len(pools):
            errors.setdefault("allowed_pools", []).append("lists a pool twice")
        if self.crowd_platform:
            if pools and Pool.OPEN_CROWD not in pools:
                errors.setdefault("crowd_platform", []).append(
                    "a crowd platform brings open-crowd workers; allow the open crowd pool"
                )
            if not (self.crowd_completion_code or self.crowd_completion_url):
                errors.setdefault("crowd_completion_code", []).append(
                    "give the completion code or URL the platform expects at the end"
                )
        if errors:
            raise ValidationError(errors)

    def pool_allowed(self, pool: str) -> bool:
        return not self.allowed_pools or pool in self.allowed_pools

    @property
    def is_pairwise(self) -> bool:
        return self.task_kind == self.TaskKind.PAIRWISE

    @property
    def is_spa(self) -> bool:
        return self.task_kind == self.TaskKind.SPA

    @property
    def question_display(self) -> str:
        """The question as people read it outside a task: SPA's {x}/{y} filled as X and Y."""
        return fill_writers(self.question)

    def current_guide(self):
        return self.guide_versions.order_by("-number").first()


class Comparison(models.Model):
    """A pair of systems an SPA study asks about, with the lead's expected direction if stated."""

    class Expected(models.TextChoices):
        UNSTATED = "", "Not stated"
        X_BETTER = "x", "X better than Y"
        Y_BETTER = "y", "Y better than X"
        INDIFFERENT = "indifferent", "No difference"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="comparisons")
    system_x = models.ForeignKey("annotation.System", on_delete=models.CASCADE, related_name="+")
    system_y = models.ForeignKey("annotation.System", on_delete=models.CASCADE, related_name="+")
    expected = models.CharField(max_length=16, choices=Expected.choices, blank=True, default="")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["study", "position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "system_x", "system_y"], name="comparison_unique"
            ),
            models.CheckConstraint(
                condition=~Q(system_x=models.F("system_y")), name="comparison_distinct_systems"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.system_x} vs {self.system_y}"


def new_queue_seed() -> int:
    """A random, non-zero 62-bit seed for an annotator's queue order and presentation draws."""
    return secrets.randbits(62) or 1


class Pool(models.TextChoices):
    OPEN_CROWD = "open_crowd", "Open crowd"
    TRAINED = "trained", "Trained raters"
    EXPERT = "expert", "Domain experts"
    TARGET_USER = "target_user", "Target users"


class Enrolment(models.Model):
    """An annotator's place in a study: the pool they come from, their gates and queue seed."""

    Pool = Pool

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="enrolments")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="enrolments"
    )
    pool = models.CharField(max_length=16, choices=Pool.choices, default=Pool.TRAINED)
    # Seeds this annotator's queue order and presentation draws; recorded so a run can be replayed.
    queue_seed = models.BigIntegerField(default=new_queue_seed)
    # The engine's bookkeeping (annotation.services.assignment): positions handed out so far, and
    # where this annotator's walk through the study's shuffled units stands (pass, segment, key).
    positions_issued = models.PositiveIntegerField(default=0)
    walk_pass = models.PositiveIntegerField(default=0)
    walk_step = models.PositiveIntegerField(default=0)
    walk_cursor = models.BigIntegerField(null=True, blank=True)
    external_id = models.CharField(
        max_length=128, blank=True, help_text="Crowd platform worker id (Prolific PID, MTurk id)."
    )
    qualified_at = models.DateTimeField(null=True, blank=True)
    qualification_score = models.FloatField(null=True, blank=True)
    calibrated_guide_version = models.ForeignKey(
        "annotation.GuideVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    quota = models.PositiveIntegerField(
        null=True, blank=True, help_text="Overrides the study's per-annotator quota."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "user"], name="enrolment_unique"),
            models.CheckConstraint(
                condition=Q(pool__in=[p.value for p in Pool]), name="enrolment_pool_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.study}"


class GuideVersion(models.Model):
    """One published version of a study's annotation guide; labels record the version they used."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="guide_versions")
    number = models.PositiveIntegerField()
    body = models.TextField(help_text="The guide, in plain text or Markdown.")
    changes = models.TextField(blank=True, help_text="What changed since the previous version.")
    requires_recalibration = models.BooleanField(default=False)
    # The short batch an annotator labels before production resumes (calibration-role units).
    recalibration_units = models.ManyToManyField("annotation.Unit", blank=True, related_name="+")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    published_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["study", "number"], name="guide_version_unique"),
            models.CheckConstraint(condition=Q(number__gte=1), name="guide_version_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.study} guide v{self.number}"


class Ruling(models.Model):
    """A short, citable decision from calibration, written back into the guide."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="rulings")
    # Null while a draft (recorded in a calibration session, not yet published).
    guide_version = models.ForeignKey(
        GuideVersion,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="rulings_introduced",
    )
    title = models.CharField(max_length=200)
    text = models.TextField()
    example = models.TextField(blank=True)
    # The real items the ruling decides (its examples in the guide).
    examples = models.ManyToManyField("annotation.Unit", blank=True, related_name="rulings")
    session = models.ForeignKey(
        "annotation.CalibrationSession",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="rulings",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "guide_version__number", "id"]

    def __str__(self) -> str:
        return self.title
