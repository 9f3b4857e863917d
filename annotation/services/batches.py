"""Fixed batches of training work (qualification attempts, recalibrations, calibration sessions):
creating them in a seeded order and handing out their tasks one lease at a time.

Leases come from the annotator's own position counter (their Enrolment row is locked, as the
engine locks it), with the same presentation draw as production, so the task UI is the same.
"""

import random
from datetime import timedelta

from django.db import connection, transaction
from django.utils import timezone

from annotation.models import Assignment, Enrolment, TrainingBatch, TrainingTask
from annotation.services.assignment import present

PURPOSE = {
    TrainingBatch.Kind.QUALIFICATION: Assignment.Purpose.QUALIFICATION,
    TrainingBatch.Kind.RECALIBRATION: Assignment.Purpose.CALIBRATION,
    TrainingBatch.Kind.CALIBRATION: Assignment.Purpose.CALIBRATION,
}


def create_batch(*, study, annotator, kind: str, units, seed: int | None = None, **fields):
    """A batch of `units` for one annotator, in a seeded random order."""
    ordered = sorted({u.pk for u in units})
    random.Random(seed).shuffle(ordered)
    batch = TrainingBatch.objects.create(study=study, annotator=annotator, kind=kind, **fields)
    TrainingTask.objects.bulk_create(
        TrainingTask(batch=batch, unit_id=unit_id, position=i)
        for i, unit_id in enumerate(ordered, 1)
    )
    return batch


def progress(batch: TrainingBatch) -> tuple[int, int]:
    """(tasks submitted, tasks in the batch)."""
    tasks = batch.tasks.all()
    done = tasks.filter(assignment__status=Assignment.Status.SUBMITTED).count()
    return done, tasks.count()


def is_complete(batch: TrainingBatch) -> bool:
    done, total = progress(batch)
    return total > 0 and done == total


@transaction.atomic
def next_task(batch: TrainingBatch, *, now=None) -> Assignment | None:
    """The batch's open lease, else a lease on its first unanswered task; None when every task
    was answered."""
    now = now or timezone.now()
    enrolment = Enrolment.objects.select_for_update().get(
        study_id=batch.study_id, user_id=batch.annotator_id
    )
    study = batch.study
    for task in batch.tasks.select_related("assignment").order_by("position"):
        a = task.assignment
        if a is not None and a.status == Assignment.Status.SUBMITTED:
            continue
        if a is not None and a.status == Assignment.Status.LEASED and a.expires_at > now:
            return a
        position = enrolment.positions_issued + 1
        presentation, texts = present(
            connection.cursor(), study, task.unit_id, enrolment.queue_seed, position
        )
        version = study.current_guide()
        a = Assignment.objects.create(
            study=study,
            unit_id=task.unit_id,
            annotator_id=batch.annotator_id,
            purpose=PURPOSE[batch.kind],
            position=position,
            presentation=presentation,
            guide_version=version,
            leased_at=now,
            expires_at=now + timedelta(seconds=study.lease_seconds),
        )
        Enrolment.objects.filter(pk=enrolment.pk).update(positions_issued=position)
        task.assignment = a
        task.save(update_fields=["assignment"])
        a.texts = texts
        return a
    return None


def answered(batch: TrainingBatch):
    """(task, label) for each answered task of the batch, in order."""
    from annotation.models import Label

    tasks = list(batch.tasks.select_related("assignment").order_by("position"))
    labels = {
        lab.assignment_id: lab
        for lab in Label.objects.filter(assignment_id__in=[t.assignment_id for t in tasks])
    }
    return [(t, labels[t.assignment_id]) for t in tasks if t.assignment_id in labels]
