"""Guessing API tokens is throttled like guessing passwords (django-axes): wrong tokens count
against the caller's address, a paused address is refused even a right token until the pause
ends by itself, and no one else (another address, a person's password sign-in) is paused."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.services.api_tokens import create_token
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "pw-for-tests-1"
GUESSER = "198.51.100.7"
LIMIT = 5


@pytest.fixture(autouse=True)
def limits(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT


def call(secret, ip=GUESSER):
    client = APIClient(REMOTE_ADDR=ip)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client.get(reverse("api-studies"))


def guess(n, ip=GUESSER):
    return [call(f"concord_guess{i:040d}", ip=ip).status_code for i in range(n)]


def test_wrong_tokens_are_401_until_the_limit_then_the_address_is_paused_even_for_a_right_one():
    secret = create_token(UserFactory(), "script").secret
    assert call(secret).status_code == 200
    assert guess(LIMIT - 1) == [401] * (LIMIT - 1)
    assert guess(1) == [429]  # the failure that reaches the limit is answered as the pause
    refused = call(secret)
    assert refused.status_code == 429
    assert "Too many failed token attempts" in refused.json()["detail"]
    assert "paused for 15 minutes" in refused.json()["detail"]
    assert int(refused["Retry-After"]) == 15 * 60


def test_the_pause_ends_by_itself_after_the_cool_off(settings):
    secret = create_token(UserFactory(), "script").secret
    guess(LIMIT)
    assert call(secret).status_code == 429
    past = timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    AccessAttempt.objects.update(attempt_time=past)
    assert call(secret).status_code == 200


def test_another_address_is_not_paused_by_one_address_guessing():
    secret = create_token(UserFactory(), "script").secret
    guess(LIMIT)
    assert call(secret, ip=GUESSER).status_code == 429
    assert call(secret, ip="203.0.113.9").status_code == 200


def test_token_guessing_of_no_account_does_not_pause_anyones_password_sign_in():
    # Many addresses guessing tokens: each failure is of no account name, and together they are
    # many more than the limit; a person's sign-in from yet another address is not paused.
    user = UserFactory()
    for i in range(LIMIT):
        guess(LIMIT, ip=f"198.51.100.{i + 20}")
    response = Client(REMOTE_ADDR="203.0.113.9").post(
        reverse("login"), {"username": user.username, "password": PASSWORD}
    )
    assert response.status_code == 302 and "/login/" not in response["Location"]


def test_a_paused_address_is_paused_for_password_sign_in_too():
    # Same limits, same address count: token guesses and password guesses add up.
    user = UserFactory()
    guess(LIMIT)
    response = Client(REMOTE_ADDR=GUESSER).post(
        reverse("login"), {"username": user.username, "password": PASSWORD}
    )
    assert response.status_code == 429


def test_signing_in_with_a_password_between_guesses_does_not_reset_the_count():
    """A guesser with an account of their own signs in every few guesses: still paused."""
    user = UserFactory(password=PASSWORD)
    secret = create_token(user, "script").secret
    guess(LIMIT - 2)
    client = Client(REMOTE_ADDR=GUESSER)
    client.post(reverse("login"), {"username": user.username, "password": PASSWORD})
    assert "_auth_user_id" in client.session
    guess(2)
    assert call(secret).status_code == 429
