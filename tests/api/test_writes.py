"""The API's writes go through the builder's and the import page's services: studies created and
changed under the live-edit rules, status moves gated by the launch checklist, content imported
all or nothing, comparisons, guide versions, gold review, enrolments, invites, downloads; engine
state is never writable; CSRF and throttles hold for writes."""

import io

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import (
    Comparison,
    Enrolment,
    GoldAnswer,
    GuideVersion,
    ImportJob,
    Invite,
    Output,
    Prompt,
    Study,
    System,
    Unit,
)
from annotation.services.invites import secret_hash
from tests.api.conftest import token_client
from tests.factories import UserFactory, make_study

pytestmark = pytest.mark.django_db


def url(name, study, *args):
    return reverse(name, args=[study.token, *args])


def lead(world) -> APIClient:
    return token_client(world.lead)


def draft_study(world, **fields) -> Study:
    """A draft categorical study in workspace A with content but no units."""
    study = make_study(n_prompts=2, build=False, status=Study.Status.DRAFT, **fields)
    study.workspace = world.study.workspace
    study.save()
    return study


# --- studies ----------------------------------------------------------------------------------


def test_a_lead_creates_a_draft_study_with_the_kinds_default_scheme(world):
    body = {"workspace": world.study.workspace.slug, "name": "Helpfulness", "task_kind": "likert"}
    made = lead(world).post(reverse("api-studies"), body, format="json")
    assert made.status_code == 201, made.json()
    study = Study.objects.get(token=made.json()["token"])
    assert (study.status, study.created_by, study.workspace) == (
        "draft",
        world.lead,
        world.study.workspace,
    )
    assert len(study.label_scheme["points"]) == 5


def test_a_study_in_someone_elses_workspace_is_refused_like_a_missing_one(world):
    client = lead(world)
    answers = [
        client.post(
            reverse("api-studies"),
            {"workspace": slug, "name": "x", "task_kind": "likert"},
            format="json",
        )
        for slug in (world.other.workspace.slug, "no-such-workspace")
    ]
    assert [a.status_code for a in answers] == [400, 400]
    assert "you lead no workspace" in answers[0].json()["workspace"][0]
    assert not Study.objects.filter(name="x").exists()


def test_a_scheme_the_builder_would_refuse_is_a_400_naming_the_point(world):
    body = {
        "workspace": world.study.workspace.slug,
        "name": "Bad scale",
        "task_kind": "likert",
        "label_scheme": {"points": [{"value": 1, "text": "Bad"}, {"value": 1, "text": ""}]},
    }
    answer = lead(world).post(reverse("api-studies"), body, format="json")
    assert answer.status_code == 400
    assert any(m.startswith("points[1]") for m in answer.json()["label_scheme"])
    assert not Study.objects.filter(name="Bad scale").exists()


@pytest.mark.parametrize(
    "field,value",
    [
        ("status", "live"),
        ("token", "mine"),
        ("created_by", 1),
        ("open_slots", 99),
        ("shuffle_key", 1),
        ("workspace", "elsewhere"),
        ("qualification_attempts", 9),
    ],
)
def test_engine_state_and_identity_are_not_writable(world, field, value):
    study = world.study
    before = Study.objects.filter(pk=study.pk).values().get()
    answer = lead(world).patch(url("api-study", study), {field: value}, format="json")
    assert answer.status_code == 400 and field in answer.json()
    assert Study.objects.filter(pk=study.pk).values().get() == before


def test_a_live_studys_locked_setting_is_a_400_naming_it_and_why(world):
    client = lead(world)
    answer = client.patch(url("api-study", world.study), {"overlap": 5}, format="json")
    assert answer.status_code == 400
    assert "agreement and votes depend on it" in answer.json()["overlap"][0]
    world.study.refresh_from_db()
    assert world.study.overlap != 5


def test_a_live_study_takes_its_live_editable_settings_and_its_current_locked_values(world):
    study = world.study
    body = {"question": "Is it safe?", "overlap": study.overlap, "gold_rate": 0.0}
    answer = lead(world).patch(url("api-study", study), body, format="json")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["question"] == "Is it safe?"
    study.refresh_from_db()
    assert study.question == "Is it safe?"


