"""The timings and the exposure record stored with a label, as the admin's timing signals and
audits read them: a plausible value is stored exactly, a missing one as its default, and a bad one
is refused with a message naming its field and nothing stored (the task stays leased).

Added after the mutation run of annotation/services/submission.py's `clean_timings` and
`exposure_record` (bench/MUTATION.md), where each of these could change unnoticed.
"""

import json
import uuid
from datetime import datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Assignment, Label, Study
from annotation.schemes import AnswerError
from annotation.services import assignment as engine
from annotation.services.submission import TIMING_SLACK, clean_timings, submit_label
from tests.factories import enrol, make_study

pytestmark = pytest.mark.django_db

WHOLE = "must be a whole number of milliseconds"
ISO = "must be an ISO 8601 date and time"
SHAPE = 'must be {"outputs": {display index: {"ms", "seen"}}}'


def next_task(client, study) -> Assignment:
    client.force_login(enrol(study).user)
    token = client.get(reverse("api-work-next", args=[study.token])).json()["token"]
    return Assignment.objects.get(token=token)


def post(client, study, a, body):
    return client.post(
        reverse("api-work-submit", args=[study.token, a.token]),
        data=json.dumps(body),
        content_type="application/json",
        headers={"Idempotency-Key": str(uuid.uuid4())},
    )


def refusal(response, a) -> tuple[str, str]:
    """The field and message of a 400, after checking that nothing was written."""
    assert response.status_code == 400, response.content[:300]
    assert not Label.objects.exists()
    assert Assignment.objects.get(pk=a.pk).status == Assignment.Status.LEASED
    body = response.json()
    return body["field"], body["message"]


def spa_study():
    return make_study(Study.TaskKind.SPA, n_prompts=4, systems=("a", "b"), spa_exposure_m=2)


def spa_answers(a) -> dict:
    return {f"p_{i}": "60" for i in range(len(a.presentation["questions"]))}


@pytest.fixture
def clock(monkeypatch):
    """The server's clock, set by the test (`clock.now = ...`); real time until then."""

    class Clock:
        now = None

    c = Clock()
    real = timezone.now
    monkeypatch.setattr(timezone, "now", lambda: c.now or real())
    return c


def test_the_label_returned_is_the_label_stored():
    study = make_study(Study.TaskKind.LIKERT, n_prompts=2)
    user = enrol(study).user
    a = engine.next_assignment(user, study)
    key = uuid.uuid4()
    result = submit_label(
        annotator=user, assignment_token=a.token, data={"score": "4"}, idempotency_key=key
    )
    assert (result.status, result.message) == ("stored", "Saved.")
    stored = Label.objects.get()
    returned = result.label
    assert (stored.score, stored.idempotency_key, stored.assignment_id) == (4.0, key, a.id)
    assert (returned.id, returned.score, returned.idempotency_key) == (stored.id, 4.0, key)
    assert returned.created_at == stored.created_at == stored.assignment.closed_at
    assert (returned.assignment.id, returned.assignment.token) == (a.id, a.token)
    assert returned.assignment.annotator_id == user.id
    assert returned.assignment.status == Assignment.Status.SUBMITTED


def test_timings_that_are_no_object_are_refused_on_timings():
    study = make_study(n_prompts=2)
    user = enrol(study).user
    a = engine.next_assignment(user, study)
    with pytest.raises(AnswerError) as refused:
        submit_label(
            annotator=user,
            assignment_token=a.token,
            data={"choice": "safe"},
            idempotency_key=uuid.uuid4(),
            timings=[1500],
        )
    assert (refused.value.field, refused.value.message) == ("timings", "must be an object")
    assert not Label.objects.exists()


@pytest.mark.parametrize("timings", [[1500], "1500", 1500])
def test_timings_that_are_no_object_are_refused_on_timings_through_the_api(client, timings):
    study = make_study(n_prompts=2)
    a = next_task(client, study)
    response = post(client, study, a, {"choice": "safe", "timings": timings})
    assert refusal(response, a) == ("timings", "must be an object")


def test_a_timing_of_another_name_is_refused_on_its_first_40_characters_with_the_known_ones(
    client,
):
    study = make_study(n_prompts=2)
    a = next_task(client, study)
    name = "keystrokes_per_minute_while_answering_this_task"
    response = post(client, study, a, {"choice": "safe", "timings": {name: 3}})
    assert refusal(response, a) == (
        f"timings.{name[:40]}",
        "is not a timing (known: rendered_at, duration_ms, active_ms, exposure)",
    )


