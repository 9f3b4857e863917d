"""The indexes the work loop maintains (issue 16): every lease inserts an assignment and takes a
unit's slot, and every answer closes the lease and inserts a label. Taking a slot and closing a
lease change indexed columns, so PostgreSQL writes an entry into every index of the row, each
time. These tests pin that no index is there for nothing, and that the ones made smaller still
answer the lookups they exist for: a token, and the rows a deleted repeat, guide version or
system reaches through its foreign key."""

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import ProtectedError

from annotation.models import Assignment, GuideVersion, Label, Unit
from annotation.services import assignment as engine
from annotation.services.submission import submit_label
from tests.factories import enrol, make_study

pytestmark = pytest.mark.django_db

LOOP_TABLES = ("annotation_assignment", "annotation_unit", "annotation_label")

# Foreign keys indexed only where they are set: (table, column, index).
PARTIAL = [
    ("annotation_assignment", "repeat_of_id", "assignment_repeat_of"),
    ("annotation_assignment", "guide_version_id", "assignment_guide_version"),
    ("annotation_label", "winner_id", "label_winner"),
    ("annotation_label", "guide_version_id", "label_guide_version"),
]


def _indexes(table: str) -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", [table])
        return dict(cursor.fetchall())


def _plan(sql: str, params) -> str:
    """The plan PostgreSQL picks with sequential scans priced out: an index that can answer the
    query is used; a query no index answers still shows a Seq Scan."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.postgres
@pytest.mark.parametrize("table", LOOP_TABLES)
def test_no_pattern_index_on_the_loops_tables(table):
    # Django adds a varchar_pattern_ops twin to every unique CharField on PostgreSQL, for LIKE;
    # nothing searches tokens by prefix, and each twin is one more entry per lease and close.
    pattern = {name: d for name, d in _indexes(table).items() if "pattern_ops" in d}
    assert pattern == {}


@pytest.mark.postgres
@pytest.mark.parametrize(("table", "column", "index"), PARTIAL)
def test_rarely_set_foreign_keys_are_indexed_only_where_set(table, column, index):
    found = _indexes(table)
    assert f"WHERE ({column} IS NOT NULL)" in found[index]
    assert [name for name, d in found.items() if f"({column})" in d] == [index]
    # Django's collector asks `column = id` (SET_NULL, PROTECT): the partial index answers it.
    plan = _plan(f"SELECT id FROM {table} WHERE {column} = %s", [1])
    assert index in plan and "Seq Scan" not in plan, plan


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("table", "index"),
    [
        ("annotation_assignment", "assignment_token_unique"),
        ("annotation_unit", "unit_token_unique"),
    ],
)
def test_a_token_is_found_through_its_unique_index(table, index):
    plan = _plan(f"SELECT id FROM {table} WHERE token = %s", ["x" * 32])
    assert index in plan and "Seq Scan" not in plan, plan


def test_tokens_stay_unique():
    study = make_study(n_prompts=2)
    units = list(Unit.objects.filter(study=study))
    with pytest.raises(IntegrityError), transaction.atomic():
        Unit.objects.filter(pk=units[1].pk).update(token=units[0].token)
    user = enrol(study).user
    first = engine.next_assignment(user, study)
    submit_label(
        annotator=user,
        assignment_token=first.token,
        data={"choice": "safe"},
        idempotency_key="8d1c3f4e-0000-4000-8000-000000000001",
    )
    second = engine.next_assignment(user, study)
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.filter(pk=second.pk).update(token=first.token)


def test_deleting_a_guide_version_still_reaches_its_leases_and_protects_its_labels():
    # The foreign keys' rules are Django's and the database's, unchanged by the partial index.
    study = make_study(n_prompts=2)
    version = GuideVersion.objects.create(study=study, number=1, body="v1")
    user = enrol(study).user
    lease = engine.next_assignment(user, study)
    assert lease.guide_version_id == version.id
    submit_label(
        annotator=user,
        assignment_token=lease.token,
        data={"choice": "safe"},
        idempotency_key="8d1c3f4e-0000-4000-8000-000000000002",
    )
    label = Label.objects.get(assignment=lease)
    assert label.guide_version_id == version.id
    with pytest.raises(ProtectedError):
        version.delete()
    Label.objects.filter(pk=label.pk).update(guide_version=None)
    version.delete()
    lease.refresh_from_db()
    assert lease.guide_version_id is None  # SET_NULL found it
