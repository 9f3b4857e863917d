"""Fixtures of the API tests: two workspaces with a study each, their leads, an annotator and
staff, and API clients that authenticate with a token."""

from dataclasses import dataclass

import pytest
from rest_framework.test import APIClient

from annotation.models import Membership
from annotation.services.api_tokens import create_token
from tests.factories import MembershipFactory, UserFactory, enrol, make_study


@pytest.fixture(autouse=True)
def no_earlier_throttle_counts():
    """Throttle counts are cached per user id, and SQLite reuses the ids of rolled-back users."""
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    if isinstance(caches["default"], LocMemCache):  # never flush a shared Redis
        caches["default"].clear()


@dataclass
class World:
    study: object  # workspace A's study (categorical, 4 prompts x 2 systems)
    other: object  # workspace B's study
    lead: object  # lead of workspace A
    other_lead: object  # lead of workspace B
    annotator: object  # enrolled in `study`, member of workspace A as annotator
    staff: object


@pytest.fixture
def world(db) -> World:
    study = make_study(n_prompts=4)
    other = make_study(n_prompts=2)
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    other_lead = MembershipFactory(workspace=other.workspace, role=Membership.Role.LEAD).user
    annotator = UserFactory()
    MembershipFactory(workspace=study.workspace, user=annotator, role=Membership.Role.ANNOTATOR)
    enrol(study, annotator)
    staff = UserFactory(is_staff=True)
    return World(study, other, lead, other_lead, annotator, staff)


def token_client(user) -> APIClient:
    """An API client sending `user`'s new token (no session, no CSRF)."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {create_token(user, 'tests').secret}")
    return client
