"""The import service: content in from CSV and JSON Lines, all or nothing, idempotent."""

import pytest

from annotation.models import Comparison, GoldAnswer, ImportJob, ImportRow, Output, Prompt, System
from annotation.services import setup
from tests.factories import StudyFactory
from tests.imports.helpers import csv_bytes, jsonl_bytes, load_content, run

pytestmark = pytest.mark.django_db


def test_systems_prompts_and_outputs_are_created_with_their_external_ids_and_metadata():
    study = StudyFactory(status="draft")
    job = run(
        study,
        "systems",
        csv_bytes("name,description", ["alpha,First", "beta,Second"]),
        "systems.csv",
    )
    assert (job.status, job.created, job.unchanged) == ("done", 2, 0)
    prompts = jsonl_bytes(
        [
            {
                "id": "p1",
                "text": "Hello",
                "language": "de",
                "topic": "law",
                "source": "bench",
                "metadata": {"domain": "contracts"},
            },
            {"id": "p2", "text": "Line one\nline two, with a comma"},
        ]
    )
    assert run(study, "prompts", prompts, "prompts.jsonl").created == 2
    p1 = Prompt.objects.get(study=study, external_id="p1")
    assert (p1.language, p1.topic, p1.source, p1.metadata) == (
        "de",
        "law",
        "bench",
        {"domain": "contracts"},
    )
    assert Prompt.objects.get(external_id="p2").text == "Line one\nline two, with a comma"
    outputs = csv_bytes(
        "output_id,prompt_id,system,output",
        [
            'o1,p1,alpha,"Quoted, ""with"" commas"',
            'o2,p1,beta,=HYPERLINK("http://x")',
            ",p2,alpha,No id",
        ],
    )
    job = run(study, "outputs", outputs, "outputs.csv")
    assert job.status == "done", job.errors
    assert job.created == 3
    assert Output.objects.get(external_id="o1").text == 'Quoted, "with" commas'
    assert Output.objects.get(external_id="o2").text == '=HYPERLINK("http://x")'  # data, as given
    assert Output.objects.get(prompt__external_id="p2").external_id == "p2:alpha"
    assert not ImportRow.objects.filter(job_id=job.pk).exists()  # its staged rows are deleted


def test_importing_the_same_file_twice_creates_nothing_and_reports_unchanged_rows():
    study = StudyFactory(status="draft")
    load_content(study, n_prompts=5)
    data = csv_bytes(
        "id,prompt_id,system,text",
        [f"o{i}{s},p{i},{s},Output of {s} for {i}" for i in range(5) for s in ("alpha", "beta")],
    )
    before = list(Output.objects.order_by("id").values_list("id", "text"))
    again = run(study, "outputs", data, "o.csv")
    assert (again.status, again.created, again.unchanged) == ("done", 0, 10)
    assert "10 unchanged" in again.message
    assert list(Output.objects.order_by("id").values_list("id", "text")) == before


def test_a_file_that_adds_to_existing_content_creates_only_the_new_rows():
    study = StudyFactory(status="draft")
    load_content(study, n_prompts=2)
    data = csv_bytes(
        "id,text,language,topic", ["p0,Prompt 0,en,t0", "p1,Prompt 1,en,t1", "p9,New,,"]
    )
    job = run(study, "prompts", data, "p.csv")
    assert (job.status, job.created, job.unchanged) == ("done", 1, 2), job.errors
    assert Prompt.objects.filter(study=study).count() == 3


def test_a_row_that_differs_from_existing_content_is_an_error_and_nothing_changes():
    study = StudyFactory(status="draft")
    load_content(study, n_prompts=2)
    data = csv_bytes(
        "id,text,language,topic", ["p0,Prompt 0,en,t0", "p1,Changed,en,t1", "p5,New,,"]
    )
    job = run(study, "prompts", data, "p.csv")
    assert job.status == "failed"
    assert job.errors == [
        {
            "line": 3,
            "field": "text",
            "reason": "prompt p1 already exists with different text, "
            "language, topic, source or metadata",
        }
    ]
    assert Prompt.objects.get(external_id="p1").text == "Prompt 1"
    assert not Prompt.objects.filter(external_id="p5").exists()


