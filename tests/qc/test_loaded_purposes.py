"""Which labels reach an aggregate: blind repeats, attention checks, qualification and calibration
labels never do (they feed rater quality), whatever values they carry.

Every other qc test creates production labels only, so a loader that let repeats or attention
labels in would pass them all; these tests add such labels with contrary values and check that
agreement, majority vote and Dawid-Skene do not move.
"""

import numpy as np
import pytest

from annotation.models import Unit
from qc import loaders
from qc.reports import build_report
from tests.qc import simulate
from tests.qc.labels import add_labels

pytestmark = pytest.mark.django_db

NOT_AGGREGATED = ("repeat", "attention", "qualification", "calibration")


def _aggregates(study) -> dict:
    snapshot = loaders.load_snapshot(study)
    report = build_report(snapshot, loaders.report_config(study))
    aggregation = report.summary["aggregation"]
    return {
        "labels": sorted(snapshot.label_id.tolist()),
        "agreement": [
            (s["key"], s.get("value"), s.get("n"))
            for s in report.summary["agreement"]["statistics"]
        ],
        "classes": aggregation["class_counts"],
        "n_items": aggregation["n_items"],
        "n_disagree": aggregation["n_disagree"],
    }


def _contrary(choice: str) -> str:
    return "unsafe" if choice == "safe" else "safe"


@pytest.mark.parametrize("purpose", NOT_AGGREGATED)
def test_labels_of_this_purpose_never_reach_agreement_votes_or_dawid_skene(settings, purpose):
    settings.CONCORD_QC_BOOTSTRAP = 50
    study, truth = simulate.categorical_study(n_prompts=16, n_annotators=4, accuracy=0.9)
    before = _aggregates(study)
    people = simulate.annotators(2, prefix=f"extra{purpose}")
    units = list(Unit.objects.filter(study=study).order_by("id"))
    # Contrary values on every unit from new people and again from each unit's own raters:
    # enough to flip every vote, every item's agreement and Dawid-Skene if they were counted.
    rows = [
        {"unit": u, "annotator": p, "choice": _contrary(truth[u.pk])} for u in units for p in people
    ]
    add_labels(study, rows, purpose=purpose)

    after = _aggregates(study)

    assert after == before


def test_the_snapshot_holds_no_label_of_a_non_aggregated_purpose():
    study, truth = simulate.categorical_study(n_prompts=6, n_annotators=3)
    extra = simulate.annotators(1, prefix="outsider")[0]
    units = list(Unit.objects.filter(study=study))
    planted = {
        purpose: add_labels(
            study,
            [{"unit": u, "annotator": extra, "choice": truth[u.pk]} for u in units],
            purpose=purpose,
        )
        for purpose in NOT_AGGREGATED
    }

    loaded = set(loaders.load_snapshot(study).label_id.tolist())

    for purpose, labels in planted.items():
        assert loaded.isdisjoint(lab.pk for lab in labels), purpose
    assert np.all(
        np.isin(
            list(loaded),
            [lab.pk for lab in study.labels.filter(purpose__in=("production", "gold"))],
        )
    )
