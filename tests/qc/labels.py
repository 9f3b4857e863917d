"""Labels made directly with the ORM (Assignment + Label rows), independent of the engine's API."""

import uuid
from datetime import timedelta

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotation.models import Assignment, Label, OutputRating, SpaAnswer
from annotation.signals import label_submitted


def _next_position(study, annotator) -> int:
    top = Assignment.objects.filter(study=study, annotator=annotator).aggregate(p=Max("position"))
    return (top["p"] or 0) + 1


def add_labels(study, rows, purpose="production", signal=False) -> list[Label]:
    """rows: dicts with unit, annotator and any of choice, score, winner (System), created_at.

    One bulk insert of assignments and labels; with signal=True `label_submitted` is sent inside
    the transaction, as the engine does.
    """
    now = timezone.now()
    positions: dict[int, int] = {}
    with transaction.atomic():
        assignments = []
        for row in rows:
            annotator = row["annotator"]
            if annotator.pk not in positions:
                positions[annotator.pk] = _next_position(study, annotator)
            else:
                positions[annotator.pk] += 1
            assignments.append(
                Assignment(
                    study=study,
                    unit=row["unit"],
                    annotator=annotator,
                    purpose=purpose,
                    status=Assignment.Status.SUBMITTED,
                    position=positions[annotator.pk],
                    leased_at=now,
                    expires_at=now + timedelta(minutes=30),
                    closed_at=now,
                )
            )
        Assignment.objects.bulk_create(assignments)
        labels = [
            Label(
                assignment=a,
                study=study,
                unit=row["unit"],
                annotator=row["annotator"],
                purpose=purpose,
                idempotency_key=uuid.uuid4(),
                choice=row.get("choice", ""),
                score=row.get("score"),
                winner=row.get("winner"),
            )
            for a, row in zip(assignments, rows, strict=True)
        ]
        Label.objects.bulk_create(labels)
        stamped = [
            (lab, row["created_at"])
            for lab, row in zip(labels, rows, strict=True)
            if row.get("created_at")
        ]
        for lab, when in stamped:
            Label.objects.filter(pk=lab.pk).update(created_at=when)
        if signal:
            for lab in labels:
                label_submitted.send(sender=Label, label=lab, study_id=study.id)
    return labels


def add_spa_label(study, unit, annotator, answers, ratings=(), signal=False) -> Label:
    """answers: (comparison, reverse, percent); ratings: (output, Likert score)."""
    with transaction.atomic():
        (label,) = add_labels(study, [{"unit": unit, "annotator": annotator}])
        SpaAnswer.objects.bulk_create(
            SpaAnswer(label=label, comparison=c, reverse=r, probability=p, position=i)
            for i, (c, r, p) in enumerate(answers)
        )
        OutputRating.objects.bulk_create(
            OutputRating(label=label, output=o, score=s) for o, s in ratings
        )
        if signal:
            label_submitted.send(sender=Label, label=label, study_id=study.id)
    return label
