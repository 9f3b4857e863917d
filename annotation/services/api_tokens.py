"""Creating, revoking and checking per-user API tokens (the secret is never stored).

A token reads `concord_<43 url-safe characters>`; the database keeps its SHA-256 and a short
prefix to tell tokens apart. Revoking is immediate: the next request with it is refused.
"""

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotation.models import ApiToken

PREFIX = "concord_"
MAX_ACTIVE_TOKENS = 20
# last_used_at is a hint for the owner, not an audit log: refresh it at most this often.
TOUCH_EVERY = timedelta(minutes=1)


class TokenError(ValueError):
    """A token request that cannot be granted; `field` names the offending field."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class NewToken:
    token: ApiToken
    secret: str  # shown to the owner once, never stored


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def create_token(user, name: str) -> NewToken:
    """A new named token for `user`; the secret is in the result and nowhere else."""
    name = (name or "").strip()
    if not name:
        raise TokenError("name", "give the token a name, e.g. the script that will use it")
    if len(name) > 100:
        raise TokenError("name", "must be at most 100 characters")
    # Lock the user's row so two parallel creations cannot both pass the cap.
    get_user_model().objects.select_for_update().filter(pk=user.pk).first()
    active = ApiToken.objects.filter(user=user, revoked_at__isnull=True).count()
    if active >= MAX_ACTIVE_TOKENS:
        raise TokenError("name", f"you already have {MAX_ACTIVE_TOKENS} tokens; revoke one first")
    secret = PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name, prefix=secret[: len(PREFIX) + 6], digest=digest(secret)
    )
    return NewToken(token=token, secret=secret)


def revoke_token(user, token_id) -> bool:
    """Revoke one of the user's own tokens; False if there is no such active token of theirs."""
    return bool(
        ApiToken.objects.filter(pk=token_id, user=user, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
    )


def user_for_secret(secret: str):
    """(user, token) for an active token of an active user, else None. One query."""
    if not secret.startswith(PREFIX) or len(secret) > 200:
        return None
    token = (
        ApiToken.objects.select_related("user")
        .filter(digest=digest(secret), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > TOUCH_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token.user, token
