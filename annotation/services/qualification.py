"""Qualification: a test built from real items with expert keys (easy and boundary), boundary
candidates proposed from items where raters split, attempts with retry rules, and scoring.

Scoring separates easy items (did the candidate read the guide?) from boundary items (do they
judge the hard cases as the guide decides them?); the lead sees both, the pass rate with a warning
when nearly everyone passes (a test of easy items only measures reading), and per item the share
who got it right (an item everyone misses may have a wrong key).
"""

from collections import Counter, defaultdict
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from annotation.models import (
    Assignment,
    Enrolment,
    GoldAnswer,
    Label,
    QualificationItem,
    Ruling,
    Study,
    TrainingBatch,
    Unit,
)
from annotation.services import batches
from annotation.services.guides import current_version
from annotation.services.training_items import (
    TrainingError,
    answer_matches,
    answer_text,
    answer_value,
    first_systems,
    item_texts,
    label_key,
    shared_output_units,
    training_copy,
)

QUALIFICATION = TrainingBatch.Kind.QUALIFICATION
# "Nearly everyone passes": at or above this first-attempt pass rate the lead is warned.
EASY_TRAP_PASS_RATE = 0.9
# An item that at most this share of candidates gets right (with >= 3 answers) may be mis-keyed.
SUSPECT_ITEM_SHARE = 0.2


# --- the lead: building the test ----------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """A real item with its production labels' split: text -> count, most common first."""

    unit: Unit
    split: tuple[tuple[str, int], ...]
    n: int
    disagreement: float  # 1 - share of the most common answer
    key: dict  # the raw split, answer key (as json) -> count

    @property
    def majority(self) -> str:
        return self.split[0][0] if self.split else ""


def candidates(
    study: Study, *, split: bool = True, limit: int = 50, exclude_test: bool = True
) -> list[Candidate]:
    """Production items with at least two production labels on which raters split (`split`),
    or agreed (not `split`: easy candidates), most disputed (or most labelled) first. Gold and
    attention items are left out, and so are items already in the test (`exclude_test`)."""
    used = set()
    if exclude_test:
        used = set(
            QualificationItem.objects.filter(study=study).values_list("source_unit_id", flat=True)
        )
    rows = (
        Label.objects.filter(study=study, purpose=Assignment.Purpose.PRODUCTION)
        .filter(unit__role=Unit.Role.PRODUCTION)
        .values_list("unit_id", "choice", "score", "winner_id")
        .annotate(n=Count("id"))
    )
    counts: dict[int, Counter] = defaultdict(Counter)
    raw = []
    for unit_id, choice, score, winner, n in rows:
        if unit_id in used:
            continue
        raw.append((unit_id, choice, score, winner, n))
    firsts = first_systems({r[0] for r in raw}) if study.is_pairwise else {}
    for unit_id, choice, score, winner, n in raw:
        label = Label(choice=choice, score=score, winner_id=winner)
        key = label_key(study, label, firsts.get(unit_id))
        counts[unit_id][_key_str(key)] += n
    found = []
    for unit_id, counter in counts.items():
        total = sum(counter.values())
        if total < 2 or (len(counter) > 1) != split:
            continue
        top = counter.most_common()
        found.append((unit_id, counter, total, 1 - top[0][1] / total))
    found.sort(key=lambda x: (-x[3], -x[2], x[0]) if split else (-x[2], x[0]))
    found = found[:limit]
    units = Unit.objects.in_bulk([f[0] for f in found])
    out = []
    for unit_id, counter, total, disagreement in found:
        split_texts = tuple((answer_text(study, _key_dict(k)), n) for k, n in counter.most_common())
        out.append(
            Candidate(
                unit=units[unit_id],
                split=split_texts,
                n=total,
                disagreement=disagreement,
                key=dict(counter),
            )
        )
    return out


def _key_str(key: dict) -> str:
    return f"score:{key['score']:g}" if "score" in key else f"choice:{key['choice']}"


def _key_dict(text: str) -> dict:
    kind, _, value = text.partition(":")
    return {"score": float(value)} if kind == "score" else {"choice": value}


