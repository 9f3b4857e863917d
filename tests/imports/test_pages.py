"""The lead's import pages: upload, progress, errors, preview and build; scoped to the workspace."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import ImportJob, Label, Membership, Output, System, Unit
from annotation.services import setup
from tests.factories import MembershipFactory, StudyFactory, UserFactory, enrol
from tests.imports.helpers import csv_bytes, load_content, run

pytestmark = pytest.mark.django_db


def lead_of(study):
    return MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user


def test_an_upload_is_imported_and_the_job_page_shows_what_was_created(
    client, settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.CONCORD_IMPORT_DIR = str(tmp_path)
    study = StudyFactory(status="draft")
    client.force_login(lead_of(study))
    upload = SimpleUploadedFile("systems.csv", csv_bytes("name,description", ["alpha,A", "beta,B"]))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("studio-imports", args=[study.token]), {"kind": "systems", "file": upload}
        )
    job = ImportJob.objects.get(study=study)
    assert response.status_code == 302
    assert response["Location"] == reverse("studio-import-job", args=[study.token, job.token])
    assert job.status == "done"  # eager in tests; a worker runs it in production
    page = client.get(response["Location"]).content.decode()
    assert 'data-fact="created">2<' in page
    assert System.objects.filter(study=study).count() == 2


def test_a_bad_file_shows_every_bad_row_with_line_field_and_reason(
    client, settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.CONCORD_IMPORT_DIR = str(tmp_path)
    study = StudyFactory(status="draft")
    client.force_login(lead_of(study))
    data = csv_bytes("name", ["alpha", "<script>alert(1)</script>", "alpha"])
    upload = SimpleUploadedFile("systems.csv", data)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("studio-imports", args=[study.token]), {"kind": "systems", "file": upload}
        )
    job = ImportJob.objects.get(study=study)
    page = client.get(reverse("studio-import-job", args=[study.token, job.token])).content.decode()
    assert 'id="import-errors"' in page
    assert "duplicate system alpha (first on line 2)" in page
    assert "<script>alert(1)</script>" not in page  # text from files is data, escaped
    assert "Nothing was published" in page
    assert not System.objects.filter(study=study).exists()


def test_the_progress_partial_polls_until_the_job_is_finished_then_refreshes(client):
    study = StudyFactory(status="draft")
    client.force_login(lead_of(study))
    job = ImportJob.objects.create(
        study=study,
        kind="outputs",
        format="csv",
        file_name="o.csv",
        file_size=1000,
        bytes_read=500,
        status="reading",
    )
    url = reverse("studio-import-progress", args=[study.token, job.token])
    partial = client.get(url, headers={"HX-Request": "true"})
    body = partial.content.decode()
    assert 'hx-trigger="every 1s"' in body and 'value="45"' in body
    assert "HX-Refresh" not in partial
    job.status = "done"
    job.save()
    partial = client.get(url, headers={"HX-Request": "true"})
    assert partial["HX-Refresh"] == "true"
    assert "hx-trigger" not in partial.content.decode()


def test_a_file_that_is_neither_csv_nor_jsonl_is_refused_at_the_form(client):
    study = StudyFactory(status="draft")
    client.force_login(lead_of(study))
    upload = SimpleUploadedFile("systems.xlsx", b"PK\x03\x04")
    response = client.post(
        reverse("studio-imports", args=[study.token]), {"kind": "systems", "file": upload}
    )
    assert response.status_code == 400
    assert "name it .csv or .jsonl" in response.content.decode()
    assert not ImportJob.objects.exists()


def test_the_preview_counts_units_labels_gold_and_hours_before_the_build(client):
    study = StudyFactory(status="draft", overlap=3, gold_rate=0.1)
    load_content(study, n_prompts=5)  # 10 outputs
    client.force_login(lead_of(study))
    page = client.get(reverse("studio-imports", args=[study.token])).content.decode()
    assert 'data-fact="new-units">10' in page
    assert 'data-fact="labels-needed">30' in page
    assert "once the first labels give a median time per task" in page
    assert "no gold answers are imported yet" in page
    response = client.post(reverse("studio-build-units", args=[study.token]))
    assert response.status_code == 302
    assert Unit.objects.filter(study=study).count() == 10
    page = client.get(reverse("studio-imports", args=[study.token])).content.decode()
    assert 'data-fact="new-units">0' in page
    assert 'data-fact="production-units">10' in page


def test_the_hours_estimate_uses_the_median_time_per_task_of_the_labels_so_far():
    from annotation.imports.preview import preview_units

    study = StudyFactory(status="draft", task_kind="categorical", overlap=2, gold_rate=0.2)
    load_content(study, n_prompts=5)
    setup.build_units(study)
    run(
        study,
        "labels",
        csv_bytes(
            "annotator,unit,value,duration_ms",
            ["a,o0alpha,safe,10000", "b,o0alpha,safe,30000", "a,o1alpha,safe,20000"],
        ),
        "l.csv",
    )
    preview = preview_units(study)
    assert preview.median_seconds == 20.0
    assert preview.labels_needed == 20
    assert preview.tasks == 25  # 20 production labels / (1 - 0.2 gold)
    assert preview.annotator_hours == pytest.approx(25 * 20 / 3600)


def urls(study, job):
    t = study.token
    return [
        ("get", reverse("studio-imports", args=[t])),
        ("post", reverse("studio-imports", args=[t])),
        ("get", reverse("studio-import-job", args=[t, job.token])),
        ("get", reverse("studio-import-progress", args=[t, job.token])),
        ("post", reverse("studio-build-units", args=[t])),
        ("get", reverse("studio-exports", args=[t])),
        ("get", reverse("studio-export-labels", args=[t, "csv"])),
        ("get", reverse("studio-export-labels", args=[t, "jsonl"])),
        ("get", reverse("studio-study-file", args=[t])),
        ("post", reverse("studio-study-file-import", args=[t])),
    ]


@pytest.mark.parametrize("who", ["other lead", "annotator of the study"])
def test_no_one_but_the_workspace_lead_reaches_any_import_or_export_page(client, who):
    study = StudyFactory(status="live")
    load_content(study, n_prompts=1)
    job = run(study, "systems", csv_bytes("name", ["alpha"]), "s.csv")
    if who == "other lead":
        user = MembershipFactory(role=Membership.Role.LEAD).user  # a lead of another workspace
    else:
        user = UserFactory()
        enrol(study, user)
    client.force_login(user)
    for method, url in urls(study, job):
        response = getattr(client, method)(url)
        assert response.status_code == 404, (method, url)
    assert Unit.objects.filter(study=study).count() == 0
    assert Output.objects.filter(prompt__study=study).count() == 2
    assert not Label.objects.exists()


def test_a_job_of_another_study_answers_404_even_to_a_lead_of_both_workspaces(client):
    study, other = StudyFactory(status="draft"), StudyFactory(status="draft")
    lead = lead_of(study)
    MembershipFactory(workspace=other.workspace, user=lead, role=Membership.Role.LEAD)
    job = run(other, "systems", csv_bytes("name", ["alpha"]), "s.csv")
    client.force_login(lead)
    url = reverse("studio-import-job", args=[study.token, job.token])
    assert client.get(url).status_code == 404


def test_signed_out_visitors_are_sent_to_sign_in(client):
    study = StudyFactory(status="draft")
    job = run(study, "systems", csv_bytes("name", ["alpha"]), "s.csv")
    for method, url in urls(study, job):
        response = getattr(client, method)(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_upload_copy_is_removed_after_the_import(
    client, settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.CONCORD_IMPORT_DIR = str(tmp_path)
    study = StudyFactory(status="draft")
    client.force_login(lead_of(study))
    upload = SimpleUploadedFile("s.jsonl", b'{"name": "alpha"}\n')
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("studio-imports", args=[study.token]), {"kind": "systems", "file": upload}
        )
    assert ImportJob.objects.get(study=study).status == "done"
    assert list(tmp_path.iterdir()) == []


def test_a_job_without_progress_for_minutes_says_the_worker_may_have_stopped(client):
    from datetime import timedelta

    from django.utils import timezone

    study = StudyFactory(status="draft")
    client.force_login(lead_of(study))
    job = ImportJob.objects.create(
        study=study, kind="outputs", format="csv", file_name="o.csv", status="checking"
    )
    url = reverse("studio-import-job", args=[study.token, job.token])
    assert 'id="import-stalled"' not in client.get(url).content.decode()
    ImportJob.objects.filter(pk=job.pk).update(updated_at=timezone.now() - timedelta(minutes=9))
    assert 'id="import-stalled"' in client.get(url).content.decode()


def test_the_pages_answer_only_the_methods_they_serve(client):
    study = StudyFactory(status="draft")
    job = run(study, "systems", csv_bytes("name", ["alpha"]), "s.csv")
    client.force_login(lead_of(study))
    served = {url: method for method, url in urls(study, job)}
    for url in served:
        assert client.delete(url).status_code == 405, url
    assert client.get(reverse("studio-build-units", args=[study.token])).status_code == 405
    assert Unit.objects.filter(study=study).count() == 0
