"""CSV formula injection: no cell of any download starts a spreadsheet formula, and no opaque
token can start one either."""

import csv
import io

import pytest
from django.urls import reverse

from annotation.models import Membership
from annotation.tokens import ALPHABET, new_token
from concord.csvsafe import FORMULA_STARTS, lines, safe_cell
from qc import exports, services
from tests.factories import MembershipFactory
from tests.qc import simulate

HOSTILE = ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1:A2)", "\tx", "\rx"]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_cell_that_would_start_a_formula_is_written_as_text(text):
    (line,) = lines([[text, "plain", 3, -1.5]])
    row = next(csv.reader(io.StringIO(line)))
    assert row[0] == "'" + text
    assert row[1:] == ["plain", "3", "-1.5"]  # text that is safe, and numbers, are untouched


def test_safe_cells_and_numbers_are_unchanged():
    for value in ["safe", "a=b", "", None, 0, -3, 2.5, "1e5"]:
        assert safe_cell(value) == value


def test_tokens_never_start_a_formula_and_keep_their_randomness():
    tokens = [new_token() for _ in range(5000)]
    assert len(set(tokens)) == len(tokens)
    assert all(len(t) == 22 and set(t) <= set(ALPHABET) for t in tokens)
    assert not any(t.startswith(FORMULA_STARTS) for t in tokens)
    # Every symbol shows up in the first position (the draw is not biased to a few letters).
    assert len({t[0] for t in tokens}) > 50


@pytest.mark.django_db
def test_every_report_download_escapes_hostile_label_values(client, settings):
    settings.CONCORD_QC_BOOTSTRAP = 50
    scheme = {
        "labels": [
            {"value": "=cmd|' /C calc'!A0", "text": "bad", "key": "b"},
            {"value": "@SUM(1+1)", "text": "worse", "key": "w"},
        ]
    }
    study, _ = simulate.categorical_study(n_prompts=8, label_scheme=scheme)
    services.recompute(study.pk)
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    client.force_login(lead)
    seen_escaped = False
    for table in exports.TABLES:
        response = client.get(reverse("study-report-csv", args=[study.token, table]))
        assert response.status_code == 200, table
        text = b"".join(response.streaming_content).decode()
        for row in csv.reader(io.StringIO(text)):
            for cell in row:
                assert not cell.startswith(FORMULA_STARTS), (table, cell)
                seen_escaped |= cell.startswith("'=cmd") or cell.startswith("'@SUM")
    assert seen_escaped  # the hostile values were exported, escaped