def test_numbers_and_flags_must_be_json_numbers_and_booleans(world):
    client = lead(world)
    for body in ({"overlap": "5"}, {"requires_qualification": "yes"}, {"gold_rate": "0.1"}):
        assert client.patch(url("api-study", world.study), body, format="json").status_code == 400


def test_going_live_with_failed_checklist_items_lists_each_one_explained(world):
    study = draft_study(world)
    answer = lead(world).post(url("api-study-status", study), {"status": "live"}, format="json")
    assert answer.status_code == 400
    failed = {item["key"]: item for item in answer.json()["checklist"]}
    assert {"units", "guide", "annotators"} <= set(failed)
    assert "build the units" in failed["units"]["detail"]
    assert len(answer.json()["status"]) == len(failed)
    study.refresh_from_db()
    assert study.status == "draft"


def test_status_moves_along_the_allowed_transitions(world):
    client = lead(world)
    state = client.get(url("api-study-status", world.study)).json()
    assert state["status"] == "live" and set(state["moves"]) == {"paused", "closed"}
    assert "overlap" in state["locked"]
    paused = client.post(url("api-study-status", world.study), {"status": "paused"}, format="json")
    assert paused.status_code == 200 and paused.json()["status"] == "paused"
    back = client.post(url("api-study-status", world.study), {"status": "draft"}, format="json")
    assert back.status_code == 400 and "cannot become draft" in back.json()["status"][0]


# --- content through the import service --------------------------------------------------------


def test_systems_prompts_and_outputs_come_in_as_json_rows(world):
    study = draft_study(world)
    client = lead(world)
    systems = client.post(
        url("api-systems", study), {"rows": [{"name": "gamma"}]}, format="json"
    ).json()
    assert systems["status"] == "done" and systems["created"] == 1
    prompts = client.post(
        url("api-prompts", study), {"rows": [{"id": "q1", "text": "Why?"}]}, format="json"
    )
    assert prompts.status_code == 201
    rows = [
        {"prompt_id": "q1", "system": name, "text": f"{name} says"} for name in ("alpha", "gamma")
    ]
    outputs = client.post(url("api-outputs", study), {"rows": rows}, format="json")
    assert outputs.status_code == 201 and outputs.json()["created"] == 2
    assert Output.objects.filter(prompt__study=study, prompt__external_id="q1").count() == 2
    again = client.post(url("api-outputs", study), {"rows": rows}, format="json").json()
    assert (again["created"], again["unchanged"]) == (0, 2)


def test_one_bad_row_publishes_nothing_and_names_its_row_and_field(world):
    study = draft_study(world)
    rows = [
        {"prompt_id": "p0", "system": "alpha", "text": "fine"},
        {"prompt_id": "p0", "system": "nobody", "text": "who?"},
        {"prompt_id": "zz", "system": "beta", "text": "unknown prompt"},
    ]
    before = Output.objects.filter(prompt__study=study).count()
    answer = lead(world).post(url("api-outputs", study), {"rows": rows}, format="json")
    assert answer.status_code == 400
    body = answer.json()
    assert body["status"] == "failed" and "Nothing was published" in body["detail"]
    assert {(e["line"], e["field"]) for e in body["errors"]} >= {(2, "system"), (3, "prompt_id")}
    assert Output.objects.filter(prompt__study=study).count() == before