# 64 characters the date pattern would accept (whitespace before the zone): too long to parse.
LONG_DATE = "2026-12-02T16:00:00.123456" + " " * 32 + "+00:00"


@pytest.mark.parametrize(
    "timings, field, message",
    [
        ({"duration_ms": "1.5 s"}, "duration_ms", WHOLE),
        ({"duration_ms": [1500]}, "duration_ms", WHOLE),
        ({"duration_ms": None, "active_ms": {"ms": 1}}, "active_ms", WHOLE),
        ({"duration_ms": 1.5}, "duration_ms", WHOLE),
        ({"duration_ms": "NaN"}, "duration_ms", WHOLE),
        ({"duration_ms": -5}, "duration_ms", None),
        ({"rendered_at": "yesterday"}, "rendered_at", ISO),
        ({"rendered_at": 1764691200}, "rendered_at", ISO),
        ({"rendered_at": "2026-13-45T10:00:00"}, "rendered_at", ISO),
        ({"rendered_at": LONG_DATE}, "rendered_at", ISO),
        (
            {"rendered_at": "1999-01-01T00:00:00+00:00"},
            "rendered_at",
            "is not within this task's lease",
        ),
    ],
)
def test_a_bad_timing_is_refused_naming_it_and_saying_what_it_must_be(
    client, timings, field, message
):
    study = make_study(n_prompts=2)
    a = next_task(client, study)
    got = refusal(post(client, study, a, {"choice": "safe", "timings": timings}), a)
    assert got[0] == f"timings.{field}"
    if message is None:  # out of range: the bound is the time since the lease began
        assert got[1].startswith("-5 is outside 0 to ") and got[1].endswith(" for this task")
    else:
        assert got[1] == message


def test_a_render_time_without_a_zone_is_read_in_the_servers_zone(client):
    study = make_study(n_prompts=2)
    a = next_task(client, study)
    naive = timezone.localtime(a.leased_at).replace(tzinfo=None, microsecond=0)
    body = {"choice": "safe", "timings": {"rendered_at": naive.isoformat()}}
    assert post(client, study, a, body).status_code == 200
    assert Label.objects.get().rendered_at == timezone.make_aware(naive)


def test_the_render_time_may_be_off_by_the_slack_either_side_of_the_lease_and_no_more(clock):
    study = make_study(n_prompts=3)
    user = enrol(study).user

    def submit(rendered_at):
        a = engine.next_assignment(user, study)
        clock.now = a.leased_at + timedelta(minutes=30)  # the answer, half an hour later
        result = submit_label(
            annotator=user,
            assignment_token=a.token,
            data={"choice": "safe"},
            idempotency_key=uuid.uuid4(),
            timings={"rendered_at": rendered_at(a).isoformat()},
        )
        return a, result.label

    a, first = submit(lambda a: a.leased_at - TIMING_SLACK)
    assert first.rendered_at == a.leased_at - TIMING_SLACK
    clock.now = None
    _, last = submit(lambda a: clock.now + TIMING_SLACK)
    assert last.rendered_at == last.created_at + TIMING_SLACK
    clock.now = None
    with pytest.raises(AnswerError) as refused:
        submit(lambda a: clock.now + TIMING_SLACK + timedelta(microseconds=1))
    assert refused.value.field == "timings.rendered_at"


def test_a_duration_may_be_the_time_since_the_lease_began_plus_the_slack_and_no_more(clock):
    study = make_study(n_prompts=2)
    user = enrol(study).user
    a = engine.next_assignment(user, study)
    clock.now = a.leased_at + timedelta(hours=1)
    longest = 65 * 60 * 1000

    def submit(timings):
        return submit_label(
            annotator=user,
            assignment_token=a.token,
            data={"choice": "safe"},
            idempotency_key=uuid.uuid4(),
            timings=timings,
        )

    for timings in ({"duration_ms": longest + 1}, {"active_ms": longest + 1}):
        with pytest.raises(AnswerError) as refused:
            submit(timings)
        name = next(iter(timings))
        assert (refused.value.field, refused.value.message) == (
            f"timings.{name}",
            f"{longest + 1} is outside 0 to {longest} for this task",
        )
    assert not Label.objects.exists()
    label = submit({"duration_ms": longest, "active_ms": longest}).label
    assert (label.duration_ms, label.active_ms) == (longest, longest)


