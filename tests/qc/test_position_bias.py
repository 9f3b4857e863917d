"""Position bias on the dashboard (issue 10, defect 14): an always-left annotator's left-choice
rate is flagged, by an exact binomial test against 0.5 Holm-adjusted across annotators."""

import numpy as np
import pytest
from django.urls import reverse
from scipy import stats
from statsmodels.stats.multitest import multipletests

from annotation.models import Membership, Unit
from qc import loaders, services
from qc.reports import build_report
from tests.factories import MembershipFactory
from tests.qc import simulate
from tests.qc.labels import add_labels

pytestmark = pytest.mark.django_db


@pytest.fixture
def with_left_clicker(settings):
    settings.CONCORD_QC_BOOTSTRAP = 30
    study = simulate.pairwise_study(n_prompts=24, n_annotators=4, overlap=2, seed=6)
    (lefty,) = simulate.annotators(1, prefix=f"lefty{study.pk}")
    rng = np.random.default_rng(1)
    systems = list(study.systems.order_by("name"))
    add_labels(
        study,
        [
            # always "left", whichever system was on the left
            {"unit": unit, "annotator": lefty, "choice": "left", "winner": systems[rng.integers(2)]}
            for unit in Unit.objects.filter(study=study).order_by("id")
        ],
    )
    return study, lefty


def test_the_always_left_annotator_is_flagged_and_nobody_else(with_left_clicker):
    study, lefty = with_left_clicker
    left = build_report(loaders.load_snapshot(study), loaders.report_config(study)).summary[
        "pairwise"
    ]["left_choice"]
    rows = {a["annotator"]: a for a in left["annotators"]}
    assert rows[lefty.username]["share_left"] == 1.0
    assert rows[lefty.username]["position_bias"] is True
    assert [a for a in rows if rows[a]["position_bias"]] == [lefty.username]
    assert left["n_flagged"] == 1
    assert "binomial" in left["test"] and "Holm" in left["test"]
    # cross-check: scipy's exact binomial test, statsmodels' Holm
    names = list(rows)
    p = [
        stats.binomtest(
            round(rows[a]["share_left"] * rows[a]["judgments"]), rows[a]["judgments"], 0.5
        ).pvalue
        for a in names
    ]
    holm = multipletests(p, method="holm")[1]
    for a, pi, hi in zip(names, p, holm, strict=True):
        assert rows[a]["p"] == pytest.approx(pi)
        assert rows[a]["p_holm"] == pytest.approx(hi)
        assert rows[a]["position_bias"] is bool(hi <= 0.05)


def test_the_dashboard_flags_position_bias_and_names_the_test(client, with_left_clicker):
    study, lefty = with_left_clicker
    services.recompute(study.pk)
    client.force_login(MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user)
    html = client.get(reverse("study-dashboard", args=[study.token])).content.decode()
    row = html[html.index(f'data-annotator="{lefty.username}"') :]
    row = row[: row.index("</tr>")]
    assert 'data-flag="position-bias"' in row and "1.000" in row
    assert html.count('data-flag="position-bias"') == 1
    assert "exact two-sided binomial test" in html and "Holm-adjusted across annotators" in html
    assert "1 annotator flagged for position bias" in html