@transaction.atomic
def add_item(
    study: Study,
    source: Unit,
    *,
    answer: str,
    difficulty: str,
    split: dict | None = None,
    ruling: Ruling | None = None,
    author=None,
) -> QualificationItem:
    """Add a real item to the test with its expert answer (a form value of `answer_options`).

    The test shows a qualification copy of the item; refuses gold and attention items (the
    result page would reveal their answers) and items already in the test.
    """
    if source.study_id != study.pk:
        raise TrainingError("unit", "this item belongs to another study")
    if source.role not in (Unit.Role.PRODUCTION,):
        raise TrainingError("unit", "only production items can go into the test")
    if difficulty not in QualificationItem.Difficulty.values:
        raise TrainingError("difficulty", "choose easy or boundary")
    if QualificationItem.objects.filter(study=study, source_unit=source).exists():
        raise TrainingError("unit", "this item is already in the test")
    value = answer_value(study, answer)
    copy = training_copy(source, Unit.Role.QUALIFICATION)
    GoldAnswer.objects.create(
        unit=copy, value=value, guide_version=current_version(study), author=author
    )
    return QualificationItem.objects.create(
        study=study,
        unit=copy,
        source_unit=source,
        difficulty=difficulty,
        split=split or {},
        ruling=ruling,
    )


@transaction.atomic
def remove_item(item: QualificationItem) -> None:
    """Take an item out of the test; one that candidates already answered stays (its answers are
    kept, and so is the item)."""
    if Label.objects.filter(unit_id=item.unit_id).exists():
        raise TrainingError("item", "candidates have answered this item; it stays in the test")
    unit = item.unit
    item.delete()
    unit.delete()


@transaction.atomic
def update_settings(
    study: Study,
    *,
    requires_qualification: bool,
    pass_score: float,
    attempts: int,
    retry_after_guide: bool,
    before_guide: bool,
    allowed_pools: list[str],
) -> Study:
    """The study's qualification rules and the pools that may work on it."""
    if not 0 <= pass_score <= 1:
        raise TrainingError("pass_score", "the passing score is a share between 0 and 1")
    if not 1 <= attempts <= 20:
        raise TrainingError("attempts", "allow between 1 and 20 attempts")
    bad = [p for p in allowed_pools if p not in Enrolment.Pool.values]
    if bad:
        raise TrainingError("allowed_pools", f"{bad[0]!r} is not a pool")
    if requires_qualification and not study.qualification_items.exists():
        raise TrainingError("requires_qualification", "add items to the test first")
    study.requires_qualification = requires_qualification
    study.qualification_pass_score = pass_score
    study.qualification_attempts = attempts
    study.qualification_retry_after_guide = retry_after_guide
    study.qualification_before_guide = before_guide
    study.allowed_pools = sorted(set(allowed_pools))
    study.save(
        update_fields=[
            "requires_qualification",
            "qualification_pass_score",
            "qualification_attempts",
            "qualification_retry_after_guide",
            "qualification_before_guide",
            "allowed_pools",
        ]
    )
    return study


# --- the annotator: taking it ---------------------------------------------------------------


@dataclass(frozen=True)
class Status:
    """Where one annotator stands with a study's qualification test."""

    qualified: bool
    attempts_used: int
    attempts_left: int
    open_attempt: TrainingBatch | None
    last_attempt: TrainingBatch | None
    can_start: bool
    reason: str  # why not: "" | "qualified" | "no_test" | "closed" | "no_attempts" | "reread"

    @property
    def needs_reread(self) -> bool:
        return self.reason == "reread"


def status(study: Study, user) -> Status:
    enrolment = Enrolment.objects.get(study=study, user=user)
    attempts = list(
        TrainingBatch.objects.filter(study=study, annotator=user, kind=QUALIFICATION).order_by(
            "attempt"
        )
    )
    open_ = next((b for b in attempts if b.finished_at is None), None)
    finished = [b for b in attempts if b.finished_at is not None]
    last = finished[-1] if finished else None
    used = len(attempts)
    left = max(0, study.qualification_attempts - used)
    reason = ""
    if enrolment.qualified_at is not None:
        reason = "qualified"
    elif not study.qualification_items.exists():
        reason = "no_test"
    elif study.status not in (Study.Status.LIVE, Study.Status.QUALIFYING):
        reason = "closed"
    elif open_ is None and left == 0:
        reason = "no_attempts"
    elif (
        open_ is None
        and last is not None
        and study.qualification_retry_after_guide
        and last.guide_reread_at is None
    ):
        reason = "reread"
    return Status(
        qualified=enrolment.qualified_at is not None,
        attempts_used=used,
        attempts_left=left,
        open_attempt=open_,
        last_attempt=last,
        can_start=reason == "" or (open_ is not None and reason != "qualified"),
        reason=reason,
    )


