"""The loaders' PostgreSQL-only branches: a report read outside a transaction sees one snapshot
(REPEATABLE READ), and the streamed queries are planned for reading every row; and the raw
cursor path loads what the ORM reads, on PostgreSQL as on SQLite."""

import threading

import numpy as np
import psycopg
import pytest
from django.db import connection, connections

from annotation.models import Label, Unit
from annotation.services import setup
from qc import loaders
from tests.qc import simulate
from tests.qc.labels import add_labels


def _commit_label_elsewhere(study, unit, annotator) -> int:
    """A production label committed by another connection (a thread of its own); its id."""
    made = []
    row = {"unit": unit, "annotator": annotator, "choice": study.label_scheme["labels"][0]["value"]}

    def work():
        try:
            made.extend(add_labels(study, [row]))
        finally:
            connections.close_all()

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(60)
    assert len(made) == 1
    return made[0].pk


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_label_committed_while_a_report_loads_is_left_for_the_next_report(monkeypatch):
    """The label count, the newest label id (the fingerprint) and the labels come from one
    snapshot: a label committed after the load's first query enters none of them."""
    study, _ = simulate.categorical_study(n_prompts=6, n_annotators=3)
    before = set(Label.objects.filter(study=study).values_list("id", flat=True))
    late = simulate.annotators(1, prefix="late")[0]
    unit = Unit.objects.filter(study=study).order_by("id").first()
    committed = []
    cut = loaders._cut

    def cut_after_a_commit(s):  # runs between the label count and the labels' query
        committed.append(_commit_label_elsewhere(study, unit, late))
        return cut(s)

    monkeypatch.setattr(loaders, "_cut", cut_after_a_commit)
    assert not connection.in_atomic_block

    snapshot = loaders.load_snapshot(study)

    assert Label.objects.filter(pk=committed[0]).exists()
    assert set(snapshot.label_id.tolist()) == before
    assert (snapshot.label_count, snapshot.newest_label_id) == (len(before), max(before))
    assert late.pk not in snapshot.annotator.tolist()


@pytest.mark.postgres
@pytest.mark.django_db
def test_every_streamed_query_of_a_report_is_planned_for_reading_every_row():
    """A server-side cursor is planned for its first 10% of rows by default; the loader reads
    them all (on 1M labels the default plan walked every study's labels in id order)."""
    study, _ = simulate.categorical_study(n_prompts=6, n_annotators=3)
    seen = []

    def note_the_plan_setting(execute, sql, params, many, context):
        if isinstance(context["cursor"].cursor, psycopg.ServerCursor):
            raw = context["connection"].connection
            seen.append((sql, raw.execute("SHOW cursor_tuple_fraction").fetchone()[0]))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(note_the_plan_setting):
        snapshot = loaders.load_snapshot(study)

    assert snapshot.label_id.size == 18
    assert any('FROM "annotation_label"' in sql for sql, _ in seen)
    assert [fraction for _, fraction in seen] == ["1"] * len(seen)
    assert np.isin(snapshot.unit, snapshot.unit_ids).all()


@pytest.mark.django_db
def test_the_raw_cursor_loads_what_the_orm_reads_on_either_database():
    """Pairwise labels with winners and ties, two hidden-gold units, a later second gold label, and
    repeat and attention labels: the snapshot holds the first production or gold label of each
    annotator on each unit, each column as the ORM reads it (no winner is 0, no score NaN)."""
    study = simulate.pairwise_study(n_prompts=8, n_annotators=4)
    units = list(Unit.objects.filter(study=study).order_by("id"))
    for unit in units[:2]:
        setup.mark_gold(unit, {"winner": "tie"})
    people = simulate.annotators(2, prefix=f"x{study.pk}r")
    add_labels(
        study, [{"unit": u, "annotator": people[0], "choice": "tie"} for u in units[:2]], "gold"
    )
    later = [{"unit": units[0], "annotator": people[0], "choice": "left"}]
    add_labels(study, later, "gold")
    for purpose in ("repeat", "attention"):
        add_labels(
            study, [{"unit": u, "annotator": people[1], "choice": "left"} for u in units], purpose
        )

    snapshot = loaders.load_snapshot(study)

    counted, seen = [], set()
    real = Label.objects.filter(study=study, purpose__in=("production", "gold"))
    for label in real.order_by("id"):
        if (label.annotator_id, label.unit_id) not in seen:
            seen.add((label.annotator_id, label.unit_id))
            counted.append(label)
    assert snapshot.label_id.tolist() == [lab.pk for lab in counted]
    assert snapshot.unit.tolist() == [lab.unit_id for lab in counted]
    assert snapshot.annotator.tolist() == [lab.annotator_id for lab in counted]
    assert snapshot.choice.tolist() == [lab.choice for lab in counted]
    assert snapshot.winner.tolist() == [lab.winner_id or 0 for lab in counted]
    assert np.isnan(snapshot.score).all()
    assert snapshot.label_gold.tolist() == [lab.purpose == "gold" for lab in counted]
    assert snapshot.later_duplicates == 1
    assert snapshot.unit_ids.tolist() == [u.pk for u in units]
    assert snapshot.unit_gold.tolist() == [i < 2 for i in range(len(units))]
    assert snapshot.unit_tokens.tolist() == [u.token for u in units]
    assert snapshot.unit_overlap.tolist() == [u.overlap for u in units]
