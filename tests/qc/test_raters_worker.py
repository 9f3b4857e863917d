"""A real Celery worker stores the rater reports beside the study report, and an audit verdict
(no new label) brings a fresh rater report from the worker too."""

import pytest

from qc.models import QualityReport, RaterReport
from qc.raters import services as review
from tests.conftest import wait_for
from tests.factories import UserFactory
from tests.qc.rater_sim import monitored_study

pytestmark = [pytest.mark.worker, pytest.mark.postgres, pytest.mark.redis]


def test_worker_stores_rater_reports_and_recomputes_them_after_an_audit_verdict(
    worker_process, broker_mode, settings
):
    from qc.services import request_recompute

    settings.CONCORD_QC_BOOTSTRAP = 20
    study, watched, peers, _ = monitored_study([0.9] * 4, seed=2, n_peers=2)
    request_recompute(study, None)
    first = wait_for(
        lambda: QualityReport.objects.filter(study=study, kind="raters").first(), timeout=90
    )
    assert first.compute_seconds >= 0
    rows = RaterReport.objects.filter(study=study, fingerprint=first.fingerprint)
    assert {r.annotator_id for r in rows} == {watched.pk, *(p.pk for p in peers)}

    expert = UserFactory()
    audit = review.draw_audit(study, "random", 4, expert, seed=1)
    for item in audit.items.all():
        review.check_audit_item(item, "wrong", expert)  # schedules a recomputation on commit

    def refreshed():
        latest = QualityReport.objects.filter(study=study, kind="raters").order_by("-id").first()
        done = latest and latest.payload["audits"]["pool_error"]["checked"] == 4
        return latest if done else None

    second = wait_for(refreshed, timeout=90)
    assert second.fingerprint != first.fingerprint
    assert second.payload["audits"]["pool_error"]["wrong"] == 4
    log = worker_process.log_path.read_text()
    assert "succeeded" in log, log
