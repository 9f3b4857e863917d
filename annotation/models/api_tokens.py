"""Per-user API tokens: named, listed and revoked by their owner; only a hash is stored.

The secret is shown once, at creation. A token is 256 random bits, so a plain SHA-256 of it is
enough to make a leaked table useless (no slow password hash is needed for a random secret).
"""

from django.conf import settings
from django.db import models
from django.db.models import Q


class ApiToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What the owner calls it (a script, a box).")
    # The first characters of the secret, shown in lists so the owner can tell tokens apart.
    prefix = models.CharField(max_length=16)
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the secret, hex.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=~Q(name=""), name="api_token_named"),
        ]
        indexes = [models.Index(fields=["user", "revoked_at"], name="api_token_user_live")]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) of {self.user}"

    @property
    def active(self) -> bool:
        return self.revoked_at is None
