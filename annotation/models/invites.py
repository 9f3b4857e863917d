"""Invite links: single-use, expiring links that let a new person join a study as an annotator.

Only a hash of the link's secret is stored, so the table cannot be read back into working links.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models.study import Pool


class Invite(models.Model):
    workspace = models.ForeignKey(
        "annotation.Workspace", on_delete=models.CASCADE, related_name="invites"
    )
    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="invites")
    # sha256 of the secret in the link; the secret itself is shown once, when the invite is made.
    secret_hash = models.CharField(max_length=64, unique=True, editable=False)
    pool = models.CharField(max_length=16, choices=Pool.choices, default=Pool.TRAINED)
    quota = models.PositiveIntegerField(null=True, blank=True)
    note = models.CharField(max_length=200, blank=True, help_text="For the lead: whom it is for.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(pool__in=[p.value for p in Pool]), name="invite_pool_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"invite to {self.study} ({self.get_pool_display()})"

    def state(self, now) -> str:
        """ "used", "revoked", "expired" or "open"."""
        if self.used_at:
            return "used"
        if self.revoked_at:
            return "revoked"
        if self.expires_at <= now:
            return "expired"
        return "open"
