"""A study as one versioned file: exported, validated against the schema, recreated, diffed."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.exports import study_file
from annotation.models import GuideVersion, Membership, Study
from tests.factories import MembershipFactory, StudyFactory
from tests.imports.helpers import csv_bytes, load_content, run

pytestmark = pytest.mark.django_db


def a_study():
    study = StudyFactory(
        status="live", task_kind="spa", spa_exposure_m=3, spa_tau=1.1, question="Which is better?"
    )
    load_content(study, systems=("alpha", "beta"), n_prompts=3)
    run(study, "comparisons", csv_bytes("system_x,system_y,expected", ["alpha,beta,x"]), "c.csv")
    g = GuideVersion.objects.create(study=study, number=1, body="# Guide\nRead both.")
    g.rulings_introduced.create(study=study, title="Ties", text="Say 50 when unsure.")
    return study


def test_the_file_validates_against_the_published_schema_and_recreates_the_study():
    import jsonschema

    study = a_study()
    document = json.loads(study_file.dumps(study))
    jsonschema.validate(document, study_file.schema())
    assert document["format"] == "concord-study" and document["version"] == 1
    copy = study_file.create_study_from_file(
        study.workspace, study_file.read_study_file(study_file.dumps(study))
    )
    assert copy.pk != study.pk and copy.status == "draft"
    again = json.loads(study_file.dumps(copy))
    for part in ("study", "systems", "comparisons", "guide"):
        assert again[part] == document[part], part
    assert study_file.diff_study(copy, document) == []


def test_a_bad_study_file_names_every_problem_and_changes_nothing():
    study = a_study()
    document = json.loads(study_file.dumps(study))
    document["study"]["overlap"] = 0
    document["study"]["task_kind"] = "essay"
    document["comparisons"].append({"system_x": "alpha", "system_y": "zeta"})
    with pytest.raises(study_file.StudyFileError) as error:
        study_file.read_study_file(json.dumps(document))
    wheres = {where for where, _ in error.value.problems}
    assert {"study/overlap", "study/task_kind"} <= wheres
    document = json.loads(study_file.dumps(study))
    document["comparisons"].append({"system_x": "alpha", "system_y": "zeta"})
    with pytest.raises(study_file.StudyFileError) as error:
        study_file.read_study_file(json.dumps(document))
    assert error.value.problems == [("comparisons/1/system_y", "unknown system 'zeta'")]
    with pytest.raises(study_file.StudyFileError):
        study_file.read_study_file(b"\xff\xfe not json")


def test_reimporting_into_an_existing_study_shows_a_diff_first_and_applies_only_on_confirm(client):
    study = a_study()
    client.force_login(MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user)
    document = json.loads(study_file.dumps(study))
    document["study"]["overlap"] = 5
    document["study"]["question"] = "Which system writes better?"
    document["systems"].append({"name": "gamma", "description": "New"})
    document["guide"].append({"number": 2, "body": "v2", "changes": "Ties"})
    document["guide"][0]["body"] = "Rewritten history"
    upload = SimpleUploadedFile("study.json", json.dumps(document).encode())
    url = reverse("studio-study-file-import", args=[study.token])
    page = client.post(url, {"file": upload, "action": "preview"}).content.decode()
    assert 'id="study-file-diff"' in page
    for text in ("study.overlap", "system gamma", "guide v2", "published versions never change"):
        assert text in page
    study.refresh_from_db()
    assert study.overlap == 3 and not study.systems.filter(name="gamma").exists()  # not yet

    changes = {c.where: c.kind for c in study_file.diff_study(study, document)}
    assert changes["guide v1"] == "refused"
    client.post(url, {"document": json.dumps(document), "action": "apply"})
    study.refresh_from_db()
    assert (study.overlap, study.question) == (5, "Which system writes better?")
    assert study.systems.filter(name="gamma").exists()
    assert list(study.guide_versions.order_by("number").values_list("number", "body")) == [
        (1, "# Guide\nRead both."),
        (2, "v2"),
    ]


def test_the_scheme_and_kind_are_refused_once_labels_exist():
    study = a_study()
    study.label_scheme = {"likert_points": []}
    study.save()
    from annotation.services import setup

    setup.build_units(study)
    job = run(
        study,
        "labels",
        csv_bytes("annotator,unit,system_x,system_y,value", ["r1,spa-1,alpha,beta,60"]),
        "l.csv",
    )
    assert job.status == "done", job.errors
    document = json.loads(study_file.dumps(study))
    document["study"]["task_kind"] = "likert"
    document["study"]["label_scheme"] = {
        "points": [{"value": 1, "text": "1"}, {"value": 2, "text": "2"}]
    }
    changes = {c.where: c.kind for c in study_file.diff_study(study, document)}
    assert changes == {"study.task_kind": "refused", "study.label_scheme": "refused"}
    study_file.apply_study_file(study, document)
    assert Study.objects.get(pk=study.pk).task_kind == "spa"


def test_a_study_file_can_be_recreated_as_a_new_study_from_the_page(client):
    study = a_study()
    client.force_login(MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user)
    download = client.get(reverse("studio-study-file", args=[study.token]))
    assert download["Content-Disposition"].startswith("attachment")
    response = client.post(
        reverse("studio-study-file-import", args=[study.token]),
        {"document": download.content.decode(), "action": "new"},
    )
    made = Study.objects.exclude(pk=study.pk).get(workspace=study.workspace)
    assert response["Location"] == reverse("studio-exports", args=[made.token])
    assert made.comparisons.get().expected == "x"
