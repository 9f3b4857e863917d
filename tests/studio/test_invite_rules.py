"""Invites and enrolments field by field: each refused pool or quota with its message, a closed
study, which links still open, and the pseudonyms invites make.

Added after the mutation run of annotation/services/invites.py (bench/MUTATION.md).
"""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from annotation.models import Invite
from annotation.services import invites
from tests.factories import UserFactory, enrol, make_study

pytestmark = pytest.mark.django_db
PASSWORD = "a-long-enough-passphrase-7"


def errors_of(call, **kwargs):
    with pytest.raises(ValidationError) as caught:
        call(**kwargs)
    return caught.value.message_dict


def invite_errors(study, **kwargs):
    return errors_of(invites.create_invite, study=study, created_by=None, **kwargs)


def test_an_unknown_pool_names_the_pools_there_are():
    study = make_study(n_prompts=1)
    assert invite_errors(study, pool="vip") == {
        "pool": ["choose one of open_crowd, trained, expert, target_user"]
    }


def test_a_pool_the_study_does_not_take_names_the_ones_it_does():
    study = make_study(n_prompts=1, allowed_pools=["expert", "target_user"])
    assert invite_errors(study, pool="trained") == {
        "pool": [
            "this study takes only expert, target_user; change its allowed pools in the settings"
            " first"
        ]
    }
    invite, _ = invites.create_invite(study=study, created_by=None, pool="target_user")
    assert invite.pool == "target_user"


@pytest.mark.parametrize("quota", [0, -1, True, 1.5, "3"])
def test_a_quota_must_be_a_whole_number_of_at_least_one(quota):
    study = make_study(n_prompts=1)
    assert invite_errors(study, quota=quota) == {
        "quota": ["must be a whole number of tasks, at least 1 (or empty for no limit)"]
    }


def test_a_quota_of_one_or_none_is_taken():
    study = make_study(n_prompts=1)
    assert invites.create_invite(study=study, created_by=None, quota=1)[0].quota == 1
    assert invites.create_invite(study=study, created_by=None, quota=None)[0].quota is None


def test_a_closed_study_takes_nobody_and_says_so_with_the_other_problems():
    study = make_study(n_prompts=1, status="closed")
    assert invite_errors(study, quota=0) == {
        "quota": ["must be a whole number of tasks, at least 1 (or empty for no limit)"],
        "study": ["the study is closed"],
    }
    user = UserFactory()
    assert errors_of(invites.add_existing_user, study=study, username=user.username) == {
        "study": ["the study is closed"]
    }


def test_pool_and_quota_changes_are_checked_the_same_way():
    study = make_study(n_prompts=1, allowed_pools=["trained"])
    enrolment = enrol(study, pool="trained")
    assert errors_of(invites.update_enrolment, enrolment=enrolment, pool="expert", quota=0) == {
        "pool": ["this study takes only trained; change its allowed pools in the settings first"],
        "quota": ["must be a whole number of tasks, at least 1 (or empty for no limit)"],
    }


def test_an_invite_opens_until_it_expires_and_not_once_the_study_closes():
    study = make_study(n_prompts=1)
    invite, secret = invites.create_invite(study=study, created_by=None)
    assert invites.open_invite(secret) == invite
    assert invites.open_invite(secret, now=invite.expires_at - timedelta(seconds=1)) == invite
    for now in (invite.expires_at, invite.expires_at + timedelta(days=1)):
        with pytest.raises(invites.InviteError) as caught:
            invites.open_invite(secret, now=now)
        assert str(caught.value) == invites.INVALID_INVITE
    study.status = "closed"
    study.save()
    with pytest.raises(invites.InviteError):
        invites.open_invite(secret)


def test_a_used_or_unknown_invite_does_not_open():
    study = make_study(n_prompts=1)
    _, secret = invites.create_invite(study=study, created_by=None)
    invites.accept_invite(secret, password=PASSWORD)
    for link in (secret, "no-such-secret"):
        with pytest.raises(invites.InviteError) as caught:
            invites.open_invite(link)
        assert str(caught.value) == invites.INVALID_INVITE


def test_an_invite_makes_a_readable_pseudonym():
    study = make_study(n_prompts=1)
    names = set()
    for _ in range(5):
        _, secret = invites.create_invite(study=study, created_by=None)
        names.add(invites.accept_invite(secret, password=PASSWORD).username)
    assert len(names) == 5
    for name in names:
        assert name.startswith("rater-") and len(name) == 14
        assert set(name[6:]) <= set(invites.PSEUDONYM_ALPHABET)


def test_the_invite_link_is_the_accept_page_of_its_secret():
    assert invites.invite_path("s3cr3t") == "/invite/s3cr3t/"


def test_only_the_secrets_sha256_is_stored():
    import hashlib

    study = make_study(n_prompts=1)
    _, secret = invites.create_invite(study=study, created_by=None)
    assert Invite.objects.get().secret_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert Invite.objects.get().expires_at > timezone.now() + timedelta(days=6)
