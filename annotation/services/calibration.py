"""Calibration: sessions where chosen raters label one small batch independently and then see
the distribution of labels per item (never who gave which), and the recalibration batch an
annotator labels after a guide version that requires it.

Session and recalibration labels have purpose "calibration": never production, never in overlap.
"""

from collections import Counter
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from annotation.models import (
    CalibrationItem,
    CalibrationSession,
    Enrolment,
    GuideVersion,
    Study,
    TrainingBatch,
    Unit,
)
from annotation.services import batches, guides
from annotation.services.training_items import (
    TrainingError,
    answer_text,
    first_systems,
    item_texts,
    label_key,
    training_copy,
)

CALIBRATION = TrainingBatch.Kind.CALIBRATION
RECALIBRATION = TrainingBatch.Kind.RECALIBRATION
MAX_SESSION_ITEMS = 30


# --- recalibration ------------------------------------------------------------------------------


def recalibration_due(study: Study, user) -> GuideVersion | None:
    """The newest guide version that requires recalibration, published after the annotator
    enrolled, that they have not calibrated on yet (the engine's gate, as a version)."""
    enrolment = Enrolment.objects.select_related("calibrated_guide_version").get(
        study=study, user=user
    )
    version = (
        study.guide_versions.filter(
            requires_recalibration=True, published_at__gt=enrolment.created_at
        )
        .order_by("-number")
        .first()
    )
    done = enrolment.calibrated_guide_version
    if version is None or (done is not None and done.number >= version.number):
        return None
    return version


@transaction.atomic
def start_recalibration(study: Study, user, *, seed: int | None = None) -> TrainingBatch:
    """The annotator's recalibration batch for the version that gates them (made on first call).

    Raises TrainingError when no recalibration is due."""
    Enrolment.objects.select_for_update().get(study=study, user=user)
    version = recalibration_due(study, user)
    if version is None:
        raise TrainingError("recalibration", "No recalibration is due: carry on.")
    existing = TrainingBatch.objects.filter(
        annotator=user, kind=RECALIBRATION, guide_version=version
    ).first()
    if existing is not None:
        return existing
    return batches.create_batch(
        study=study,
        annotator=user,
        kind=RECALIBRATION,
        units=list(version.recalibration_units.all()),
        seed=seed,
        guide_version=version,
    )


@transaction.atomic
def finish_recalibration(batch: TrainingBatch) -> TrainingBatch:
    """Once every item is answered: the annotator is calibrated on the current guide."""
    batch = TrainingBatch.objects.select_for_update().get(pk=batch.pk)
    if batch.finished_at is not None or not batches.is_complete(batch):
        return batch
    batch.finished_at = timezone.now()
    batch.save(update_fields=["finished_at"])
    Enrolment.objects.filter(study_id=batch.study_id, user_id=batch.annotator_id).update(
        calibrated_guide_version=guides.current_version(batch.study)
    )
    return batch


# --- sessions ---------------------------------------------------------------------------------


@transaction.atomic
def open_session(study: Study, *, title: str, raters, units, author=None) -> CalibrationSession:
    """A session on `units` (real items; raters see calibration copies) for `raters`, who must
    be enrolled in the study. Each rater's batch is made when they first open it."""
    if not title.strip():
        raise TrainingError("title", "give the session a title")
    raters = list(raters)
    if len(raters) < 2:
        raise TrainingError("raters", "choose at least two raters")
    enrolled = set(
        Enrolment.objects.filter(study=study, user__in=raters).values_list("user_id", flat=True)
    )
    for r in raters:
        if r.pk not in enrolled:
            raise TrainingError("raters", f"{r.get_username()} is not enrolled in this study")
    units = list({u.pk: u for u in units}.values())
    if not units:
        raise TrainingError("items", "choose the items of the batch")
    if len(units) > MAX_SESSION_ITEMS:
        raise TrainingError("items", f"a session batch has at most {MAX_SESSION_ITEMS} items")
    for u in units:
        if u.study_id != study.pk:
            raise TrainingError("items", "an item belongs to another study")
    session = CalibrationSession.objects.create(study=study, title=title.strip(), created_by=author)
    session.raters.set(raters)
    CalibrationItem.objects.bulk_create(
        CalibrationItem(
            session=session,
            unit=training_copy(u, Unit.Role.CALIBRATION),
            source_unit=u if u.role != Unit.Role.CALIBRATION else None,
            position=i,
        )
        for i, u in enumerate(units, 1)
    )
    return session


def is_rater(session: CalibrationSession, user) -> bool:
    return session.raters.filter(pk=user.pk).exists()


