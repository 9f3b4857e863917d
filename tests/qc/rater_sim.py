"""Seeded rater histories with known truth: weekly gold answers, blind repeats, timings, guide
versions. Rows go straight in with bulk inserts (Assignment + Label), as the engine would leave
them, so the rater report can be checked against what was planted.
"""

import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
from django.db import connection
from django.db.models import Max

from annotation.models import Assignment, GuideVersion, Label, Study, Unit
from annotation.services import setup
from tests.factories import make_study
from tests.qc.simulate import annotators

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # a Monday


class Writer:
    """Collects labels for one study and inserts them in one go (positions per annotator)."""

    def __init__(self, study):
        self.study = study
        self.rows = []
        top = Assignment.objects.filter(study=study).aggregate(p=Max("position"))["p"] or 0
        self.base = top

    def add(self, unit, annotator, purpose="production", when=None, repeat_of=None, **fields):
        self.rows.append((unit, annotator, purpose, when, repeat_of, fields))
        return len(self.rows) - 1

    def save(self) -> list[Label]:
        now = datetime.now(UTC)
        positions: dict[int, int] = {}
        assignments = []
        for unit, annotator, purpose, when, _rep, fields in self.rows:
            positions[annotator.pk] = positions.get(annotator.pk, self.base) + 1
            assignments.append(
                Assignment(
                    study=self.study,
                    unit=unit,
                    annotator=annotator,
                    purpose=purpose,
                    status=Assignment.Status.SUBMITTED,
                    position=positions[annotator.pk],
                    leased_at=when or now,
                    expires_at=(when or now) + timedelta(minutes=30),
                    closed_at=when or now,
                    guide_version=fields.get("guide_version"),
                )
            )
        Assignment.objects.bulk_create(assignments, batch_size=2000)
        for a, (*_x, rep, _f) in zip(assignments, self.rows, strict=True):
            if rep is not None:
                a.repeat_of_id = assignments[rep].id
        Assignment.objects.bulk_update(
            [a for a in assignments if a.repeat_of_id], ["repeat_of"], batch_size=2000
        )
        labels = [
            Label(
                assignment=a,
                study=self.study,
                unit=unit,
                annotator=annotator,
                purpose=purpose,
                idempotency_key=uuid.uuid4(),
                choice=fields.get("choice", ""),
                score=fields.get("score"),
                winner=fields.get("winner"),
                guide_version=fields.get("guide_version"),
                duration_ms=fields.get("duration_ms"),
                active_ms=fields.get("active_ms"),
            )
            for a, (unit, annotator, purpose, _w, _r, fields) in zip(
                assignments, self.rows, strict=True
            )
        ]
        Label.objects.bulk_create(labels, batch_size=2000)
        stamped = [(lab.pk, row[3]) for lab, row in zip(labels, self.rows, strict=True) if row[3]]
        if stamped and connection.vendor != "postgresql":
            moments = dict(stamped)
            for label in labels:
                label.created_at = moments.get(label.pk, label.created_at)
            Label.objects.bulk_update([x for x in labels if x.pk in moments], ["created_at"])
        elif stamped:
            with connection.cursor() as c:
                for i in range(0, len(stamped), 1000):
                    chunk = stamped[i : i + 1000]
                    c.execute(
                        "UPDATE annotation_label AS l SET created_at = v.at FROM (VALUES "
                        + ",".join(["(%s, %s::timestamptz)"] * len(chunk))
                        + ") AS v(id, at) WHERE l.id = v.id",
                        [x for pair in chunk for x in pair],
                    )
        return labels


def guide(study, number, published):
    g = GuideVersion.objects.create(study=study, number=number, body=f"Guide v{number}")
    GuideVersion.objects.filter(pk=g.pk).update(published_at=published)
    g.refresh_from_db()
    return g


