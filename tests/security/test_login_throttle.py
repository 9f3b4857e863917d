"""Login throttling (django-axes): per-address and per-account limits that pause, never lock a
known user out for good; the admin's sign-in is throttled the same way."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "pw-for-tests-1"


@pytest.fixture(autouse=True)
def limits(settings):
    settings.AXES_FAILURE_LIMIT = 5


def attempt(username, password, ip="192.0.2.10", url=None, **headers):
    return Client().post(
        url or reverse("login"),
        {"username": username, "password": password},
        REMOTE_ADDR=ip,
        **headers,
    )


def signed_in(response) -> bool:
    return response.status_code == 302 and "/login/" not in response["Location"]


def test_wrong_passwords_are_answered_normally_until_the_limit_then_paused():
    user = UserFactory()
    answers = [attempt(user.username, "wrong").status_code for _ in range(5)]
    assert answers[:4] == [200] * 4  # the form again, with its error
    locked = attempt(user.username, PASSWORD)  # even the right password, while paused
    assert locked.status_code == 429
    assert "Too many failed sign-in attempts" in locked.content.decode()
    assert "Try again in 15 minutes" in locked.content.decode()


def test_one_address_guessing_many_accounts_is_paused_by_address():
    victim = UserFactory()
    for i in range(5):
        attempt(f"nobody{i}", "wrong", ip="198.51.100.7")
    assert attempt(victim.username, PASSWORD, ip="198.51.100.7").status_code == 429
    assert signed_in(attempt(victim.username, PASSWORD, ip="203.0.113.9"))  # others unaffected


def test_many_addresses_guessing_one_account_are_paused_by_account():
    user = UserFactory()
    for i in range(5):
        attempt(user.username, "wrong", ip=f"198.51.100.{i + 1}")
    assert attempt(user.username, PASSWORD, ip="203.0.113.50").status_code == 429


def test_the_pause_ends_by_itself_so_a_known_user_is_never_locked_out_for_good(settings):
    user = UserFactory()
    for i in range(5):
        attempt(user.username, "wrong", ip=f"198.51.100.{i + 1}")
    assert attempt(user.username, PASSWORD).status_code == 429
    past = timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    AccessAttempt.objects.update(attempt_time=past)
    assert signed_in(attempt(user.username, PASSWORD))


def test_a_success_does_not_wipe_the_count_so_a_guesser_cannot_reset_it(settings):
    """An attacker with an account of their own cannot sign in between guesses to start over;
    the failures age out with the cool-off instead."""
    settings.AXES_FAILURE_LIMIT = 5
    mine, theirs = UserFactory(), UserFactory()
    for _ in range(4):
        attempt(theirs.username, "wrong")
    assert signed_in(attempt(mine.username, PASSWORD))
    assert attempt(theirs.username, "wrong again").status_code == 429
    past = timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    AccessAttempt.objects.update(attempt_time=past)
    assert signed_in(attempt(theirs.username, PASSWORD))


def test_the_admin_sign_in_is_throttled_too():
    admin = UserFactory(is_staff=True, is_superuser=True)
    url = reverse("admin:login")
    for _ in range(5):
        attempt(admin.username, "wrong", url=url)
    assert attempt(admin.username, PASSWORD, url=url).status_code == 429


def test_behind_the_proxy_the_address_is_the_forwarded_client_not_the_proxy(settings):
    settings.BEHIND_TLS_PROXY = True
    user = UserFactory()
    proxy = "10.0.0.2"
    for i in range(5):
        attempt(f"nobody{i}", "wrong", ip=proxy, HTTP_X_FORWARDED_FOR="198.51.100.7")
    # Another client through the same proxy is not paused; a forged left-most entry is ignored.
    other = attempt(
        user.username, PASSWORD, ip=proxy, HTTP_X_FORWARDED_FOR="198.51.100.7, 203.0.113.9"
    )
    assert signed_in(other)
    same = attempt(user.username, PASSWORD, ip=proxy, HTTP_X_FORWARDED_FOR="198.51.100.7")
    assert same.status_code == 429
