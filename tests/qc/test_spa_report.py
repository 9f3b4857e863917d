"""The SPA table: reversal flagged apart from "protocols disagree", expected relations recovered
per protocol, the tau-dropped annotators listed with their sums, df beside t."""

import pytest
from django.urls import reverse

from annotation.models import Membership, SpaAnswer
from qc import loaders, services
from qc.reports import build_report
from tests.factories import MembershipFactory
from tests.qc import simulate

pytestmark = pytest.mark.django_db

# s0 vs s1: SPA says s0, Likert significantly s1 (a reversal); s1 vs s2: both say s2;
# s2 vs s3: neither sees a difference; s3 vs s4: SPA says s3, Likert sees nothing (disagree).
PREFS = [(0.72, "x"), (0.28, "y"), (0.5, "indifferent"), (0.72, "x")]
LIKERT = {"s0": 3.0, "s1": 3.9, "s2": 4.4, "s3": 4.4, "s4": 4.4}


@pytest.fixture
def four_rows():
    study, comparisons = simulate.spa_study(PREFS, n_annotators=40, seed=21, likert=LIKERT)
    summary = build_report(loaders.load_snapshot(study), loaders.report_config(study)).summary
    return study, comparisons, summary["spa"]


def test_reversal_fires_on_the_likert_significant_against_spa_row_and_on_no_other(four_rows):
    _, comparisons, spa = four_rows
    table = spa["tables"]["unfiltered"]
    assert [r["comparison"] for r in table] == [c.pk for c in comparisons]
    verdicts = [(r["spa"]["verdict"], r["likert"]["verdict"]) for r in table]
    assert verdicts[0] == ("X>Y", "Y>X")
    assert verdicts[1] == ("Y>X", "Y>X")
    assert verdicts[2] == ("no significant difference", "no significant difference")
    assert verdicts[3] == ("X>Y", "no significant difference")
    assert [r["reversal"] for r in table] == [True, False, False, False]
    assert [r["protocols_disagree"] for r in table] == [False, False, False, True]


def test_reversal_against_the_spa_estimate_needs_no_significant_spa_verdict():
    # the paper's human vs davinci row: SPA 0.544 not significant, Likert significant the other way
    study, _ = simulate.spa_study(
        [(0.53, "indifferent")], n_annotators=40, seed=3, likert={"s0": 3.0, "s1": 3.7}
    )
    row = build_report(loaders.load_snapshot(study), loaders.report_config(study)).summary["spa"][
        "tables"
    ]["unfiltered"][0]
    assert row["spa"]["verdict"] == "no significant difference" and row["spa"]["mean"] > 0.5
    assert row["likert"]["verdict"] == "Y>X"
    assert row["reversal"] is True and row["protocols_disagree"] is False


def test_expected_relations_recovered_are_counted_per_protocol(four_rows):
    _, _, spa = four_rows
    rec = spa["recovered"]["unfiltered"]
    table = spa["tables"]["unfiltered"]
    assert rec["expected"] == 4
    assert rec["spa"] == sum(r["spa_matches_expected"] for r in table) == 4
    assert rec["likert"] == sum(r["likert_matches_expected"] for r in table) == 2


def test_df_is_shown_beside_t(four_rows):
    _, _, spa = four_rows
    for row in spa["tables"]["unfiltered"]:
        assert row["spa"]["df"] == row["spa"]["n"] - 1
        assert row["likert"]["df"] == row["likert"]["n"] - 1


def test_the_tau_dropped_annotators_are_listed_with_their_sums(client):
    study, comparisons = simulate.spa_study(
        [(0.65, "x"), (0.45, "")],
        n_annotators=20,
        seed=5,
        tau=1.1,
        sloppy=3,
        likert={"s0": 3.5, "s1": 3.0, "s2": 3.2},
    )
    spa = build_report(loaders.load_snapshot(study), loaders.report_config(study)).summary["spa"]
    assert spa["dropped_annotators"] == len(spa["dropped"]) == 3
    assert spa["filter_applies_to_likert"] is True
    for d in spa["dropped"]:
        answers = SpaAnswer.objects.filter(label__annotator__username=d["annotator"])
        for c in comparisons:
            total = sum(a.probability for a in answers.filter(comparison=c)) / 100
            entry = next(s for s in d["sums"] if s["comparison"] == f"{c.system_x} vs {c.system_y}")
            assert entry["sum"] == pytest.approx(total)
        assert d["max_sum"] > 1.1
    services.recompute(study.pk)
    client.force_login(MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user)
    html = client.get(reverse("study-dashboard", args=[study.token])).content.decode()
    for d in spa["dropped"]:
        assert f'data-dropped="{d["annotator"]}"' in html
    assert 'data-filter-likert="yes"' in html
    assert "Expected relations recovered" in html
    assert "t (df)" in html
