"""What the work loop writes per label, by PostgreSQL's write-ahead log: bytes, index entries,
row locks, heap inserts and updates, commits. Unlike CPU time on a shared machine, these counts
repeat from run to run, so a change to the schema or the statements shows at once.

One signed-in annotator labels through the lean path in process (as bench/handler.py); the WAL
between the first and the last label is read back with pg_waldump (so PostgreSQL must run on this
machine, its data directory readable). With `--floor` the floor's two statements per label
(../shared/floor/floor_app.py: NEXT2_SQL, SUBMIT2_SQL) run the same way on its database, for the
same counts beside Concord's.

    .venv/bin/python bench/wal.py [--labels 300] [--floor ../shared/floor]
"""

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import history  # noqa: E402

# pg_waldump record kinds -> the names printed here. "index entries" are B-tree leaf inserts
# (a new tuple, or one more heap pointer in a deduplicated posting list), with the rare entry a
# page split adds to the parent page.
KINDS = {
    "Btree/INSERT_LEAF": "index entries",
    "Btree/INSERT_POST": "index entries",
    "Btree/INSERT_UPPER": "index entries",
    "Heap/LOCK": "row locks",
    "Heap/INSERT": "heap inserts",
    "Heap/UPDATE": "heap updates (not HOT)",
    "Heap/HOT_UPDATE": "heap updates (HOT)",
    "Heap/DELETE": "heap deletes",
    "Transaction/COMMIT": "commits",
}


def _options(p):
    p.add_argument("--labels", type=int, default=300)
    p.add_argument("--floor", default="", help="folder of the floor (floor_app.py)")
    p.add_argument("--floor-database", default="postgres://postgres@127.0.0.1:5432/floor")
    p.add_argument("--waldump", default="/usr/lib/postgresql/15/bin/pg_waldump")


def per_label(cursor_execute, label, n: int, waldump: str) -> dict:
    """Run `label` n times and read the WAL it wrote: counts per label by KINDS, and bytes.

    The WAL is the whole cluster's, so only records of this database count: those with a block
    of one of its relations, and the commits of the transactions that wrote them. Bytes leave
    out full-page images, which depend on when the last checkpoint ran, not on the label."""

    def lsn():
        return cursor_execute("SELECT pg_current_wal_lsn()::text")

    wal_dir = Path(cursor_execute("SHOW data_directory")) / "pg_wal"
    database = cursor_execute("SELECT oid FROM pg_database WHERE datname = current_database()")
    for _ in range(10):
        label()  # warm: prepared statements, caches
    start = lsn()
    for _ in range(n):
        label()
    end = lsn()
    out = subprocess.run(
        [waldump, "-p", str(wal_dir), "-s", start, "-e", end],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    ours = re.compile(rf"rel \d+/{database}/")
    record = re.compile(r"rmgr: (\S+)\s+len \(rec/tot\):\s+(\d+)/\s*\d+, tx:\s+(\d+).*desc: (\w+)")
    counts, total, xids, commits = Counter(), 0, set(), []
    for line in out.splitlines():
        m = record.match(line)
        if not m:
            continue
        kind, size, xid = f"{m.group(1)}/{m.group(4)}", int(m.group(2)), m.group(3)
        if kind == "Transaction/COMMIT":
            commits.append((xid, size))
        elif ours.search(line):
            xids.add(xid)
            total += size
            if kind in KINDS:
                counts[KINDS[kind]] += 1
    for xid, size in commits:
        if xid in xids:
            total += size
            counts["commits"] += 1
    return {
        "WAL bytes (without full-page images)": total / n,
        **{k: v / n for k, v in sorted(counts.items())},
    }


def concord(args) -> dict:
    history.setup(args)
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection

    from annotation.lean import LeanWorkPath
    from bench.loop_data import annotators, bench_study, reset

    study = bench_study(args.units)
    reset(study)
    person = annotators(study, 1)[0]
    annotator = history.Annotator(LeanWorkPath(WSGIHandler()), study, person)

    def execute(sql):
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchone()[0]

    return per_label(execute, annotator.label, args.labels, args.waldump)


def floor(args) -> dict:
    import psycopg

    source = (Path(args.floor) / "floor_app.py").read_text()
    next_sql = re.search(r'NEXT2_SQL = """(.*?)"""', source, re.S).group(1)
    submit_sql = re.search(r'SUBMIT2_SQL = """(.*?)"""', source, re.S).group(1)
    conn = psycopg.connect(args.floor_database, autocommit=True)
    annotator = 2_000_000_000  # far from the loop's annotator ids
    conn.execute("DELETE FROM leases WHERE annotator_id = %s", [annotator])

    def label():
        unit = conn.execute(next_sql, {"a": annotator}, prepare=True).fetchone()[0]
        conn.execute(submit_sql, {"a": annotator, "u": unit, "v": 1}, prepare=True).fetchone()

    try:
        return per_label(
            lambda sql: conn.execute(sql).fetchone()[0], label, args.labels, args.waldump
        )
    finally:
        # Give the floor's units back as they were, for the next run of its loop.
        conn.execute(
            "UPDATE units SET label_count = label_count - 1 WHERE id IN"
            " (SELECT unit_id FROM labels WHERE annotator_id = %s)",
            [annotator],
        )
        conn.execute("DELETE FROM labels WHERE annotator_id = %s", [annotator])
        conn.close()


def main():
    args = history.parse_args(_options)
    sides = {"concord": concord(args)}
    if args.floor:
        sides["floor"] = floor(args)
    names = list(dict.fromkeys(k for side in sides.values() for k in side))
    print(f"per label, {args.labels} labels{'':14}" + "".join(f"{s:>12}" for s in sides))
    for name in names:
        print(f"{name:40}" + "".join(f"{side.get(name, 0):>12.1f}" for side in sides.values()))


if __name__ == "__main__":
    main()