def test_an_uploaded_file_is_imported_by_a_worker_and_polled(
    world, settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.CONCORD_IMPORT_DIR = str(tmp_path)
    study = draft_study(world)
    upload = io.BytesIO(b"id,text\nu1,First\nu2,Second\n")
    upload.name = "prompts.csv"
    client = lead(world)
    with django_capture_on_commit_callbacks(execute=True):
        queued = client.post(url("api-imports", study), {"kind": "prompts", "file": upload})
    assert queued.status_code == 202, queued.json()
    token = queued.json()["token"]
    job = client.get(url("api-import", study, token)).json()
    assert (job["status"], job["created"], job["percent"]) == ("done", 2, 100)
    assert Prompt.objects.filter(study=study, external_id__in=["u1", "u2"]).count() == 2
    assert [j["token"] for j in client.get(url("api-imports", study)).json()["results"]] == [token]


def test_an_uploaded_file_with_a_bad_row_reports_line_field_and_reason(
    world, settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.CONCORD_IMPORT_DIR = str(tmp_path)
    study = draft_study(world)
    upload = io.BytesIO(b"id,text\nu1,First\nu1,Again\n")
    upload.name = "prompts.csv"
    client = lead(world)
    with django_capture_on_commit_callbacks(execute=True):
        token = client.post(url("api-imports", study), {"kind": "prompts", "file": upload}).json()[
            "token"
        ]
    job = client.get(url("api-import", study, token)).json()
    assert job["status"] == "failed"
    assert job["errors"][0]["line"] == 3 and job["errors"][0]["field"] == "id"
    assert "duplicate prompt id" in job["errors"][0]["reason"]
    assert not Prompt.objects.filter(study=study, external_id="u1").exists()


def test_an_uploaded_line_with_text_postgresql_cannot_store_is_a_bad_row(
    world, settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.CONCORD_IMPORT_DIR = str(tmp_path)
    study = draft_study(world)
    upload = io.BytesIO(
        b'{"id": "s1", "text": "half a pair \\ud800"}\n'
        b'{"id": "s2", "text": "fine", "metadata": {"k": "a\\u0000b"}}\n'
    )
    upload.name = "prompts.jsonl"
    client = lead(world)
    with django_capture_on_commit_callbacks(execute=True):
        token = client.post(url("api-imports", study), {"kind": "prompts", "file": upload}).json()[
            "token"
        ]
    job = client.get(url("api-import", study, token)).json()
    assert job["status"] == "failed"
    assert [(e["line"], e["field"]) for e in job["errors"]] == [(1, "text"), (2, "metadata")]
    assert not Prompt.objects.filter(study=study, external_id__in=["s1", "s2"]).exists()


def test_an_upload_needs_a_csv_or_jsonl_name(world, settings, tmp_path):
    settings.CONCORD_IMPORT_DIR = str(tmp_path)
    upload = io.BytesIO(b"name\nx\n")
    upload.name = "systems.xlsx"
    answer = lead(world).post(url("api-imports", world.study), {"kind": "systems", "file": upload})
    assert answer.status_code == 400 and ".csv or .jsonl" in answer.json()["file"][0]
    assert not ImportJob.objects.exists()


def test_another_studys_import_job_is_404(world):
    job = ImportJob.objects.create(study=world.other, kind="systems", format="csv", file_name="s")
    assert lead(world).get(url("api-import", world.study, job.token)).status_code == 404
    assert lead(world).get(url("api-import", world.other, job.token)).status_code == 404


def test_json_rows_with_nul_characters_are_refused_before_the_database(world):
    study = draft_study(world)
    rows = [{"id": "n1", "text": "ok", "metadata": {"k": "a\x00b"}}]
    answer = lead(world).post(url("api-prompts", study), {"rows": rows}, format="json")
    assert answer.status_code == 400
    assert not Prompt.objects.filter(study=study, external_id="n1").exists()


# --- gold, comparisons, guide ------------------------------------------------------------------


def test_gold_answers_come_in_through_the_import_and_are_reviewed_by_patch(world):
    study = world.study
    unit = Unit.objects.filter(study=study).order_by("id").first()
    client = lead(world)
    made = client.post(
        url("api-gold", study),
        {"rows": [{"unit": unit.external_id, "value": "safe", "rationale": "Plainly safe"}]},
        format="json",
    )
    assert made.status_code == 201, made.json()
    gold = GoldAnswer.objects.get(unit=unit)
    unit.refresh_from_db()
    assert unit.role == "gold" and gold.value == {"choice": "safe"}
    changed = client.patch(
        url("api-gold-answer", study, gold.pk), {"answer": "unsafe"}, format="json"
    )
    assert changed.status_code == 200, changed.json()
    gold.refresh_from_db()
    assert gold.value == {"choice": "unsafe"} and gold.author == world.lead
    wrong = client.patch(url("api-gold-answer", study, gold.pk), {"answer": "maybe"}, format="json")
    assert wrong.status_code == 400 and "answer" in wrong.json()


def test_a_gold_answer_of_another_study_is_404(world):
    unit = Unit.objects.filter(study=world.other).first()
    gold = GoldAnswer.objects.create(unit=unit, value={"choice": "safe"})
    client = lead(world)
    assert (
        client.patch(url("api-gold-answer", world.study, gold.pk), {}, format="json").status_code
        == 404
    )
    assert (
        client.get(url("api-gold-answer", world.study, "99999999999999999999")).status_code == 404
    )


def test_comparisons_are_replaced_through_the_builders_service(world):
    study = draft_study(world, task_kind="spa", systems=("a", "b", "c"))
    client = lead(world)
    body = {"comparisons": [{"system_x": "a", "system_y": "c", "expected": "x"}]}
    answer = client.put(url("api-comparisons", study), body, format="json")
    assert answer.status_code == 200, answer.json()
    assert list(
        Comparison.objects.filter(study=study).values_list("system_x__name", "system_y__name")
    ) == [("a", "c")]
    bad = {"comparisons": [{"system_x": "a", "system_y": "zz"}]}
    refused = client.put(url("api-comparisons", study), bad, format="json")
    assert refused.status_code == 400 and "row 1" in refused.json()["comparisons"][0]
    assert Comparison.objects.filter(study=study).count() == 1


def test_a_guide_version_is_published_with_its_rulings(world):
    client = lead(world)
    body = {
        "body": "# Guide\nLabel harm as unsafe.",
        "changes": "First version",
        "rulings": [{"title": "Sarcasm", "text": "Sarcasm alone is safe.", "examples": "p1"}],
    }
    answer = client.post(url("api-guide-versions", world.study), body, format="json")
    assert answer.status_code == 201, answer.json()
    version = GuideVersion.objects.get(study=world.study, number=answer.json()["number"])
    assert version.author == world.lead
    ruling = version.rulings_introduced.get()
    assert ruling.title == "Sarcasm" and ruling.examples.count() == 2
    rulings = client.get(url("api-rulings", world.study)).json()["results"]
    assert [r["title"] for r in rulings] == ["Sarcasm"]
    bad = {"body": "x", "rulings": [{"title": "T", "text": "t", "examples": "nope"}]}
    refused = client.post(url("api-guide-versions", world.study), bad, format="json")
    assert refused.status_code == 400 and "matches no item" in refused.json()["rulings[0]"][0]
    assert GuideVersion.objects.filter(study=world.study).count() == 1


# --- people ------------------------------------------------------------------------------------


def test_an_existing_account_is_enrolled_and_its_enrolment_changed(world):
    person = UserFactory(username="kim")
    client = lead(world)
    made = client.post(
        url("api-enrolments", world.study), {"username": "kim", "pool": "expert"}, format="json"
    )
    assert made.status_code == 201, made.json()
    enrolment = Enrolment.objects.get(study=world.study, user=person)
    changed = client.patch(
        url("api-enrolment", world.study, enrolment.pk), {"quota": 20}, format="json"
    )
    assert changed.status_code == 200 and changed.json()["quota"] == 20
    enrolment.refresh_from_db()
    assert (enrolment.pool, enrolment.quota) == ("expert", 20)
    twice = client.post(url("api-enrolments", world.study), {"username": "kim"}, format="json")
    assert twice.status_code == 400 and "already in this study" in twice.json()["username"][0]


def test_an_enrolments_engine_state_is_not_writable(world):
    enrolment = Enrolment.objects.get(study=world.study, user=world.annotator)
    before = Enrolment.objects.filter(pk=enrolment.pk).values().get()
    for field, value in (("queue_seed", 1), ("walk_cursor", 5), ("qualified_at", None)):
        answer = lead(world).patch(
            url("api-enrolment", world.study, enrolment.pk), {field: value}, format="json"
        )
        assert answer.status_code == 400 and field in answer.json()
    assert Enrolment.objects.filter(pk=enrolment.pk).values().get() == before


def test_an_invite_link_is_shown_once_and_withdrawn(world):
    client = lead(world)
    made = client.post(url("api-invites", world.study), {"note": "for Sam"}, format="json")
    assert made.status_code == 201, made.json()
    link = made.json()["link"]
    secret = link.rstrip("/").rsplit("/", 1)[1]
    invite = Invite.objects.get(secret_hash=secret_hash(secret))
    listed = client.get(url("api-invites", world.study)).json()["results"]
    assert secret not in str(listed) and listed[0]["state"] == "open"
    assert client.delete(url("api-invite", world.study, invite.pk)).status_code == 204
    invite.refresh_from_db()
    assert invite.revoked_at is not None


def test_another_studys_enrolment_and_invite_are_404_and_unchanged(world):
    from annotation.services.invites import create_invite

    theirs = Enrolment.objects.create(study=world.other, user=UserFactory(), quota=3)
    invite, _ = create_invite(study=world.other, created_by=world.other_lead)
    client = lead(world)
    for target in (world.study, world.other):
        changed = client.patch(url("api-enrolment", target, theirs.pk), {"quota": 9}, format="json")
        assert changed.status_code == 404
        assert client.delete(url("api-invite", target, invite.pk)).status_code == 404
    theirs.refresh_from_db()
    invite.refresh_from_db()
    assert theirs.quota == 3 and invite.revoked_at is None


# --- downloads ---------------------------------------------------------------------------------


def test_raw_labels_stream_as_csv_and_the_study_file_downloads(world):
    client = lead(world)
    answer = client.get(url("api-labels-export", world.study, "csv"))
    assert answer.status_code == 200 and answer.streaming
    text = b"".join(answer.streaming_content).decode()
    assert text.startswith("label_id,")
    browser = Client()
    browser.force_login(world.lead)
    page = browser.get(reverse("studio-export-labels", args=[world.study.token, "csv"]))
    assert b"".join(page.streaming_content).decode() == text  # the page's download, unchanged
    assert answer["Content-Disposition"].startswith("attachment;")
    assert client.get(url("api-labels-export", world.study, "xlsx")).status_code == 404
    assert client.get(url("api-labels-export", world.other, "csv")).status_code == 404
    study_file = client.get(url("api-study-file", world.study))
    assert study_file.status_code == 200 and study_file.json()["study"]["name"] == world.study.name


# --- CSRF and throttles ------------------------------------------------------------------------


def test_session_writes_need_the_csrf_token(world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.lead)
    refused = client.post(
        url("api-systems", world.study),
        {"rows": [{"name": "csrf"}]},
        content_type="application/json",
    )
    assert refused.status_code == 403 and "CSRF" in refused.json()["detail"]
    assert not System.objects.filter(name="csrf").exists()
    client.get(reverse("account-tokens"))  # sets the csrftoken cookie
    accepted = client.post(
        url("api-systems", world.study),
        {"rows": [{"name": "csrf"}]},
        content_type="application/json",
        headers={"X-CSRFToken": client.cookies["csrftoken"].value},
    )
    assert accepted.status_code == 201


def test_writes_are_throttled(settings, world):
    settings.CONCORD_API_THROTTLE_RATES = {**settings.CONCORD_API_THROTTLE_RATES, "writes": "2/min"}
    client = lead(world)
    codes = [
        client.patch(
            url("api-study", world.study), {"question": f"q{i}"}, format="json"
        ).status_code
        for i in range(3)
    ]
    assert codes == [200, 200, 429]
    world.study.refresh_from_db()
    assert world.study.question == "q1"


def test_options_on_a_write_route_describes_it_without_reading_an_object(world):
    answer = lead(world).options(url("api-comparisons", world.study))
    assert answer.status_code == 200 and "actions" not in answer.json()


def test_a_body_over_the_upload_limit_is_a_json_400_pointing_at_the_file_upload(world, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    rows = [{"name": f"system {i}", "description": "x" * 100} for i in range(20)]
    answer = lead(world).post(url("api-systems", world.study), {"rows": rows}, format="json")
    assert answer.status_code == 400 and answer["Content-Type"] == "application/json"
    assert "upload a file" in answer.json()["detail"]
    assert not System.objects.filter(name="system 0").exists()
