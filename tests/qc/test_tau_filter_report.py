"""The pre-registered tau filter as the lead's report applies it: an annotator whose
P[X>Y] + P[Y>X] exceeds tau on ANY comparison leaves every comparison, and a sum of exactly tau
stays (Ethayarajh & Jurafsky 2022 drop only those above the threshold)."""

import pytest

from annotation.models import Comparison, Unit
from qc import loaders
from qc.reports import build_report
from tests.factories import make_study
from tests.qc.labels import add_spa_label
from tests.qc.simulate import annotators

pytestmark = pytest.mark.django_db


def test_the_report_drops_an_annotator_over_tau_on_one_comparison_from_all_and_keeps_exactly_tau(
    settings,
):
    settings.CONCORD_QC_BOOTSTRAP = 50
    study = make_study(
        "spa",
        n_prompts=5,
        systems=("s0", "s1", "s2"),
        spa_both_directions=True,
        spa_tau=1.1,
        spa_exposure_m=5,
        spa_collect_likert=False,
        overlap=20,
    )
    first, second = Comparison.objects.filter(study=study).order_by("position", "id")
    unit = Unit.objects.get(study=study)
    people = annotators(8, prefix=f"tau{study.pk}-")
    for i, person in enumerate(people[:6]):  # honest: the two directions sum to 100
        p = 55 + i
        add_spa_label(
            study,
            unit,
            person,
            [
                (first, False, p),
                (first, True, 100 - p),
                (second, False, p),
                (second, True, 100 - p),
            ],
        )
    on_the_line, over_once = people[6], people[7]
    add_spa_label(  # 60 + 50 = 110: exactly tau, kept
        study,
        unit,
        on_the_line,
        [(first, False, 60), (first, True, 50), (second, False, 60), (second, True, 50)],
    )
    add_spa_label(  # fine on the first comparison, 120 on the second: dropped from both
        study,
        unit,
        over_once,
        [(first, False, 60), (first, True, 40), (second, False, 70), (second, True, 50)],
    )

    report = build_report(loaders.load_snapshot(study), loaders.report_config(study))
    spa = report.summary["spa"]

    assert spa["preregistered_variant"] == "filtered"
    assert spa["dropped_annotators"] == 1
    assert [row["spa"]["n"] for row in spa["tables"]["filtered"]] == [7, 7]
    assert [row["spa"]["n"] for row in spa["tables"]["unfiltered"]] == [8, 8]