@transaction.atomic
def start_session_batch(session: CalibrationSession, user, *, seed=None) -> TrainingBatch:
    """The rater's batch of the session (made on first call)."""
    if not is_rater(session, user):
        raise TrainingError("session", "You are not a rater in this session.")
    existing = TrainingBatch.objects.filter(session=session, annotator=user).first()
    if existing is not None:
        return existing
    return batches.create_batch(
        study=session.study,
        annotator=user,
        kind=CALIBRATION,
        units=[i.unit for i in session.items.select_related("unit")],
        seed=seed,
        session=session,
    )


def rater_finished(session: CalibrationSession, user) -> bool:
    batch = TrainingBatch.objects.filter(session=session, annotator=user).first()
    return batch is not None and batches.is_complete(batch)


@dataclass(frozen=True)
class ItemSplit:
    """One session item: its texts and how the raters' labels fall (counts, never names)."""

    item: CalibrationItem
    text: object
    split: tuple[tuple[str, int], ...]
    n: int
    disagreement: float
    rulings: tuple = ()


def distribution(session: CalibrationSession) -> list[ItemSplit]:
    """Per item the distribution of submitted labels, most disputed first (then most labelled).

    Shows counts only: no rater names, no order of submission."""
    study = session.study
    items = list(session.items.select_related("unit"))
    runs = list(session.batches.all())
    labels_by_unit: dict[int, Counter] = {i.unit_id: Counter() for i in items}
    firsts = first_systems([i.unit_id for i in items]) if study.is_pairwise else {}
    for run in runs:
        for task, label in batches.answered(run):
            if task.unit_id in labels_by_unit:
                key = label_key(study, label, firsts.get(task.unit_id))
                labels_by_unit[task.unit_id][answer_text(study, key)] += 1
    texts = item_texts([i.unit_id for i in items])
    drafted: dict[int, list] = {}
    for ruling in session.rulings.prefetch_related("examples"):
        for u in ruling.examples.all():
            drafted.setdefault(u.pk, []).append(ruling)
    out = []
    for item in items:
        counter = labels_by_unit[item.unit_id]
        n = sum(counter.values())
        top = counter.most_common()
        out.append(
            ItemSplit(
                item=item,
                text=texts.get(item.unit_id),
                split=tuple(sorted(top, key=lambda kv: (-kv[1], kv[0]))),
                n=n,
                disagreement=(1 - top[0][1] / n) if n else 0.0,
                rulings=tuple(drafted.get(item.unit_id, ())),
            )
        )
    out.sort(key=lambda s: (-s.disagreement, -s.n, s.item.position))
    return out


def progress(session: CalibrationSession) -> list[tuple[object, int, int]]:
    """(rater, done, total) for each rater of the session, by username."""
    total = session.items.count()
    runs = {b.annotator_id: b for b in session.batches.all()}
    out = []
    for rater in session.raters.order_by("username"):
        run = runs.get(rater.pk)
        done = batches.progress(run)[0] if run else 0
        out.append((rater, done, total))
    return out


def record_ruling(session: CalibrationSession, item: CalibrationItem, *, title, text, example=""):
    """A draft ruling against one item of the session (published with the session)."""
    if item.session_id != session.pk:
        raise TrainingError("item", "this item is not in the session")
    if session.status != CalibrationSession.Status.OPEN:
        raise TrainingError("session", "this session was published; open a new one")
    return guides.record_ruling(
        session.study,
        title=title,
        text=text,
        example=example,
        examples=[item.unit],
        session=session,
    )


@transaction.atomic
def publish_session(
    session: CalibrationSession,
    *,
    body: str,
    changes: str = "",
    requires_recalibration: bool = False,
    recalibration_units=None,
    author=None,
    seed=None,
) -> GuideVersion:
    """Publish the session's draft rulings as the next guide version (see
    guides.publish_version); the session is closed with a link to it."""
    session = CalibrationSession.objects.select_for_update().get(pk=session.pk)
    if session.status != CalibrationSession.Status.OPEN:
        raise TrainingError("session", "this session was already published")
    drafts = list(guides.draft_rulings(session.study, session))
    if not drafts:
        raise TrainingError("rulings", "record at least one ruling before publishing")
    version = guides.publish_version(
        session.study,
        body=body,
        changes=changes,
        include_drafts=drafts,
        requires_recalibration=requires_recalibration,
        recalibration_units=recalibration_units,
        author=author,
        seed=seed,
    )
    session.status = CalibrationSession.Status.PUBLISHED
    session.published_version = version
    session.save(update_fields=["status", "published_version"])
    return version


def sessions_for_rater(study: Study, user):
    """Open sessions of the study the user rates in."""
    return study.calibration_sessions.filter(raters=user, status=CalibrationSession.Status.OPEN)
