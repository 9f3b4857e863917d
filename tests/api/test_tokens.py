"""API tokens: created with a name, stored hashed, refused once revoked; CSRF stays on for
session requests; the account page shows a secret once."""

import hashlib

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import ApiToken
from annotation.services.api_tokens import create_token, revoke_token
from tests.api.conftest import token_client
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def bearer(secret):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_a_token_is_stored_only_as_its_hash():
    user = UserFactory()
    made = create_token(user, "nightly import")
    row = ApiToken.objects.get()
    assert made.secret.startswith("concord_") and len(made.secret) > 40
    assert row.digest == hashlib.sha256(made.secret.encode()).hexdigest()
    stored = [
        str(v)
        for v in ApiToken.objects.values_list(
            *[f.attname for f in ApiToken._meta.concrete_fields]
        ).get()
    ]
    assert not any(made.secret in value for value in stored)
    assert made.secret.startswith(row.prefix)


def test_a_token_authenticates_and_marks_its_use():
    user = UserFactory()
    made = create_token(user, "script")
    response = bearer(made.secret).get(reverse("api-tokens"))
    assert response.status_code == 200
    assert [t["name"] for t in response.json()["results"]] == ["script"]
    assert "secret" not in response.json()["results"][0]
    made.token.refresh_from_db()
    assert made.token.last_used_at is not None


@pytest.mark.parametrize(
    "header",
    ["Bearer concord_wrong", "Bearer", "Bearer a b", "Bearer not-a-concord-token"],
)
def test_a_bad_token_is_401(header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get(reverse("api-studies"))
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_no_credentials_is_401_with_a_bearer_challenge():
    response = APIClient().get(reverse("api-studies"))
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")


def test_a_revoked_token_is_refused_at_the_next_request():
    user = UserFactory()
    made = create_token(user, "laptop")
    client = bearer(made.secret)
    assert client.get(reverse("api-studies")).status_code == 200
    assert revoke_token(user, made.token.pk)
    assert client.get(reverse("api-studies")).status_code == 401


def test_a_deactivated_users_token_is_refused():
    user = UserFactory()
    client = token_client(user)
    user.is_active = False
    user.save()
    assert client.get(reverse("api-studies")).status_code == 401


def test_tokens_are_listed_and_revoked_through_the_api_only_by_their_owner():
    owner, other = UserFactory(), UserFactory()
    mine = create_token(owner, "mine").token
    client = token_client(other)
    # Another user's token id answers 404, for reading and for revoking.
    assert client.get(reverse("api-token", args=[mine.pk])).status_code == 404
    assert client.delete(reverse("api-token", args=[mine.pk])).status_code == 404
    mine.refresh_from_db()
    assert mine.revoked_at is None
    own = token_client(owner)
    assert own.delete(reverse("api-token", args=[mine.pk])).status_code == 204
    mine.refresh_from_db()
    assert mine.revoked_at is not None


def test_creating_a_token_through_the_api_answers_the_secret_once():
    user = UserFactory()
    client = token_client(user)
    response = client.post(reverse("api-tokens"), {"name": "ci"}, format="json")
    assert response.status_code == 201
    secret = response.json()["secret"]
    assert bearer(secret).get(reverse("api-studies")).status_code == 200
    listed = client.get(reverse("api-tokens")).json()["results"]
    assert all("secret" not in t for t in listed) and secret not in str(listed)


def test_a_token_needs_a_name():
    client = token_client(UserFactory())
    response = client.post(reverse("api-tokens"), {"name": "  "}, format="json")
    assert response.status_code == 400 and "name" in response.json()


def test_token_creation_is_throttled(settings):
    settings.CONCORD_API_THROTTLE_RATES = {
        **settings.CONCORD_API_THROTTLE_RATES,
        "tokens": "2/hour",
    }
    client = token_client(UserFactory())
    codes = [
        client.post(reverse("api-tokens"), {"name": f"t{i}"}, format="json").status_code
        for i in range(3)
    ]
    assert codes == [201, 201, 429]


def test_writes_are_throttled_per_user(settings, world):
    settings.CONCORD_API_THROTTLE_RATES = {**settings.CONCORD_API_THROTTLE_RATES, "writes": "2/min"}
    client = token_client(world.annotator)
    url = reverse("api-work-next-v1", args=[world.study.token])
    codes = [client.post(url).status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    # Reads are not counted.
    assert client.get(reverse("api-work-studies")).status_code == 200


def test_session_writes_still_need_the_csrf_token(world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.annotator)
    url = reverse("api-work-next-v1", args=[world.study.token])
    refused = client.post(url, content_type="application/json")
    assert refused.status_code == 403 and "CSRF" in refused.json()["detail"]
    client.get(reverse("account-tokens"))  # sets the csrftoken cookie
    csrf = client.cookies["csrftoken"].value
    accepted = client.post(url, content_type="application/json", headers={"X-CSRFToken": csrf})
    assert accepted.status_code == 200


def test_token_writes_need_no_csrf_token(world):
    client = token_client(world.annotator)
    client.enforce_csrf_checks = True
    assert client.post(reverse("api-work-next-v1", args=[world.study.token])).status_code == 200


def test_account_page_creates_lists_and_revokes(client):
    user = UserFactory()
    client.force_login(user)
    page = client.post(reverse("account-tokens"), {"name": "notebook"})
    assert page.status_code == 200
    secret = page.context["new_secret"]
    assert secret in page.content.decode()
    token = ApiToken.objects.get(user=user)
    # Listed by name and prefix; the secret is never shown again.
    again = client.get(reverse("account-tokens")).content.decode()
    assert "notebook" in again and token.prefix in again and secret not in again
    client.post(reverse("account-token-revoke", args=[token.pk]))
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert bearer(secret).get(reverse("api-studies")).status_code == 401


def test_account_page_cannot_revoke_someone_elses_token(client):
    owner = UserFactory()
    token = create_token(owner, "theirs").token
    client.force_login(UserFactory())
    client.post(reverse("account-token-revoke", args=[token.pk]))
    token.refresh_from_db()
    assert token.revoked_at is None


def test_account_page_without_a_name_says_so(client):
    client.force_login(UserFactory())
    page = client.post(reverse("account-tokens"), {"name": ""})
    assert page.status_code == 400 and "give the token a name" in page.content.decode()
    assert not ApiToken.objects.exists()


def test_account_page_needs_sign_in(client):
    response = client.get(reverse("account-tokens"))
    assert response.status_code == 302 and reverse("login") in response["Location"]