@transaction.atomic
def start_attempt(study: Study, user, *, seed: int | None = None) -> TrainingBatch:
    """The annotator's open attempt, or a new one if the study's rules allow it.

    Raises TrainingError saying why not (already qualified, no attempts left, guide to re-read).
    """
    Enrolment.objects.select_for_update().get(study=study, user=user)
    st = status(study, user)
    if st.open_attempt is not None:
        return st.open_attempt
    if not st.can_start:
        raise TrainingError("attempt", REFUSALS[st.reason])
    units = [i.unit for i in study.qualification_items.select_related("unit")]
    return batches.create_batch(
        study=study,
        annotator=user,
        kind=QUALIFICATION,
        units=units,
        seed=seed,
        attempt=st.attempts_used + 1,
        guide_version=current_version(study),
    )


REFUSALS = {
    "qualified": "You have already passed this study's qualification test.",
    "no_test": "This study has no qualification test yet.",
    "closed": "This study is not taking qualification tests now.",
    "no_attempts": "You have used every attempt at this test.",
    "reread": "Please re-read the guide before you try again.",
}


@dataclass(frozen=True)
class ItemResult:
    item: QualificationItem
    correct: bool
    given: str
    expected: str


def _item_results(batch: TrainingBatch) -> list[ItemResult]:
    study = batch.study
    items = {
        i.unit_id: i
        for i in QualificationItem.objects.filter(study=study).select_related("unit__gold_answer")
    }
    pairs = batches.answered(batch)
    firsts = first_systems([t.unit_id for t, _ in pairs]) if study.is_pairwise else {}
    out = []
    for task, label in pairs:
        item = items.get(task.unit_id)
        if item is None:
            continue
        expected = item.unit.gold_answer.value
        given = label_key(study, label, firsts.get(task.unit_id))
        out.append(
            ItemResult(
                item=item,
                correct=answer_matches(study, expected, given),
                given=answer_text(study, given),
                expected=answer_text(study, expected),
            )
        )
    return out


def _share(results: list[ItemResult]) -> float | None:
    return sum(r.correct for r in results) / len(results) if results else None


@transaction.atomic
def finish_attempt(batch: TrainingBatch) -> TrainingBatch:
    """Score a fully answered attempt once (later calls return it as scored); a pass qualifies
    the annotator (and counts as calibrated on the guide version they took it under)."""
    batch = TrainingBatch.objects.select_for_update().get(pk=batch.pk)
    if batch.finished_at is not None or not batches.is_complete(batch):
        return batch
    study = batch.study
    results = _item_results(batch)
    easy = [r for r in results if r.item.difficulty == QualificationItem.Difficulty.EASY]
    boundary = [r for r in results if r.item.difficulty == QualificationItem.Difficulty.BOUNDARY]
    batch.score = _share(results) or 0.0
    batch.easy_score = _share(easy)
    batch.boundary_score = _share(boundary)
    batch.passed = batch.score >= study.qualification_pass_score - 1e-9
    batch.finished_at = timezone.now()
    batch.save()
    if batch.passed:
        Enrolment.objects.filter(study=study, user_id=batch.annotator_id).update(
            qualified_at=batch.finished_at,
            qualification_score=batch.score,
            calibrated_guide_version=current_version(study),
        )
    return batch


@dataclass(frozen=True)
class Missed:
    """A missed item as the annotator sees it: the texts, their answer, the ruling that decides
    it (never the key itself, so a retry still tests)."""

    text: object
    given: str
    difficulty: str
    ruling: Ruling | None


