"""People: invite links (single-use, expiring, pseudonymous), existing users, pools, quotas,
removal and deactivation, the crowd link; every page scoped to the lead's workspace."""

import threading
import uuid
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from annotation.models import Assignment, Enrolment, Invite, Membership
from annotation.services import invites
from annotation.services.assignment import next_assignment
from annotation.services.submission import submit_label
from tests.factories import MembershipFactory, UserFactory, enrol, make_study

pytestmark = pytest.mark.django_db
PASSWORD = "a-long-enough-passphrase-7"


@pytest.fixture
def study():
    return make_study(n_prompts=3)


def make_invite(study, **kwargs):
    return invites.create_invite(study=study, created_by=None, **kwargs)


def test_an_invite_creates_a_pseudonymous_annotator_enrolled_with_its_pool_and_quota(study):
    invite, secret = make_invite(study, pool="expert", quota=7)
    user = invites.accept_invite(secret, password=PASSWORD)
    assert user.username.startswith("rater-") and len(user.username) == 14
    assert user.check_password(PASSWORD) and not user.is_staff
    enrolment = Enrolment.objects.get(user=user)
    assert (enrolment.study, enrolment.pool, enrolment.quota) == (study, "expert", 7)
    assert Membership.objects.get(user=user).role == "annotator"
    invite.refresh_from_db()
    assert invite.used_by == user


def test_only_a_hash_of_the_secret_is_stored(study):
    invite, secret = make_invite(study)
    assert secret not in invite.secret_hash
    assert not Invite.objects.filter(secret_hash=secret).exists()


def test_an_invite_works_once(study):
    _, secret = make_invite(study)
    invites.accept_invite(secret, password=PASSWORD)
    with pytest.raises(invites.InviteError):
        invites.accept_invite(secret, password=PASSWORD)
    assert get_user_model().objects.filter(username__startswith="rater-").count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_simultaneous_uses_of_one_invite_make_one_account():
    study = make_study(n_prompts=1)
    _, secret = make_invite(study)
    barrier = threading.Barrier(2)
    outcomes = []

    def use():
        barrier.wait()
        try:
            invites.accept_invite(secret, password=PASSWORD)
            outcomes.append("ok")
        except invites.InviteError:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=use) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["ok", "refused"]
    assert Enrolment.objects.filter(study=study).count() == 1


def test_an_expired_or_withdrawn_invite_is_refused_and_creates_nothing(study):
    expired, secret_a = make_invite(study)
    Invite.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    withdrawn, secret_b = make_invite(study)
    invites.revoke_invite(withdrawn)
    for secret in (secret_a, secret_b, "made-up-secret"):
        with pytest.raises(invites.InviteError) as caught:
            invites.accept_invite(secret, password=PASSWORD)
        assert str(caught.value) == invites.INVALID_INVITE  # one message: nothing to probe
    assert not Enrolment.objects.filter(study=study).exists()


def test_a_weak_password_is_a_field_error_and_keeps_the_invite_open(study):
    invite, secret = make_invite(study)
    with pytest.raises(ValidationError) as caught:
        invites.accept_invite(secret, password="123")
    assert "password" in caught.value.message_dict
    invite.refresh_from_db()
    assert invite.used_at is None
    assert not Enrolment.objects.filter(study=study).exists()


def test_invites_respect_the_studys_allowed_pools_and_quota_rules(study):
    study.allowed_pools = ["expert"]
    study.save()
    with pytest.raises(ValidationError) as caught:
        make_invite(study, pool="open_crowd", quota=0)
    assert {"pool", "quota"} <= set(caught.value.message_dict)


def test_an_existing_user_is_added_by_username_once(study):
    user = UserFactory(username="maria")
    enrolment = invites.add_existing_user(study=study, username="maria", pool="target_user")
    assert enrolment.user == user and enrolment.pool == "target_user"
    with pytest.raises(ValidationError) as caught:
        invites.add_existing_user(study=study, username="maria")
    assert "already in this study" in caught.value.message_dict["username"][0]
    with pytest.raises(ValidationError) as caught:
        invites.add_existing_user(study=study, username="nobody")
    assert "no active account" in caught.value.message_dict["username"][0]


def test_a_per_annotator_quota_stops_their_work(study):
    user = invites.add_existing_user(study=study, username=UserFactory().username, quota=1).user
    first = next_assignment(user, study)
    submit_label(
        annotator=user,
        assignment_token=first.token,
        data={"choice": "safe"},
        idempotency_key=uuid.uuid4(),
        timings={},
    )
    assert next_assignment(user, study) is None


# --- pages ------------------------------------------------------------------------------------


@pytest.fixture
def lead(client, study):
    user = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    client.force_login(user)
    return user


