"""A lead imports content in Chromium: upload, live progress, bad rows, preview, build, export.

Screenshots go to test-output/screenshots/imports-*.png and exports-*.png.
"""

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from annotation.exports import study_file
from annotation.models import GoldAnswer, ImportJob, Membership, Output, Unit
from tests.browser.workbench import sign_in_with_keyboard
from tests.factories import MembershipFactory, StudyFactory
from tests.imports.conftest import broker_mode  # noqa: F401 (a fixture)

SAMPLES = Path(settings.BASE_DIR) / "samples"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.flaky(reruns=2, reruns_delay=1),
]


def lead_for(study):
    return MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user


def upload(page, kind: str, path: Path):
    page.select_option("#id_kind", kind)
    page.set_input_files("#id_file", str(path))
    with page.expect_navigation():
        page.click("#upload-form button[type=submit]")


def test_the_job_page_follows_the_progress_by_itself_until_published(
    live_server, page, screenshots
):
    study = StudyFactory(status="draft", name="Progress study")
    job = ImportJob.objects.create(
        study=study,
        kind="outputs",
        format="csv",
        file_name="outputs.csv",
        file_size=10_000,
        bytes_read=4_000,
        rows_read=1_234,
        status="reading",
    )
    sign_in_with_keyboard(page, live_server.url, lead_for(study))
    page.goto(live_server.url + reverse("studio-import-job", args=[study.token, job.token]))
    page.wait_for_selector("progress")
    assert page.get_attribute("progress", "value") == "36"
    page.screenshot(path=str(screenshots / "imports-progress.png"), full_page=True)
    ImportJob.objects.filter(pk=job.pk).update(bytes_read=8_000, rows_read=2_500)
    page.wait_for_function(
        "() => { const p = document.querySelector('progress'); return p && p.value == 72; }"
    )
    ImportJob.objects.filter(pk=job.pk).update(
        status="done", created=2_500, unchanged=0, message="2,500 created, 0 unchanged."
    )
    page.wait_for_selector('[data-status="done"]')  # polled, then the page reloaded itself
    assert page.inner_text('[data-fact="created"]') == "2500"
    page.screenshot(path=str(screenshots / "imports-published.png"), full_page=True)


@pytest.mark.worker
@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.usefixtures("broker_mode")
def test_a_lead_imports_the_samples_reads_the_bad_rows_previews_and_builds(
    live_server, page, screenshots, worker_process, settings, tmp_path
):
    settings.CONCORD_IMPORT_DIR = str(tmp_path)
    study = StudyFactory(
        status="draft", task_kind="likert", name="First study", overlap=3, gold_rate=0.1
    )
    sign_in_with_keyboard(page, live_server.url, lead_for(study))
    imports = live_server.url + reverse("studio-imports", args=[study.token])
    page.goto(imports)
    page.screenshot(path=str(screenshots / "imports-empty.png"), full_page=True)
    for kind, name in [
        ("systems", "systems.csv"),
        ("prompts", "prompts.csv"),
        ("outputs", "outputs.csv"),
    ]:
        page.goto(imports)
        upload(page, kind, SAMPLES / name)
        page.wait_for_selector('[data-status="done"]', timeout=60_000)  # the worker published it
    assert page.inner_text('[data-fact="created"]') == "36"
    page.screenshot(path=str(screenshots / "imports-done.png"), full_page=True)

    bad = tmp_path / "more-outputs.csv"
    bad.write_text(
        "id,prompt_id,system,text\n"
        "q01-atlas,q01,atlas,A different text for an existing output\n"
        "n2,q02,delta,Unknown system\n"
        "n3,q99,atlas,Unknown prompt\n"
        "n3,q03,cedar,<b>markup stays text</b>\n"
    )
    page.goto(imports)
    upload(page, "outputs", bad)
    page.wait_for_selector("#import-errors", timeout=60_000)
    rows = page.locator("#import-errors tbody tr")
    assert rows.count() == 5
    lines = [rows.nth(i).locator("td").first.inner_text() for i in range(rows.count())]
    assert lines == ["2", "3", "4", "5", "5"]
    assert "unknown system 'delta'" in page.inner_text("#import-errors")
    page.screenshot(path=str(screenshots / "imports-errors.png"), full_page=True)
    assert Output.objects.filter(prompt__study=study).count() == 36  # nothing published

    page.goto(imports)
    assert page.inner_text('[data-fact="new-units"]').startswith("36")
    assert page.inner_text('[data-fact="labels-needed"]').startswith("108")
    page.screenshot(path=str(screenshots / "imports-preview.png"), full_page=True)
    with page.expect_navigation():
        page.click("#build-units")
    assert "36 units built" in page.inner_text(".messages")
    upload(page, "gold", SAMPLES / "gold.csv")
    page.wait_for_selector('[data-status="done"]', timeout=60_000)
    assert GoldAnswer.objects.filter(unit__study=study).count() == 4
    assert Unit.objects.filter(study=study, role="gold").count() == 4

    page.goto(live_server.url + reverse("studio-exports", args=[study.token]))
    page.screenshot(path=str(screenshots / "exports.png"), full_page=True)
    document = study_file.study_document(study)
    document["study"]["overlap"] = 5
    document["guide"] = [{"number": 1, "body": "Rate how helpful and correct the answer is."}]
    changed = tmp_path / "study.json"
    changed.write_text(json.dumps(document))
    page.set_input_files("#study-file", str(changed))
    with page.expect_navigation():
        page.click("text=Show what would change")
    assert "study.overlap" in page.inner_text("#study-file-diff")
    page.screenshot(path=str(screenshots / "exports-study-file-diff.png"), full_page=True)
    study.refresh_from_db()
    assert study.overlap == 3  # nothing changes before the lead confirms
    with page.expect_navigation():
        page.click("#apply-study-file")
    study.refresh_from_db()
    assert study.overlap == 5 and study.guide_versions.count() == 1
