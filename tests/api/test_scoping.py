"""Scope: lists hold only what the caller may reach; nested routes check their parent first;
a foreign object answers 404, the same as one that does not exist."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Label
from annotation.services.assignment import next_assignment
from annotation.services.submission import submit_label
from tests.api.conftest import token_client

pytestmark = pytest.mark.django_db

STUDY_CHILDREN = [
    "api-study",
    "api-study-status",
    "api-systems",
    "api-prompts",
    "api-outputs",
    "api-units",
    "api-gold",
    "api-comparisons",
    "api-guide-versions",
    "api-rulings",
    "api-enrolments",
    "api-invites",
    "api-imports",
    "api-labels",
    "api-study-file",
    "api-report",
    "api-report-tables",
    "api-aggregated-labels",
]


@pytest.mark.parametrize("name", STUDY_CHILDREN)
def test_study_routes_answer_the_lead_and_staff_and_404_everyone_else(world, name):
    url = reverse(name, args=[world.study.token])
    assert token_client(world.lead).get(url).status_code == 200
    assert token_client(world.staff).get(url).status_code == 200
    # A lead of another workspace, and an annotator of this very study: not theirs to read.
    assert token_client(world.other_lead).get(url).status_code == 404
    assert token_client(world.annotator).get(url).status_code == 404
    assert APIClient().get(url).status_code == 401
    # An unknown study is indistinguishable from a foreign one.
    assert token_client(world.lead).get(reverse(name, args=["nope"])).status_code == 404


def test_study_list_holds_only_the_callers_studies(world):
    def tokens(user):
        return {
            s["token"] for s in token_client(user).get(reverse("api-studies")).json()["results"]
        }

    assert tokens(world.lead) == {world.study.token}
    assert tokens(world.other_lead) == {world.other.token}
    assert tokens(world.annotator) == set()
    assert {world.study.token, world.other.token} <= tokens(world.staff)


def test_workspaces_and_memberships_are_the_leads_own(world):
    slug, other_slug = world.study.workspace.slug, world.other.workspace.slug
    lead = token_client(world.lead)
    listed = [w["slug"] for w in lead.get(reverse("api-workspaces")).json()["results"]]
    assert listed == [slug]
    members = lead.get(reverse("api-memberships", args=[slug])).json()["results"]
    assert {(m["username"], m["role"]) for m in members} == {
        (world.lead.username, "lead"),
        (world.annotator.username, "annotator"),
    }
    assert lead.get(reverse("api-workspace", args=[other_slug])).status_code == 404
    assert lead.get(reverse("api-memberships", args=[other_slug])).status_code == 404
    annotator = token_client(world.annotator)
    assert annotator.get(reverse("api-workspaces")).json()["results"] == []
    assert annotator.get(reverse("api-memberships", args=[slug])).status_code == 404


def test_labels_are_read_with_their_context_and_filtered(world):
    study, person = world.study, world.annotator
    tokens = []
    for choice in ("safe", "unsafe"):
        a = next_assignment(person, study)
        tokens.append(a.token)
        submit_label(
            annotator=person,
            assignment_token=a.token,
            data={"choice": choice},
            idempotency_key=f"00000000-0000-4000-8000-00000000000{len(tokens)}",
            timings={"duration_ms": 1200},
        )
    lead = token_client(world.lead)
    url = reverse("api-labels", args=[study.token])
    rows = lead.get(url).json()["results"]
    assert [r["assignment"] for r in rows] == tokens
    assert [r["choice"] for r in rows] == ["safe", "unsafe"]
    assert rows[0]["annotator"] == person.username and rows[0]["duration_ms"] == 1200
    assert rows[0]["purpose"] == "production"
    newest = lead.get(url, {"ordering": "-id"}).json()["results"]
    assert [r["assignment"] for r in newest] == tokens[::-1]
    one_unit = Label.objects.filter(study=study).first().unit.token
    only = lead.get(url, {"unit": one_unit}).json()["results"]
    assert [r["unit"] for r in only] == [one_unit]
    assert lead.get(url, {"annotator": "someone-else"}).json()["results"] == []
    # Labels of another workspace's study never appear, whatever the filter.
    assert token_client(world.other_lead).get(url).status_code == 404


def test_relation_paths_and_unknown_orderings_from_the_query_string_are_ignored(world):
    lead = token_client(world.lead)
    url = reverse("api-outputs", args=[world.study.token])
    everything = lead.get(url).json()["results"]
    # Not declared filters: ignored, so they can neither widen nor probe the scope.
    probe = lead.get(url, {"prompt__study__workspace__slug": world.other.workspace.slug})
    assert probe.json()["results"] == everything
    assert lead.get(url, {"ordering": "prompt__study__name"}).json()["results"] == everything


def test_an_invalid_filter_value_is_400_naming_the_field(world):
    url = reverse("api-labels", args=[world.study.token])
    response = token_client(world.lead).get(url, {"purpose": "bogus"})
    assert response.status_code == 400 and "purpose" in response.json()


def test_large_lists_page_by_cursor(world):
    lead = token_client(world.lead)
    url = reverse("api-outputs", args=[world.study.token])
    seen, page = [], lead.get(url, {"page_size": 3}).json()
    while True:
        seen += [o["id"] for o in page["results"]]
        if not page["next"]:
            break
        page = lead.get(page["next"]).json()
    assert len(seen) == 8 and seen == sorted(seen) and len(set(seen)) == 8


def test_units_never_show_shuffle_keys_and_outputs_are_canonical(world):
    rows = token_client(world.lead).get(reverse("api-units", args=[world.study.token])).json()
    unit = rows["results"][0]
    assert set(unit) == {"token", "kind", "role", "prompt", "outputs", "overlap", "open_slots"}
    assert len(unit["outputs"]) == 1


def test_time_filters_take_any_offset_python_parses(world):
    # Found by schemathesis: an offset of -22:15 parses in Python but PostgreSQL refuses it.
    url = reverse("api-labels", args=[world.study.token])
    lead = token_client(world.lead)
    response = lead.get(url, {"created_before": "2278-04-07T07:02:45-22:15"})
    assert response.status_code == 200
    assert lead.get(url, {"created_after": "2278-04-07T07:02:45-22:15"}).json()["results"] == []


def test_text_filters_refuse_nul_characters(world):
    url = reverse("api-labels", args=[world.study.token])
    response = token_client(world.lead).get(url, {"annotator": "a\x00b"})
    assert response.status_code == 400 and "annotator" in response.json()


@pytest.mark.parametrize(
    "query", [{"page": ""}, {"page": "x"}, {"page_size": "0"}, {"page_size": ""}]
)
def test_malformed_paging_is_400_naming_the_parameter(world, query):
    response = token_client(world.lead).get(reverse("api-studies"), query)
    assert response.status_code == 400 and set(query) <= set(response.json())
