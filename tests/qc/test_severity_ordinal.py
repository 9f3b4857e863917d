"""Severity on an ordinal study: only when the lead treats the levels as interval, and said so.

Off (the default) the report has no severity offsets and the page gives a one-line reason; on,
the levels are scored (0..k-1, or their stated numeric values) and the planted strict rater is
recovered.
"""

import pytest
from django.urls import reverse

from annotation.models import Membership
from qc import services
from qc.models import QualityReport
from qc.reports.severity import ordinal_scores
from tests.factories import MembershipFactory
from tests.qc.severity_sim import ORDINAL_STRICT, ordinal_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(settings):
    settings.CONCORD_QC_BOOTSTRAP = 50
    return ordinal_study()


def _summary(study):
    services.recompute(study.pk)
    return QualityReport.objects.filter(study=study, kind="study").latest().payload


def _page(study):
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    from django.test import Client

    client = Client()
    client.force_login(lead)
    return client.get(reverse("study-dashboard", args=[study.token])).content.decode()


def test_an_ordinal_study_has_no_severity_by_default_and_says_why_in_one_line(study):
    study, _ = study
    sev = _summary(study)["severity"]
    assert sev["applies"] is False and sev["ordinal"] is True
    assert "raters" not in sev
    html = _page(study)
    assert 'id="severity"' not in html
    assert html.count("data-severity-off") == 1
    assert "treat the levels as equally spaced" in html


def test_with_the_leads_choice_the_planted_strict_rater_is_recovered_and_the_page_says_interval(
    study,
):
    study, strict = study
    services.set_report_options(
        study, unanimous_view=False, clamp_gold=False, ordinal_as_interval=True
    )
    summary = _summary(study)
    assert summary["settings"]["ordinal_as_interval"] is True
    sev = summary["severity"]
    assert sev["applies"] is True and sev["identifiable"] and sev["n_raters"] == 5
    assert "treated as interval" in sev["interval_note"]
    assert "the lead's choice" in sev["interval_note"]
    assert "Poor = 0" in sev["interval_note"] and "Excellent = 4" in sev["interval_note"]
    lowest = sev["raters"][0]
    assert lowest["annotator"] == strict.username
    # centred on the average of five raters: about -1.5 * 4/5 = -1.2 levels (rounding shrinks it)
    assert ORDINAL_STRICT * 4 / 5 - 0.4 < lowest["offset"] < ORDINAL_STRICT * 4 / 5 + 0.5
    assert lowest["excludes_zero"]
    assert all(r["offset"] > -0.5 for r in sev["raters"][1:])
    assert "levels lower (stricter)" in lowest["reading"]
    assert sev["confound"]["confounded"]
    (d,) = sev["differences"]
    assert d["adjusted_ci_low"] < 0 < d["adjusted_ci_high"]  # no true system difference
    assert d["raw_ci_low"] > 0  # beta pulled down by the strict rater
    html = _page(study)
    assert 'id="severity"' in html and "data-severity-interval" in html
    assert "data-severity-off" not in html


def test_the_option_is_ignored_outside_ordinal_studies():
    from tests.qc.severity_sim import scored_study

    study, _ = scored_study(confounded=False, n_prompts=4)
    services.set_report_options(
        study, unanimous_view=False, clamp_gold=False, ordinal_as_interval=True
    )
    assert study.report_options.ordinal_as_interval is False


def test_levels_are_scored_by_stated_numbers_when_all_are_numbers_else_by_position():
    stated, how = ordinal_scores(("1", "2", "5"))
    assert stated == {"1": 1.0, "2": 2.0, "5": 5.0} and how == "their stated values"
    ranked, how = ordinal_scores(("low", "medium", "high"))
    assert ranked == {"low": 0.0, "medium": 1.0, "high": 2.0} and "scale order" in how
