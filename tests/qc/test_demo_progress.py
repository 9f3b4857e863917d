"""The demo's overlap is reachable by its raters: after the simulated crowd, units are complete
and work is left for the demo annotators."""

import io

import pytest
from django.core.management import call_command

from annotation.models import Enrolment, Study, Unit
from qc import selectors

pytestmark = pytest.mark.django_db


def test_every_demo_study_can_complete_its_units_and_shows_completed_units(settings):
    settings.CONCORD_QC_BOOTSTRAP = 50
    call_command("load_demo", "--simulate", stdout=io.StringIO())
    for study in Study.objects.all():
        enrolled = Enrolment.objects.filter(study=study).count()
        overlaps = set(
            Unit.objects.filter(study=study, role="production").values_list("overlap", flat=True)
        )
        assert max(overlaps) <= enrolled, study.name  # reachable by the people enrolled
        progress = selectors.latest_report(study).payload["progress"]
        units = progress["units"]
        if study.task_kind == Study.TaskKind.SPA:
            # one fixed batch every annotator reads: the demo annotators complete it
            assert units["labels_needed"] == 3, units
        else:
            assert 0 < units["complete"] < units["total"], (study.name, units)
        assert units["complete"] + units["in_progress"] + units["waiting"] == units["total"]
