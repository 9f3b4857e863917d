"""API tokens as the service answers them: which secrets find a user, how often a token's use is
recorded, which tokens a user may revoke, and where a token request is refused and why.

Added after the mutation run of annotation/services/api_tokens.py (bench/MUTATION.md).
"""

from datetime import timedelta

import pytest

from annotation.models import ApiToken
from annotation.services import api_tokens
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_a_secret_finds_its_user_and_token():
    user = UserFactory()
    made = api_tokens.create_token(user, "nightly")
    assert api_tokens.user_for_secret(made.secret) == (user, made.token)


def stored_as_is(user, secret):
    """A token row for any secret (create_token only makes well-formed ones)."""
    ApiToken.objects.create(
        user=user, name=secret[:100], prefix=secret[:14], digest=api_tokens.digest(secret)
    )


def test_a_secret_without_the_prefix_or_too_long_finds_no_one():
    user = UserFactory()
    made = api_tokens.create_token(user, "nightly")
    bare = made.secret.removeprefix(api_tokens.PREFIX)
    ApiToken.objects.create(
        user=user, name="bare", prefix=bare[:14], digest=api_tokens.digest(bare)
    )
    assert api_tokens.user_for_secret(bare) is None
    # a stored token whose secret is exactly 200 characters works; 201 is refused unread
    for length, found in ((200, True), (201, False)):
        secret = api_tokens.PREFIX + "x" * (length - len(api_tokens.PREFIX))
        stored_as_is(user, secret)
        assert (api_tokens.user_for_secret(secret) is not None) is found, length


def test_a_revoked_token_or_an_inactive_owner_finds_no_one():
    user, other = UserFactory(), UserFactory()
    revoked = api_tokens.create_token(user, "old")
    api_tokens.revoke_token(user, revoked.token.pk)
    assert api_tokens.user_for_secret(revoked.secret) is None
    inactive = api_tokens.create_token(other, "script")
    other.is_active = False
    other.save()
    assert api_tokens.user_for_secret(inactive.secret) is None


def test_use_is_recorded_at_most_once_a_minute(monkeypatch):
    user = UserFactory()
    made = api_tokens.create_token(user, "poller")
    _, token = api_tokens.user_for_secret(made.secret)
    first = token.last_used_at
    assert first is not None and ApiToken.objects.get().last_used_at == first
    _, token = api_tokens.user_for_secret(made.secret)
    assert token.last_used_at == first and ApiToken.objects.get().last_used_at == first
    # a use exactly a minute after the last one is not recorded; a second later it is
    for later, recorded in ((timedelta(minutes=1), False), (timedelta(seconds=61), True)):
        now = first + later
        monkeypatch.setattr(api_tokens.timezone, "now", lambda now=now: now)
        _, token = api_tokens.user_for_secret(made.secret)
        expected = now if recorded else first
        assert token.last_used_at == expected == ApiToken.objects.get().last_used_at, later


def test_a_user_revokes_only_their_own_active_tokens():
    owner, other = UserFactory(), UserFactory()
    made = api_tokens.create_token(owner, "laptop")
    kept = api_tokens.create_token(owner, "server")
    assert api_tokens.revoke_token(other, made.token.pk) is False
    assert not ApiToken.objects.filter(revoked_at__isnull=False).exists()
    assert api_tokens.revoke_token(owner, made.token.pk) is True
    revoked_at = ApiToken.objects.get(pk=made.token.pk).revoked_at
    assert revoked_at is not None
    assert api_tokens.revoke_token(owner, made.token.pk) is False  # already revoked
    assert ApiToken.objects.get(pk=made.token.pk).revoked_at == revoked_at
    assert ApiToken.objects.get(pk=kept.token.pk).revoked_at is None  # the other one still works
    assert api_tokens.user_for_secret(kept.secret) is not None


def refusal(user, name):
    with pytest.raises(api_tokens.TokenError) as error:
        api_tokens.create_token(user, name)
    return error.value.field, error.value.message, str(error.value)


def test_a_token_request_is_refused_on_its_name_and_says_why():
    user = UserFactory()
    assert refusal(user, "  ") == (
        "name",
        "give the token a name, e.g. the script that will use it",
        "name: give the token a name, e.g. the script that will use it",
    )
    assert refusal(user, "n" * 101)[:2] == ("name", "must be at most 100 characters")
    assert api_tokens.create_token(user, "n" * 100).token.name == "n" * 100
