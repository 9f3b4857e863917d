"""Reports cut by annotator pool and by guide version: the snapshot holds only those labels,
and the cut is part of the report's settings (so a cut report never passes for the full one)."""

import uuid

import pytest

from annotation.models import Enrolment, Label
from annotation.services import assignment as engine
from annotation.services import guides
from annotation.services.submission import submit_label
from qc import loaders, services
from tests.training.helpers import labelled_study

pytestmark = pytest.mark.django_db


def test_a_pool_cut_keeps_only_that_pools_labels():
    study, raters = labelled_study(n_prompts=3, raters=3)
    Enrolment.objects.filter(pk=raters[0].pk).update(pool=Enrolment.Pool.EXPERT)
    full = loaders.load_snapshot(study)
    assert len(full.label_id) == 9
    services.set_report_cut(study, pool=Enrolment.Pool.EXPERT)
    cut = loaders.load_snapshot(study)
    assert set(cut.annotator) == {raters[0].user_id} and len(cut.label_id) == 3
    assert loaders.report_config(study).pool == "expert"
    assert (
        loaders.report_config(study).settings_hash
        != loaders.ReportConfig(
            **{**loaders.report_config(study).__dict__, "pool": ""}
        ).settings_hash
    )


def test_a_guide_version_cut_keeps_only_labels_made_under_it():
    study, raters = labelled_study(n_prompts=2, raters=2, overlap=3)
    guides.publish_version(study, body="v1")
    late = Enrolment.objects.create(
        study=study, user=raters[0].user.__class__.objects.create(username="late")
    )
    a = engine.next_assignment(late.user, study)
    submit_label(
        annotator=late.user,
        assignment_token=a.token,
        data={"choice": "safe"},
        idempotency_key=uuid.uuid4(),
    )
    services.set_report_cut(study, guide_version=1)
    cut = loaders.load_snapshot(study)
    assert list(cut.label_id) == list(
        Label.objects.filter(guide_version__number=1).values_list("id", flat=True)
    )
    assert len(cut.label_id) == 1


def test_a_bad_cut_is_refused():
    study, _ = labelled_study(n_prompts=1, raters=1)
    with pytest.raises(ValueError, match="pool"):
        services.set_report_cut(study, pool="aliens")
    with pytest.raises(ValueError, match="guide_version"):
        services.set_report_cut(study, guide_version=4)