def test_an_active_time_without_a_duration_is_stored(client):
    study = make_study(n_prompts=2)
    a = next_task(client, study)
    assert (
        post(client, study, a, {"choice": "safe", "timings": {"active_ms": 900}}).status_code == 200
    )
    label = Label.objects.get()
    assert (label.duration_ms, label.active_ms) == (None, 900)


def test_a_naive_clock_and_lease_are_read_in_the_servers_zone():
    # The service passes an aware clock; a lease set by hand (demo simulation) may have no zone.
    leased = datetime(2026, 12, 2, 16, 0)
    lease = Assignment(leased_at=leased, presentation={})
    timings = {"rendered_at": "2026-12-02T16:04:00+00:00", "duration_ms": 240_000}
    assert clean_timings(timings, lease, leased + timedelta(minutes=4)) == {
        "rendered_at": timezone.make_aware(datetime(2026, 12, 2, 16, 4)),
        "duration_ms": 240_000,
    }


def test_an_spa_answer_without_a_measure_records_every_output_shown_as_not_measured(client):
    study = spa_study()
    a = next_task(client, study)
    assert post(client, study, a, spa_answers(a)).status_code == 200
    assert Label.objects.get().exposure == {
        "measured": False,
        "outputs": [{"output": o, "position": j} for j, o in enumerate(a.presentation["outputs"])],
    }


def test_a_measured_exposure_is_stored_per_output_shown_with_defaults_for_what_is_missing(
    client,
):
    study = spa_study()
    a = next_task(client, study)
    shown = a.presentation["outputs"]
    assert len(shown) == 4
    # 0 fully measured and seen, 1 only its time, 2 only seen, 3 not in the measure at all
    measured = {"0": {"ms": 1200, "seen": True}, "1": {"ms": 300}, "2": {"seen": True}}
    body = {**spa_answers(a), "timings": {"duration_ms": 5000, "exposure": {"outputs": measured}}}
    assert post(client, study, a, body).status_code == 200
    assert Label.objects.get().exposure == {
        "measured": True,
        "outputs": [
            {"output": shown[0], "position": 0, "visible_ms": 1200, "seen": True},
            {"output": shown[1], "position": 1, "visible_ms": 300, "seen": False},
            {"output": shown[2], "position": 2, "visible_ms": 0, "seen": True},
            {"output": shown[3], "position": 3, "visible_ms": 0, "seen": False},
        ],
    }


def test_an_outputs_visible_time_is_at_most_the_duration_or_without_one_the_lease(client):
    study = spa_study()
    a = next_task(client, study)
    exposure = {"outputs": {"0": {"ms": 1001}}}
    timings = {"duration_ms": 1000, "exposure": exposure}
    response = post(client, study, a, {**spa_answers(a), "timings": timings})
    assert refusal(response, a) == ("timings.exposure", "1001 is outside 0 to 1000 for this task")
    response = post(client, study, a, {**spa_answers(a), "timings": {"exposure": exposure}})
    assert response.status_code == 200
    assert Label.objects.get().exposure["outputs"][0]["visible_ms"] == 1001


@pytest.mark.parametrize(
    "exposure, message",
    [
        ([], SHAPE),
        ({"outputs": {}, "hidden": {}}, SHAPE),
        ({"outputs": [{"ms": 1}]}, SHAPE),
        ({"outputs": {"4": {"ms": 1}}}, "has an entry for an output not shown (0-3)"),
        ({"outputs": {"0": 5}}, 'entry 0 must be {"ms": ..., "seen": ...}'),
        ({"outputs": {"1": {"ms": 1, "scrolled": 2}}}, 'entry 1 must be {"ms": ..., "seen": ...}'),
        ({"outputs": {"2": {"seen": "yes"}}}, "entry 2: seen must be true or false"),
        ({"outputs": {"3": {"ms": "long"}}}, WHOLE),
    ],
)
def test_a_bad_exposure_is_refused_on_exposure_saying_what_it_must_be(client, exposure, message):
    study = spa_study()
    a = next_task(client, study)
    assert len(a.presentation["outputs"]) == 4
    body = {**spa_answers(a), "timings": {"duration_ms": 5000, "exposure": exposure}}
    assert refusal(post(client, study, a, body), a) == ("timings.exposure", message)


def test_an_exposure_of_a_task_that_is_no_spa_batch_is_refused(client):
    study = make_study(n_prompts=2)
    a = next_task(client, study)
    body = {"choice": "safe", "timings": {"exposure": {"outputs": {}}}}
    assert refusal(post(client, study, a, body), a) == (
        "timings.exposure",
        "only SPA batches report exposure",
    )
