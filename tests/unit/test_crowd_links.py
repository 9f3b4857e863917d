"""A crowd study link's parameters as the entry page reads them: which ids it needs, the message
a bad link shows, what is kept with the session, and the worker's pseudonymous username.

Added after the mutation run of annotation/services/crowd.py (bench/MUTATION.md).
"""

import hashlib

import pytest

from annotation.services.crowd import CrowdEntryError, crowd_username, read_parameters
from tests.factories import StudyFactory

pytestmark = pytest.mark.django_db

PROLIFIC = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "6a6a", "SESSION_ID": "ab12"}
MTURK = {"workerId": "A1B2C3", "assignmentId": "3XYZ", "hitId": "H1"}


def study(platform):
    return StudyFactory(crowd_platform=platform)


def refusal(platform, query):
    with pytest.raises(CrowdEntryError) as error:
        read_parameters(study(platform), query)
    return str(error.value)


def test_a_prolific_link_gives_the_worker_and_keeps_the_study_and_session_ids():
    assert read_parameters(study("prolific"), PROLIFIC) == (
        "5f1a2b3c4d5e6f7a8b9c0d1e",
        {"STUDY_ID": "6a6a", "SESSION_ID": "ab12"},
    )
    # STUDY_ID may be missing; it is kept as empty
    without = {k: v for k, v in PROLIFIC.items() if k != "STUDY_ID"}
    assert read_parameters(study("prolific"), without)[1] == {"STUDY_ID": "", "SESSION_ID": "ab12"}


def test_an_mturk_link_gives_the_worker_and_keeps_the_assignment_and_hit_ids():
    assert read_parameters(study("mturk"), MTURK) == (
        "A1B2C3",
        {"assignmentId": "3XYZ", "hitId": "H1"},
    )
    assert read_parameters(study("mturk"), {**MTURK, "hitId": ""})[1]["hitId"] == ""


@pytest.mark.parametrize(
    ("platform", "query", "message"),
    [
        ("prolific", {}, "The link is missing PROLIFIC_PID."),
        ("prolific", {**PROLIFIC, "PROLIFIC_PID": "a b"}, "PROLIFIC_PID is not a valid id."),
        ("prolific", {**PROLIFIC, "STUDY_ID": "<x>"}, "STUDY_ID is not a valid id."),
        ("prolific", {**PROLIFIC, "SESSION_ID": "a/b"}, "SESSION_ID is not a valid id."),
        ("prolific", {**PROLIFIC, "SESSION_ID": ""}, "The link is missing SESSION_ID."),
        ("mturk", {"assignmentId": "3XYZ"}, "The link is missing workerId."),
        ("mturk", {**MTURK, "hitId": "h;1"}, "hitId is not a valid id."),
        ("mturk", {**MTURK, "assignmentId": ""}, "The link is missing assignmentId."),
    ],
)
def test_a_bad_link_says_which_parameter_is_wrong(platform, query, message):
    assert refusal(platform, query) == message


def test_ids_of_64_letters_digits_dashes_and_underscores_are_valid_and_65_are_not():
    worker = "aZ0_-" + "x" * 59
    assert read_parameters(study("mturk"), {**MTURK, "workerId": worker})[0] == worker
    assert refusal("mturk", {**MTURK, "workerId": worker + "x"}) == "workerId is not a valid id."


def test_the_username_is_a_hash_of_platform_and_worker_id():
    digest = hashlib.sha256(b"prolific:W1").hexdigest()[:24]
    assert crowd_username("prolific", "W1") == f"crowd-prolific-{digest}"
    assert crowd_username("mturk", "W1") != crowd_username("prolific", "W1").replace(
        "prolific", "mturk"
    )
