"""The sample files shipped in samples/ import cleanly, in the order the README gives."""

from pathlib import Path

import pytest
from django.conf import settings

from annotation.imports import services
from annotation.models import GoldAnswer, Output, Unit
from annotation.services import setup
from tests.factories import StudyFactory

pytestmark = pytest.mark.django_db

SAMPLES = Path(settings.BASE_DIR) / "samples"


def load(study, kind, name):
    with open(SAMPLES / name, "rb") as stream:
        job = services.import_file(study, kind, stream, name)
    assert job.status == "done", (name, job.errors)
    return job


@pytest.mark.parametrize("kind", ["likert", "pairwise"])
def test_the_sample_files_make_a_study_ready_to_build(kind):
    study = StudyFactory(status="draft", task_kind=kind, overlap=2)
    load(study, "systems", "systems.csv")
    load(study, "prompts", "prompts.csv")
    assert load(study, "outputs", "outputs.csv").created == 36
    load(study, "comparisons", "comparisons.csv")
    made = setup.build_units(study)
    assert made == (36 if kind == "likert" else 12 * 3)
    if kind == "likert":
        load(study, "gold", "gold.csv")
        assert GoldAnswer.objects.filter(unit__study=study).count() == 4
        assert Unit.objects.filter(study=study, role="gold").count() == 4
    assert Output.objects.get(external_id="q07-cedar").prompt.language == "de"
