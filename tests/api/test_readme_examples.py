"""The README's API examples, run as written against a live server with a real token."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from annotation.models import Label, Membership, Output, Study
from annotation.services.api_tokens import create_token
from qc import services
from tests.factories import MembershipFactory
from tests.qc import simulate

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

README = Path(django_settings.BASE_DIR) / "README.md"


def examples() -> dict[str, str]:
    text = README.read_text()
    found = re.findall(r"<!-- api-example: ([\w-]+) -->\s*```python\n(.*?)```", text, re.S)
    return dict(found)


def run(name, live_server, token, study, cwd) -> str:
    env = dict(
        os.environ,
        CONCORD_URL=live_server.url,
        CONCORD_TOKEN=token,
        CONCORD_STUDY=study.token,
    )
    done = subprocess.run(
        [sys.executable, "-c", examples()[name]],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def spa_reported(settings):
    settings.CONCORD_QC_BOOTSTRAP = 100
    study, _ = simulate.spa_study([(0.8, "x"), (0.5, "indifferent")], n_annotators=12)
    services.recompute(study.pk)
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    return study, create_token(lead, "readme").secret


def test_the_readme_has_its_examples():
    assert {"spa-table", "export-labels", "create-study"} <= set(examples())


def test_spa_table_example_prints_each_comparison(live_server, spa_reported, tmp_path):
    study, token = spa_reported
    out = run("spa-table", live_server, token, study, tmp_path).splitlines()
    assert [line.split(":")[0] for line in out] == ["s0 vs s1", "s1 vs s2"]
    assert all("P[X>Y] = " in line for line in out)


def test_export_labels_example_writes_every_label_once(live_server, spa_reported, tmp_path):
    study, token = spa_reported
    out = run("export-labels", live_server, token, study, tmp_path)
    rows = [json.loads(line) for line in (tmp_path / "labels.jsonl").read_text().splitlines()]
    expected = list(Label.objects.filter(study=study).order_by("id").values_list("id", flat=True))
    assert [r["id"] for r in rows] == expected and f"{len(expected)} labels" in out
    assert all(len(r["spa_answers"]) == 4 for r in rows)


@pytest.fixture
def sent_to_the_worker():
    """Tasks go to the broker (the real worker of `worker_process`), not run eagerly."""
    from concord.celery import app

    old = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield
    app.conf.task_always_eager = old


@pytest.mark.worker
@pytest.mark.redis
def test_create_study_example_creates_a_draft_and_imports_its_outputs(
    live_server, worker_process, sent_to_the_worker, settings, tmp_path
):
    settings.CONCORD_IMPORT_DIR = str(tmp_path / "imports")
    lead = MembershipFactory(role=Membership.Role.LEAD).user
    token = create_token(lead, "readme").secret
    out = run("create-study", live_server, token, Study(token="unused"), tmp_path).splitlines()
    assert out == [
        "systems: 2 created, 0 unchanged",
        "prompts: 50 created, 0 unchanged",
        "outputs: done, 100 created",
    ]
    study = Study.objects.get(name="Summaries: helpfulness", created_by=lead)
    assert study.status == "draft" and study.task_kind == "likert"
    assert Output.objects.filter(prompt__study=study).count() == 100