def missed_items(batch: TrainingBatch) -> list[Missed]:
    results = [r for r in _item_results(batch) if not r.correct]
    texts = item_texts([r.item.unit_id for r in results])
    return [
        Missed(
            text=texts.get(r.item.unit_id),
            given=r.given,
            difficulty=r.item.get_difficulty_display(),
            ruling=r.item.ruling or relevant_ruling(r.item),
        )
        for r in results
    ]


def relevant_ruling(item: QualificationItem) -> Ruling | None:
    """The newest published ruling citing an item that shows the same outputs."""
    linked = shared_output_units([item.unit])
    return (
        Ruling.objects.filter(
            study_id=item.study_id, guide_version__isnull=False, examples__in=linked
        )
        .order_by("-guide_version__number", "-id")
        .first()
    )


def mark_guide_reread(study: Study, user) -> None:
    """The annotator opened the guide after a failed attempt: the retry rule is met."""
    TrainingBatch.objects.filter(
        study=study, annotator=user, kind=QUALIFICATION, passed=False, guide_reread_at=None
    ).update(guide_reread_at=timezone.now())


# --- the lead: results ------------------------------------------------------------------------


@dataclass(frozen=True)
class CandidateRow:
    user: object
    attempts: tuple[TrainingBatch, ...]
    qualified: bool


@dataclass(frozen=True)
class ItemRow:
    item: QualificationItem
    text: object
    expected: str
    answers: int
    correct: int

    @property
    def share(self) -> float | None:
        return self.correct / self.answers if self.answers else None

    @property
    def suspect(self) -> bool:
        return self.answers >= 3 and self.share <= SUSPECT_ITEM_SHARE


@dataclass(frozen=True)
class Results:
    candidates: tuple[CandidateRow, ...]
    items: tuple[ItemRow, ...]
    first_attempt_pass_rate: float | None
    passed_eventually: int
    n_candidates: int
    easy_trap: bool  # nearly everyone passes on their first attempt
    n_easy: int
    n_boundary: int


def results(study: Study) -> Results:
    """Per candidate every finished attempt (overall, easy and boundary scores), the pass rates,
    and per item the share of answers that were right."""
    attempts = list(
        TrainingBatch.objects.filter(study=study, kind=QUALIFICATION, finished_at__isnull=False)
        .select_related("annotator")
        .order_by("annotator__username", "attempt")
    )
    by_user: dict[int, list[TrainingBatch]] = defaultdict(list)
    for a in attempts:
        by_user[a.annotator_id].append(a)
    qualified = set(
        Enrolment.objects.filter(study=study, qualified_at__isnull=False).values_list(
            "user_id", flat=True
        )
    )
    rows = tuple(
        CandidateRow(user=runs[0].annotator, attempts=tuple(runs), qualified=uid in qualified)
        for uid, runs in by_user.items()
    )
    firsts = [runs[0] for runs in by_user.values()]
    rate = sum(bool(a.passed) for a in firsts) / len(firsts) if firsts else None
    items = list(QualificationItem.objects.filter(study=study).select_related("unit__gold_answer"))
    tally: dict[int, list[int]] = {i.unit_id: [0, 0] for i in items}
    for a in attempts:
        for r in _item_results(a):
            tally[r.item.unit_id][0] += 1
            tally[r.item.unit_id][1] += r.correct
    texts = item_texts([i.unit_id for i in items])
    item_rows = tuple(
        ItemRow(
            item=i,
            text=texts.get(i.unit_id),
            expected=answer_text(study, i.unit.gold_answer.value),
            answers=tally[i.unit_id][0],
            correct=tally[i.unit_id][1],
        )
        for i in items
    )
    return Results(
        candidates=rows,
        items=item_rows,
        first_attempt_pass_rate=rate,
        passed_eventually=sum(r.qualified for r in rows),
        n_candidates=len(rows),
        easy_trap=rate is not None and rate >= EASY_TRAP_PASS_RATE,
        n_easy=sum(i.difficulty == QualificationItem.Difficulty.EASY for i in items),
        n_boundary=sum(i.difficulty == QualificationItem.Difficulty.BOUNDARY for i in items),
    )
