"""`manage.py import_content`: progress on the terminal, every bad row printed, exit status."""

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Output, System
from tests.factories import StudyFactory
from tests.imports.helpers import csv_bytes, load_content

pytestmark = pytest.mark.django_db


def test_the_command_imports_a_file_and_a_second_run_reports_it_unchanged(tmp_path, capsys):
    study = StudyFactory(status="draft")
    load_content(study, n_prompts=3)
    path = tmp_path / "more.jsonl"
    path.write_text(
        '{"prompt_id": "p0", "system": "alpha", "text": "Output of alpha for 0", "id": "o0alpha"}\n'
    )
    call_command("import_content", study.token, "outputs", str(path))
    out = capsys.readouterr().out
    assert "0 created, 1 unchanged" in out
    assert "rows read" in out  # progress


def test_the_command_prints_each_bad_row_and_fails_without_publishing(tmp_path, capsys):
    study = StudyFactory(status="draft")
    path = tmp_path / "systems.csv"
    path.write_bytes(csv_bytes("name", ["alpha", "alpha", "beta"]))
    with pytest.raises(CommandError, match="Nothing was published: 1 bad row"):
        call_command("import_content", str(study.pk), "systems", str(path))
    assert "line 3, name: duplicate system alpha (first on line 2)" in capsys.readouterr().err
    assert not System.objects.filter(study=study).exists()
    assert not Output.objects.exists()