def test_comparisons_and_gold_answers_are_imported_against_built_units():
    study = StudyFactory(status="draft", task_kind="categorical")
    load_content(study, n_prompts=3)
    job = run(
        study, "comparisons", csv_bytes("system_x,system_y,expected", ["alpha,beta,x"]), "c.csv"
    )
    assert job.status == "done", job.errors
    assert Comparison.objects.get(study=study).expected == "x"
    setup.build_units(study)
    gold = csv_bytes(
        "unit,value,rationale,source,role",
        ["o0alpha,safe,Plainly safe,adjudicated,gold", "o1beta,unsafe,,,attention"],
    )
    job = run(study, "gold", gold, "g.csv")
    assert job.status == "done", job.errors
    a = GoldAnswer.objects.get(unit__external_id="o0alpha")
    assert (a.value, a.rationale, a.source, a.unit.role) == (
        {"choice": "safe"},
        "Plainly safe",
        "adjudicated",
        "gold",
    )
    assert GoldAnswer.objects.get(unit__external_id="o1beta").unit.role == "attention"
    assert run(study, "gold", gold, "g.csv").unchanged == 2


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        (
            "malformed line near the end (CSV)",
            csv_bytes("name", [f"s{i}" for i in range(200)] + ['"unterminated, x', "last"]),
            {(202, "(line)")},
        ),
        (
            "wrong field count near the end (CSV)",
            csv_bytes("name,description", [f"s{i},d" for i in range(200)] + ["a,b,c", "z,d"]),
            {(202, "(line)")},
        ),
        (
            "malformed JSON near the end",
            jsonl_bytes([{"name": f"s{i}"} for i in range(200)]) + b'{"name": "x"\n{"name": "y"}\n',
            {(201, "(line)")},
        ),
        (
            "wrong encoding",
            "name,description\nalpha,fine\nbeta,caf\u00e9 au lait\ngamma,na\u00efve\n".encode(
                "latin-1"
            ),
            {(3, "(line)"), (4, "(line)")},
        ),
        (
            "duplicate names",
            csv_bytes("name", ["alpha", "beta", "alpha", "gamma", "beta"]),
            {(4, "name"), (6, "name")},
        ),
        (
            "missing column",
            csv_bytes("nom,description", ["alpha,x"]),
            {(1, "name"), (1, "nom")},
        ),
        (
            "NUL byte",
            csv_bytes("name", ["ok", "bad\x00name"]),
            {(3, "name")},
        ),
    ],
)
def test_a_bad_file_publishes_nothing_and_names_each_bad_row(name, data, expected):
    study = StudyFactory(status="draft")
    fmt = "x.jsonl" if "JSON" in name else "x.csv"
    job = run(study, "systems", data, fmt)
    assert job.status == "failed", name
    assert {(e["line"], e["field"]) for e in job.errors} == expected, job.errors
    assert job.error_count == len(expected)
    assert all(e["reason"] for e in job.errors)
    assert not System.objects.filter(study=study).exists()
    assert "Nothing was published" in job.message


def test_duplicate_output_ids_and_unknown_systems_and_prompts_are_all_reported():
    study = StudyFactory(status="draft")
    load_content(study, n_prompts=2)
    data = csv_bytes(
        "id,prompt_id,system,text",
        [
            "n1,p0,alpha,x",  # exists with another id -> error (line 2)
            "n2,p1,gamma,x",  # unknown system (3)
            "n3,p7,alpha,x",  # unknown prompt (4)
            "n3,p1,beta,x",  # duplicate id n3 (5), and p1/beta exists with other text and id
        ],
    )
    job = run(study, "outputs", data, "o.csv")
    assert job.status == "failed"
    got = {(e["line"], e["field"]) for e in job.errors}
    assert got == {(2, "text"), (3, "system"), (4, "prompt_id"), (5, "id"), (5, "text")}
    assert "unknown system 'gamma'" in next(e["reason"] for e in job.errors if e["line"] == 3)
    assert Output.objects.filter(prompt__study=study).count() == 4


def test_a_50_megabyte_line_is_refused_without_being_read_into_memory(tmp_path, settings):
    settings.CONCORD_IMPORT_MAX_LINE_BYTES = 1 << 20
    study = StudyFactory(status="draft")
    path = tmp_path / "big.csv"
    with open(path, "wb") as f:
        f.write(b"name,description\nalpha,ok\nbeta,")
        chunk = b"x" * (1 << 20)
        for _ in range(50):
            f.write(chunk)
        f.write(b"\ngamma,ok\n")
    from annotation.imports import services

    with open(path, "rb") as stream:
        job = services.import_file(study, "systems", stream, "big.csv")
    assert job.status == "failed"
    assert [(e["line"], e["field"]) for e in job.errors] == [(3, "(line)")]
    assert "longer than the limit" in job.errors[0]["reason"]
    assert job.bytes_read == path.stat().st_size
    assert not System.objects.filter(study=study).exists()


