"""The report pipeline: debounced scheduling on commit, idempotent runs keyed by snapshot."""

import threading

import pytest
from django.db import connection

from concord.celery import app as celery_app
from qc import services, tasks
from qc.models import QualityReport, RecomputeState
from tests.qc import simulate
from tests.qc.labels import add_labels


@pytest.fixture
def sent(monkeypatch):
    """Record recompute tasks instead of running them (as if a broker queued them)."""
    calls = []
    monkeypatch.setattr(
        tasks.recompute_study, "apply_async", lambda *a, **kw: calls.append((a, kw))
    )
    return calls


@pytest.mark.django_db(transaction=True)
def test_a_burst_of_committed_labels_queues_one_recomputation(sent):
    study, _ = simulate.categorical_study(n_prompts=5)
    people = simulate.annotators(3, prefix="burst")
    units = list(study.units.order_by("id"))
    for person in people:  # three separate transactions, each sending label_submitted
        add_labels(study, [{"unit": units[0], "annotator": person, "choice": "safe"}], signal=True)
    assert len(sent) == 1
    assert sent[0][1]["args"] == [study.pk]
    assert sent[0][1]["countdown"] == services.debounce_seconds()


@pytest.mark.django_db(transaction=True)
def test_nothing_is_queued_when_the_label_transaction_rolls_back(sent):
    from django.db import transaction

    study, _ = simulate.categorical_study(n_prompts=3)
    (person,) = simulate.annotators(1, prefix="rollback")
    with pytest.raises(RuntimeError), transaction.atomic():
        add_labels(
            study,
            [{"unit": study.units.first(), "annotator": person, "choice": "safe"}],
            signal=True,
        )
        raise RuntimeError("abort")
    assert sent == []


@pytest.mark.django_db(transaction=True)
def test_the_run_clears_the_marker_so_later_labels_schedule_the_next_run(sent):
    study, _ = simulate.categorical_study(n_prompts=4)
    assert services.schedule_recompute(study.pk) is True
    assert services.schedule_recompute(study.pk) is False
    services.recompute(study.pk)
    assert services.schedule_recompute(study.pk) is True
    assert len(sent) == 2


@pytest.mark.django_db(transaction=True)
def test_eager_mode_recomputes_right_after_commit():
    assert celery_app.conf.task_always_eager
    study, _ = simulate.categorical_study(n_prompts=6)
    (person,) = simulate.annotators(1, prefix="eager")
    add_labels(
        study, [{"unit": study.units.first(), "annotator": person, "choice": "unsafe"}], signal=True
    )
    report = QualityReport.objects.get(study=study, kind=QualityReport.SUMMARY)
    assert report.label_count == study.labels.count()
    assert QualityReport.objects.filter(study=study, kind=QualityReport.ITEMS).count() == 1
    state = RecomputeState.objects.get(study=study)
    assert state.pending_since is None and state.progress == 100


@pytest.mark.django_db
def test_two_runs_on_one_snapshot_store_one_report():
    study, _ = simulate.categorical_study(n_prompts=6)
    assert services.recompute(study.pk) == "stored"
    assert services.recompute(study.pk) == "exists"
    # summary + items, once; and the rater report beside them, once
    assert QualityReport.objects.filter(study=study).count() == 3


@pytest.mark.django_db
def test_new_labels_make_a_new_snapshot_and_the_old_report_stays():
    study, _ = simulate.categorical_study(n_prompts=6)
    services.recompute(study.pk)
    (person,) = simulate.annotators(1, prefix="late")
    add_labels(study, [{"unit": study.units.first(), "annotator": person, "choice": "safe"}])
    assert services.recompute(study.pk) == "stored"
    counts = list(
        QualityReport.objects.filter(study=study, kind=QualityReport.SUMMARY)
        .order_by("label_count")
        .values_list("label_count", flat=True)
    )
    assert counts == [18, 19]


@pytest.mark.django_db
def test_a_run_that_dies_before_storing_leaves_the_previous_report(monkeypatch):
    study, _ = simulate.categorical_study(n_prompts=6)
    services.recompute(study.pk)
    before = list(QualityReport.objects.filter(study=study).values_list("id", "fingerprint"))
    (person,) = simulate.annotators(1, prefix="crash")
    add_labels(study, [{"unit": study.units.first(), "annotator": person, "choice": "safe"}])

    def die(*args, **kwargs):
        raise SystemExit("worker killed")

    monkeypatch.setattr(services, "build_report", die)
    with pytest.raises(SystemExit):
        services.recompute(study.pk)
    assert list(QualityReport.objects.filter(study=study).values_list("id", "fingerprint")) == (
        before
    )
    monkeypatch.undo()
    assert services.recompute(study.pk) == "stored"


@pytest.mark.django_db
def test_store_is_all_or_nothing(monkeypatch):
    study, _ = simulate.categorical_study(n_prompts=4)
    original = QualityReport.objects.get_or_create
    calls = []

    def second_fails(**kwargs):
        calls.append(kwargs["kind"])
        if kwargs["kind"] == QualityReport.ITEMS:
            raise RuntimeError("killed between the two rows")
        return original(**kwargs)

    monkeypatch.setattr(QualityReport.objects, "get_or_create", second_fails)
    with pytest.raises(RuntimeError):
        services.recompute(study.pk)
    assert calls == [QualityReport.SUMMARY, QualityReport.ITEMS]
    assert not QualityReport.objects.filter(study=study).exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_triggers_store_one_report_per_snapshot():
    study, _ = simulate.categorical_study(n_prompts=10)
    results, errors = [], []
    barrier = threading.Barrier(4)

    def run():
        try:
            barrier.wait()
            results.append(services.recompute(study.pk))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results.count("stored") == 1
    assert QualityReport.objects.filter(study=study, kind=QualityReport.SUMMARY).count() == 1
    assert QualityReport.objects.filter(study=study, kind=QualityReport.ITEMS).count() == 1


@pytest.mark.django_db
def test_beat_safety_net_schedules_open_studies_only(sent):
    live, _ = simulate.categorical_study(n_prompts=3)
    closed, _ = simulate.categorical_study(n_prompts=3, status="closed")
    tasks.recompute_all_live_studies()
    assert [kw["args"] for _a, kw in sent] == [[live.pk]]
    del closed
