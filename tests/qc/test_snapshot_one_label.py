"""A study with a single counted label still has its day (qc.loaders.local_days). Found by the
mutation run of qc/loaders.py (bench/MUTATION.md, issue 17)."""

import pytest
from django.utils import timezone

from annotation.models import Study, Unit
from qc import loaders
from tests.factories import UserFactory, make_study
from tests.qc.labels import add_labels

pytestmark = pytest.mark.django_db


def test_one_label_is_one_day_with_one_annotator():
    study = make_study(Study.TaskKind.CATEGORICAL, n_prompts=1, systems=("alpha",))
    unit = Unit.objects.get(study=study)
    (label,) = add_labels(study, [{"unit": unit, "annotator": UserFactory(), "choice": "safe"}])
    today = timezone.localdate(label.created_at).isoformat()
    assert loaders.load_snapshot(study).days == [(today, 1, label.pk, 1)]