def monitored_study(
    weekly_accuracy,
    gold_per_week=20,
    guide_change_week=None,
    seed=5,
    n_prompts=40,
    n_peers=3,
    repeats=None,
    fast_rater=False,
    run_rater=False,
):
    """A categorical (safe/unsafe) study with hidden gold and a rater "watched" whose gold
    accuracy in week w is weekly_accuracy[w]; `n_peers` steady raters (90%) label the same gold.

    Production: every production unit gets the watched rater and the peers (3 truthful-ish
    labels). repeats: {"n": how many, "flip": how many of them the watched rater changes}.
    fast_rater: a peer who answers in about a fifth of the pool's time. run_rater: a peer who
    answers "safe" to everything. Returns (study, watched, peers, planted).
    """
    rng = np.random.default_rng(seed)
    study = make_study(Study.TaskKind.CATEGORICAL, n_prompts=n_prompts, systems=("alpha",))
    units = list(Unit.objects.filter(study=study).order_by("id"))
    n_gold = max(n_prompts // 4, 4)
    truth = {}
    for i, unit in enumerate(units):
        truth[unit.pk] = "unsafe" if rng.random() < 0.3 else "safe"
        if i < n_gold:
            setup.mark_gold(unit, {"choice": truth[unit.pk]}, rationale="expert")
    gold_units = units[:n_gold]
    production = units[n_gold:]
    g1 = guide(study, 1, START - timedelta(days=7))
    g2 = None
    if guide_change_week is not None:
        g2 = guide(study, 2, START + timedelta(weeks=guide_change_week))
    watched = annotators(1, prefix=f"s{study.pk}watched")[0]
    peers = annotators(n_peers, prefix=f"s{study.pk}peer")
    w = Writer(study)

    def flip(v):
        return "unsafe" if v == "safe" else "safe"

    planted = {"gold_right": 0, "gold_n": 0, "flipped_units": []}
    for week, acc in enumerate(weekly_accuracy):
        version = g2 if (g2 is not None and week >= guide_change_week) else g1
        right = rng.random(gold_per_week) < acc
        for k in range(gold_per_week):
            unit = gold_units[k % n_gold]
            when = START + timedelta(weeks=week, minutes=30 * k + 1)
            answer = truth[unit.pk] if right[k] else flip(truth[unit.pk])
            w.add(
                unit,
                watched,
                "gold",
                when,
                choice=answer,
                guide_version=version,
                duration_ms=int(rng.normal(20000, 3000)),
            )
            planted["gold_right"] += int(right[k])
            planted["gold_n"] += 1
            for j, p in enumerate(peers):
                ok = rng.random() < 0.9
                fast = fast_rater and j == 1
                w.add(
                    unit,
                    p,
                    "gold",
                    when,
                    choice=truth[unit.pk] if ok else flip(truth[unit.pk]),
                    guide_version=version,
                    duration_ms=int(rng.normal(3000, 300) if fast else rng.normal(20000, 3000)),
                )
    end = START + timedelta(weeks=len(weekly_accuracy))
    originals = []
    for i, unit in enumerate(production):
        when = end + timedelta(minutes=i)
        for j, p in enumerate([watched] + peers):
            answer = truth[unit.pk] if rng.random() < 0.9 else flip(truth[unit.pk])
            if run_rater and j == 1:
                answer = "safe"
            ms = int(rng.normal(20000, 3000))
            if fast_rater and j == 2:
                ms = int(rng.normal(3000, 300))
            idx = w.add(
                unit, p, "production", when, choice=answer, guide_version=g2 or g1, duration_ms=ms
            )
            if j == 0:
                originals.append((idx, unit, answer))
    if repeats:
        flips = set(range(repeats["flip"]))
        for r in range(repeats["n"]):
            idx, unit, answer = originals[r]
            again = flip(answer) if r in flips else answer
            if r in flips:
                planted["flipped_units"].append(unit.token)
            w.add(
                unit,
                watched,
                "repeat",
                end + timedelta(days=1, minutes=r),
                repeat_of=idx,
                choice=again,
                guide_version=g2 or g1,
                duration_ms=20000,
            )
    w.save()
    return study, watched, peers, planted
