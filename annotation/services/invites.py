"""How people join a study: single-use, expiring invite links that create a pseudonymous account,
and existing users added by username; each enrolment with its pool and quota.

Removing and deactivating people is `annotation.services.people`.
"""

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import Enrolment, Invite, Membership, Study

DEFAULT_VALID_FOR = timedelta(days=7)
MAX_VALID_FOR = timedelta(days=90)
# Pseudonyms avoid look-alike characters, so a person can read theirs back.
PSEUDONYM_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"
INVALID_INVITE = (
    "This invite link has been used, has expired or was withdrawn. "
    "Ask the study's lead for a new one."
)


class InviteError(ValueError):
    """An invite link that cannot be used (unknown, used, expired or withdrawn: one message for
    all, so a guessed link learns nothing)."""


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _check_pool_and_quota(study: Study, pool: str, quota: int | None) -> None:
    errors = {}
    if pool not in Enrolment.Pool.values:
        errors["pool"] = f"choose one of {', '.join(Enrolment.Pool.values)}"
    elif not study.pool_allowed(pool):
        errors["pool"] = (
            f"this study takes only {', '.join(study.allowed_pools)}; change its allowed pools "
            "in the settings first"
        )
    if quota is not None and (isinstance(quota, bool) or not isinstance(quota, int) or quota < 1):
        errors["quota"] = "must be a whole number of tasks, at least 1 (or empty for no limit)"
    if study.status == Study.Status.CLOSED:
        errors["study"] = "the study is closed"
    if errors:
        raise ValidationError(errors)


@transaction.atomic
def create_invite(
    *,
    study: Study,
    created_by,
    pool: str = Enrolment.Pool.TRAINED,
    quota: int | None = None,
    note: str = "",
    valid_for: timedelta = DEFAULT_VALID_FOR,
) -> tuple[Invite, str]:
    """A single-use link into `study` for one new annotator, valid for `valid_for`.

    Returns the invite and its secret; only the secret's hash is stored, so the link can be shown
    once, now (`invite_path(secret)`). Raises ValidationError keyed by field.
    """
    _check_pool_and_quota(study, pool, quota)
    if not timedelta(hours=1) <= valid_for <= MAX_VALID_FOR:
        raise ValidationError({"valid_for": "must be between 1 hour and 90 days"})
    if len(note) > 200:
        raise ValidationError({"note": "is longer than 200 characters"})
    secret = secrets.token_urlsafe(24)
    invite = Invite.objects.create(
        workspace=study.workspace,
        study=study,
        secret_hash=secret_hash(secret),
        pool=pool,
        quota=quota,
        note=note,
        created_by=created_by,
        expires_at=timezone.now() + valid_for,
    )
    return invite, secret


def invite_path(secret: str) -> str:
    from django.urls import reverse

    return reverse("invite-accept", args=[secret])


def open_invite(secret: str, now=None) -> Invite:
    """The invite behind a link if it can still be used, else InviteError."""
    now = now or timezone.now()
    invite = (
        Invite.objects.select_related("study", "workspace")
        .filter(secret_hash=secret_hash(secret))
        .first()
    )
    if invite is None or invite.state(now) != "open" or invite.study.status == Study.Status.CLOSED:
        raise InviteError(INVALID_INVITE)
    return invite


def _new_pseudonym() -> str:
    return "rater-" + "".join(secrets.choice(PSEUDONYM_ALPHABET) for _ in range(8))


@transaction.atomic
def accept_invite(secret: str, *, password: str):
    """Use an invite: create a pseudonymous account (username `rater-xxxxxxxx`, the given
    password), make it an annotator of the workspace and enrol it in the study with the
    invite's pool and quota. The invite is used up in the same transaction; a second use, even
    at the same moment, gets InviteError. A weak password is ValidationError({"password": ...})."""
    invite = (
        Invite.objects.select_for_update()
        .select_related("study", "workspace")
        .filter(secret_hash=secret_hash(secret))
        .first()
    )
    now = timezone.now()
    if invite is None or invite.state(now) != "open" or invite.study.status == Study.Status.CLOSED:
        raise InviteError(INVALID_INVITE)
    user_model = get_user_model()
    for _ in range(5):
        username = _new_pseudonym()
        if not user_model.objects.filter(username=username).exists():
            break
    user = user_model(username=username)
    try:
        validate_password(password, user)
    except ValidationError as error:
        raise ValidationError({"password": error.messages}) from None
    user.set_password(password)
    try:
        with transaction.atomic():
            user.save()
    except IntegrityError:  # a pseudonym drawn twice at the same moment: one more draw
        user.username = _new_pseudonym()
        user.save()
    Membership.objects.get_or_create(
        workspace=invite.workspace, user=user, defaults={"role": Membership.Role.ANNOTATOR}
    )
    Enrolment.objects.create(study=invite.study, user=user, pool=invite.pool, quota=invite.quota)
    invite.used_at = now
    invite.used_by = user
    invite.save(update_fields=["used_at", "used_by"])
    return user


@transaction.atomic
def revoke_invite(invite: Invite) -> Invite:
    """Withdraw an unused invite; its link stops working at once. A used invite is unchanged."""
    Invite.objects.filter(pk=invite.pk, used_at__isnull=True, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    invite.refresh_from_db()
    return invite


@transaction.atomic
def add_existing_user(
    *, study: Study, username: str, pool: str = Enrolment.Pool.TRAINED, quota: int | None = None
) -> Enrolment:
    """Enrol an existing, active account by username (and make it a workspace annotator unless it
    is already a member). Raises ValidationError({"username": ...}) for an unknown, inactive or
    already enrolled account, and for bad pool or quota."""
    _check_pool_and_quota(study, pool, quota)
    user = get_user_model().objects.filter(username=username.strip(), is_active=True).first()
    if user is None:
        raise ValidationError({"username": f"no active account is named {username.strip()!r}"})
    if Enrolment.objects.filter(study=study, user=user).exists():
        raise ValidationError({"username": f"{user.get_username()} is already in this study"})
    Membership.objects.get_or_create(
        workspace=study.workspace, user=user, defaults={"role": Membership.Role.ANNOTATOR}
    )
    return Enrolment.objects.create(study=study, user=user, pool=pool, quota=quota)


@transaction.atomic
def update_enrolment(enrolment: Enrolment, *, pool: str, quota: int | None) -> Enrolment:
    """Change an annotator's pool and per-annotator quota (None: the study's quota applies)."""
    _check_pool_and_quota(enrolment.study, pool, quota)
    enrolment.pool = pool
    enrolment.quota = quota
    enrolment.save(update_fields=["pool", "quota"])
    return enrolment