def test_every_bad_row_is_counted_and_the_first_thousand_are_kept():
    study = StudyFactory(status="draft")
    data = csv_bytes("id,text", [f"p{i}," for i in range(1500)] + ["good,Text"])
    job = run(study, "prompts", data, "p.csv")
    assert job.status == "failed"
    assert job.error_count == 1500
    assert len(job.errors) == 1000
    assert [e["line"] for e in job.errors[:3]] == [2, 3, 4]
    assert all(e["field"] == "text" and e["reason"] == "is required" for e in job.errors)
    assert not Prompt.objects.filter(study=study).exists()


def test_jsonl_values_are_checked_against_the_scheme_of_the_study():
    study = StudyFactory(status="draft", task_kind="continuous")
    load_content(study, n_prompts=1)
    setup.build_units(study)
    data = jsonl_bytes(
        [
            {"unit": "o0alpha", "value": 140},
            {"unit": "o0beta", "value": "NaN"},
            {"unit": "zz", "value": 5},
        ]
    )
    job = run(study, "gold", data, "g.jsonl")
    assert job.status == "failed"
    assert [(e["line"], e["field"]) for e in job.errors] == [
        (1, "value"),
        (2, "value"),
        (3, "unit"),
    ]
    assert "140 is outside 0 to 100" in job.errors[0]["reason"]
    assert not GoldAnswer.objects.exists()
    assert ImportJob.objects.filter(study=study, status="failed").count() == 1


@pytest.mark.postgres
def test_reading_that_fails_part_way_stages_nothing_and_leaves_no_connection(monkeypatch):
    """PostgreSQL stages rows through one COPY on a connection of its own: an error while reading
    rolls that COPY back and closes the connection (no rows of the job, no idle transaction)."""
    from django.db import connection

    from annotation.imports.kinds import CLEANERS

    study = StudyFactory(status="draft")
    load_content(study)
    clean, seen = CLEANERS["outputs"], []

    def fails_on_row_6001(fields, ctx):
        seen.append(1)
        if len(seen) > 6000:  # past the 5,000-row batches the stager used to commit on its own
            raise RuntimeError("the worker dies here")
        return clean(fields, ctx)

    def backends() -> list[str]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT state FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid()"
            )
            return sorted(row[0] or "" for row in cursor.fetchall())

    before = backends()
    monkeypatch.setitem(CLEANERS, "outputs", fails_on_row_6001)
    rows = [f"n{i},p{i % 4},alpha,Text {i}" for i in range(7000)]
    with pytest.raises(RuntimeError, match="the worker dies here"):
        run(study, "outputs", csv_bytes("id,prompt_id,system,text", rows), "o.csv")
    job = ImportJob.objects.filter(study=study, kind="outputs").latest("pk")
    assert not ImportRow.objects.filter(job_id=job.pk).exists()
    assert backends() == before  # the staging connection is closed, not idle in a transaction
    assert job.status != "done"


def test_checks_against_existing_outputs_run_only_when_the_study_has_outputs():
    """A study's first outputs cannot clash with outputs it does not have: those two checks (each
    a join of every staged row with the database's outputs) are skipped then, and run after."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    study = StudyFactory(status="draft")
    load_content(study, n_prompts=0)  # systems, no prompts and so no outputs yet
    run(study, "prompts", csv_bytes("id,text", ["p1,One", "p2,Two"]), "p.csv")
    outputs = csv_bytes("id,prompt_id,system,text", ["o1,p1,alpha,A", "o2,p2,alpha,B"])

    def clash_checks_run() -> int:
        with CaptureQueriesContext(connection) as seen:
            job = run(study, "outputs", outputs, "o.csv")
        assert job.status == "done", job.errors
        return sum("already exists with different text or id" in q["sql"] for q in seen)

    assert clash_checks_run() == 0  # first import: nothing to clash with
    assert clash_checks_run() == 1  # the same file again: compared with what is there
    changed = csv_bytes("id,prompt_id,system,text", ["o1,p1,alpha,Changed", "o2,p2,alpha,B"])
    job = run(study, "outputs", changed, "o.csv")
    assert (job.status, job.errors[0]["line"], job.errors[0]["field"]) == ("failed", 2, "text")
