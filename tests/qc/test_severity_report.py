"""The severity section of the study report: planted strict rater, confounded and balanced designs.

Numbers are cross-checked against analysis.severity on the same rows and against the truth.
"""

import numpy as np
import pytest
from django.urls import reverse

from analysis import severity
from annotation.models import Label, Membership
from qc import services
from qc.models import QualityReport
from tests.factories import MembershipFactory
from tests.qc import simulate
from tests.qc.severity_sim import STRICT_OFFSET, TRUE_DIFFERENCE, scored_study

pytestmark = pytest.mark.django_db


def _section(study):
    services.recompute(study.pk)
    return QualityReport.objects.get(study=study, kind="study").payload["severity"]


@pytest.fixture
def confounded(settings):
    settings.CONCORD_QC_BOOTSTRAP = 50
    return scored_study(confounded=True)


@pytest.fixture
def balanced(settings):
    settings.CONCORD_QC_BOOTSTRAP = 50
    return scored_study(confounded=False)


def test_planted_strict_rater_is_the_one_offset_far_below_zero(confounded):
    study, strict = confounded
    sev = _section(study)
    assert sev["identifiable"] and sev["n_raters"] == 5
    lowest = sev["raters"][0]
    assert lowest["annotator"] == strict.username
    # offsets are centred on the average rater: b_strict = -15 * 4/5 = -12, the others +3
    centred = STRICT_OFFSET * 4 / 5
    assert abs(lowest["offset"] - centred) < 2.5
    assert lowest["ci_high"] < 0 and lowest["excludes_zero"]
    assert "stricter" in lowest["reading"]
    for other in sev["raters"][1:]:
        assert abs(other["offset"] - (-STRICT_OFFSET / 5)) < 2.5


def test_offsets_equal_analysis_severity_on_the_same_labels(confounded):
    study, _ = confounded
    sev = _section(study)
    rows = list(
        Label.objects.filter(study=study, purpose="production").values_list(
            "unit_id", "annotator_id", "score"
        )
    )
    items, raters, scores = map(np.array, zip(*rows, strict=True))
    fit = severity.rater_offsets(items, raters, scores)
    stored = {r["annotator_id"]: r for r in sev["raters"]}
    for j, r in enumerate(fit.raters.tolist()):
        assert stored[r]["offset"] == pytest.approx(fit.offset_values[j])
        assert stored[r]["se"] == pytest.approx(fit.se[j])
        assert stored[r]["n"] == fit.n_per_rater[j]


def test_adjusted_difference_recovers_the_truth_where_the_raw_one_is_biased(confounded):
    study, _ = confounded
    sev = _section(study)
    (d,) = sev["differences"]
    assert (d["a"], d["b"]) == ("alpha", "beta")
    # The raw difference carries the strict rater's offset (about +10 points of bias) ...
    assert d["raw_ci_low"] > TRUE_DIFFERENCE + 3
    # ... the adjusted one covers the planted difference.
    assert d["adjusted_ci_low"] < TRUE_DIFFERENCE < d["adjusted_ci_high"]
    beta = next(s for s in sev["systems"] if s["system"] == "beta")
    assert beta["adjusted"] > beta["raw"] + 5  # beta was pulled down by who rated it
    assert sev["systems"][0]["n_items"] + sev["systems"][1]["n_items"] == sev["n_items"]


def test_confound_flag_fires_in_the_confounded_design_and_not_in_the_balanced_one(
    confounded, balanced
):
    sev = _section(confounded[0])
    assert sev["confound"]["confounded"]
    assert "confounded with who rated what" in sev["confound"]["reading"]
    calm = _section(balanced[0])
    assert not calm["confound"]["confounded"], calm["confound"]["warnings"]
    (d,) = calm["differences"]
    # balanced: offsets cancel, raw and adjusted agree closely and both cover the truth
    assert abs(d["raw"] - d["adjusted"]) < 2.5
    assert d["adjusted_ci_low"] < TRUE_DIFFERENCE < d["adjusted_ci_high"]


def test_a_disconnected_design_lists_its_components_and_fits_the_largest(settings):
    settings.CONCORD_QC_BOOTSTRAP = 50
    study = simulate.likert_study(n_prompts=8, n_annotators=3)
    # a second group of raters on new units only: two components
    from annotation.models import Unit
    from tests.factories import make_study  # noqa: F401
    from tests.qc.labels import add_labels

    loners = simulate.annotators(2, prefix=f"s{study.pk}lone")
    extra_units = list(Unit.objects.filter(study=study).order_by("-id")[:2])
    Label.objects.filter(unit__in=extra_units).delete()
    add_labels(
        study,
        [{"unit": u, "annotator": p, "score": 3.0} for u in extra_units for p in loners],
    )
    sev = _section(study)
    assert not sev["identifiable"]
    assert sev["n_components"] == 2
    assert [c["n_raters"] for c in sev["components"]] == [3, 2]
    assert "largest connected part" in sev["scope"]
    assert len(sev["raters"]) == 3


def test_severity_does_not_apply_to_categorical_tasks(settings):
    settings.CONCORD_QC_BOOTSTRAP = 50
    study, _ = simulate.categorical_study(n_prompts=6)
    sev = _section(study)
    assert sev["applies"] is False


def test_dashboard_shows_the_severity_table_forest_plot_and_confound_warning(client, confounded):
    study, strict = confounded
    services.recompute(study.pk)
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    client.force_login(lead)
    html = client.get(reverse("study-dashboard", args=[study.token])).content.decode()
    assert 'id="severity"' in html
    assert strict.username in html
    assert 'id="spec-severity-forest"' in html
    assert "confounded with who rated what" in html
    assert "Adjusted mean" in html