def test_the_people_page_makes_an_invite_link_shown_once(client, lead, study):
    response = client.post(
        reverse("studio-invite", args=[study.token]),
        {"pool": "trained", "quota": "", "note": "for Ana", "valid_days": "3"},
    )
    page = response.content.decode()
    assert response.status_code == 200
    link = page.split('id="new-link" class="copy-field" type="text" readonly value="')[1].split(
        '"'
    )[0]
    assert link.startswith("http://testserver/invite/")
    again = client.get(reverse("studio-people", args=[study.token])).content.decode()
    assert link not in again and "for Ana" in again

    client.logout()
    form = client.get(link)
    assert form.status_code == 200 and study.name in form.content.decode()
    done = client.post(link, {"password": PASSWORD, "password_again": PASSWORD}, follow=True)
    assert "Your sign-in name is rater-" in done.content.decode()
    assert client.get(link).status_code == 404


def test_a_signed_in_person_opening_an_invite_is_not_switched(client, lead, study):
    _, secret = make_invite(study)
    page = client.post(
        reverse("invite-accept", args=[secret]),
        {"password": PASSWORD, "password_again": PASSWORD},
    )
    assert "sign out first" in page.content.decode()
    assert not Enrolment.objects.filter(study=study).exists()


def test_the_people_page_adds_by_username_and_names_bad_values(client, lead, study):
    UserFactory(username="tom")
    client.post(reverse("studio-people", args=[study.token]), {"username": "tom", "pool": "expert"})
    assert Enrolment.objects.get(study=study, user__username="tom").pool == "expert"
    page = client.post(
        reverse("studio-people", args=[study.token]), {"username": "ghost", "pool": "expert"}
    ).content.decode()
    assert "no active account is named &#x27;ghost&#x27;" in page


def test_pool_and_quota_are_set_per_enrolment(client, lead, study):
    e = enrol(study)
    client.post(
        reverse("studio-enrolment", args=[study.token, e.pk]), {"pool": "expert", "quota": "4"}
    )
    e.refresh_from_db()
    assert (e.pool, e.quota) == ("expert", 4)


def test_remove_releases_the_open_lease_and_keeps_labels(client, lead, study):
    user = UserFactory()
    MembershipFactory(workspace=study.workspace, user=user, role="annotator")
    e = enrol(study, user)
    lease = next_assignment(user, study)
    slots = lease.unit.open_slots
    client.post(reverse("studio-remove", args=[study.token, e.pk]))
    lease.refresh_from_db()
    lease.unit.refresh_from_db()
    assert lease.status == Assignment.Status.EXPIRED
    assert lease.unit.open_slots == slots + 1
    assert not Membership.objects.filter(user=user, workspace=study.workspace).exists()


def test_deactivate_is_refused_for_someone_who_works_in_another_workspace(client, lead, study):
    user = UserFactory()
    MembershipFactory(workspace=study.workspace, user=user, role="annotator")
    MembershipFactory(user=user, role="annotator")  # another workspace
    e = enrol(study, user)
    client.post(reverse("studio-remove", args=[study.token, e.pk]), {"deactivate": "1"})
    user.refresh_from_db()
    assert user.is_active


def test_deactivate_closes_an_account_that_works_only_here(client, lead, study):
    user = UserFactory()
    MembershipFactory(workspace=study.workspace, user=user, role="annotator")
    e = enrol(study, user)
    client.post(reverse("studio-remove", args=[study.token, e.pk]), {"deactivate": "1"})
    user.refresh_from_db()
    assert not user.is_active


def test_the_crowd_link_is_ready_to_paste(client, lead, study):
    study.crowd_platform = "prolific"
    study.crowd_completion_code = "C0DE"
    study.save()
    page = client.get(reverse("studio-people", args=[study.token])).content.decode()
    assert (
        f"http://testserver/c/{study.token}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
        "&amp;STUDY_ID={{%STUDY_ID%}}&amp;SESSION_ID={{%SESSION_ID%}}"
    ) in page


PEOPLE_ROUTES = [
    ("studio-people", "get", {}),
    ("studio-people", "post", {"username": "x", "pool": "trained"}),
    ("studio-invite", "post", {"pool": "trained", "valid_days": "7"}),
]


@pytest.mark.parametrize("name,method,data", PEOPLE_ROUTES)
def test_a_lead_of_another_workspace_gets_404_on_people_pages(client, study, name, method, data):
    client.force_login(MembershipFactory(role=Membership.Role.LEAD).user)
    response = getattr(client, method)(reverse(name, args=[study.token]), data)
    assert response.status_code == 404
    assert not Invite.objects.exists()


def test_a_lead_of_another_workspace_gets_404_on_enrolment_writes(client, study):
    e = enrol(study)
    invite, _ = make_invite(study)
    client.force_login(MembershipFactory(role=Membership.Role.LEAD).user)
    for name, args, data in (
        ("studio-enrolment", [study.token, e.pk], {"pool": "expert"}),
        ("studio-remove", [study.token, e.pk], {"deactivate": "1"}),
        ("studio-revoke-invite", [study.token, invite.pk], {}),
    ):
        assert client.post(reverse(name, args=args), data).status_code == 404
    e.refresh_from_db()
    e.user.refresh_from_db()
    invite.refresh_from_db()
    assert e.pool == "trained" and e.user.is_active and invite.revoked_at is None
