"""CPU per label as one annotator's history grows: the work loop's next + submit, in process.

Calls Concord's WSGI application directly (no HTTP server, no other clients) for one signed-in
annotator on a bench study (bench/loop_data.py, reset first), and prints, per block of labels,
the CPU the web side (this thread) and PostgreSQL (this connection's backend process) spent per
label, and the statements that took longest by wall time. A cost that grows with the block
number grows with the annotator's history: the statements read something that grows with it,
or a prepared statement's generic plan was made while the tables were small.

    .venv/bin/python bench/history.py [--units 20000] [--blocks 12] [--block 100]
        [--database postgres://postgres@127.0.0.1:5432/concord_bench_history]
"""

import argparse
import collections
import io
import json
import os
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def parse_args(extra=None):
    """The options every in-process bench shares; `extra(parser)` adds a script's own."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--database", default="postgres://postgres@127.0.0.1:5432/concord_bench_history")
    p.add_argument("--cache", default="redis://127.0.0.1:6379/12")
    p.add_argument("--units", type=int, default=20_000)
    p.add_argument("--blocks", type=int, default=12)
    p.add_argument("--block", type=int, default=100)
    if extra is not None:
        extra(p)
    return p.parse_args()


def setup(args):
    from bench.loop import ensure_database

    ensure_database(args.database)
    os.environ.update(
        DATABASE_URL=args.database,
        CACHE_URL=args.cache,
        DEBUG="0",
        CELERY_BROKER_URL=args.cache,
        CELERY_TASK_ALWAYS_EAGER="0",
        DJANGO_SETTINGS_MODULE="concord.settings",
    )
    import django

    django.setup()


class Annotator:
    """One signed-in annotator calling the WSGI application."""

    def __init__(self, app, study, person):
        self.app, self.person = app, person
        self.cookie = f"sessionid={person['session']}; csrftoken={person['csrf']}"
        self.base = f"/api/work/{study.token}"

    def environ(self, method, path, body=b"", headers=None) -> dict:
        return {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "HTTP_HOST": "127.0.0.1",
            "HTTP_COOKIE": self.cookie,
            "REMOTE_ADDR": "127.0.0.1",
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.input": io.BytesIO(body),
            "wsgi.url_scheme": "http",
            "wsgi.errors": sys.stderr,
            **(headers or {}),
        }

    def call(self, method, path, body=b"", headers=None):
        environ = self.environ(method, path, body, headers)
        status = []
        response = self.app(environ, lambda s, h, exc_info=None: status.append(s))
        data = b"".join(response)
        response.close()
        if not status[0].startswith("200"):
            raise RuntimeError(f"{method} {path}: {status[0]} {data[:200]!r}")
        return json.loads(data)

    def label(self):
        token = self.call("GET", f"{self.base}/next")["token"]
        body = json.dumps({"choice": "good", "timings": {"duration_ms": 1500}}).encode()
        headers = {
            "CONTENT_TYPE": "application/json",
            "HTTP_X_CSRFTOKEN": self.person["csrf"],
            "HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4()),
        }
        assert self.call("POST", f"{self.base}/submit/{token}", body, headers)["status"] == "stored"


def backend_cpu() -> float:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    args = parse_args()
    setup(args)
    from django.core.handlers.wsgi import WSGIHandler

    from annotation.services import assignment as engine
    from bench.loop_data import annotators, bench_study, reset

    study = bench_study(args.units)
    reset(study)
    annotator = Annotator(WSGIHandler(), study, annotators(study, 1)[0])
    annotator.label()  # imports, first connection
    spent, runs = collections.Counter(), collections.Counter()
    execute = engine._execute

    def timed(cursor, sql, params, **kwargs):
        t0 = time.perf_counter()
        try:
            return execute(cursor, sql, params, **kwargs)
        finally:
            spent[sql] += time.perf_counter() - t0
            runs[sql] += 1

    engine._execute = timed
    print("labels        web CPU ms/label  PostgreSQL CPU ms/label  slowest statements (ms each)")
    for block in range(args.blocks):
        spent.clear()
        runs.clear()
        pg0, web0 = backend_cpu(), time.thread_time()
        for _ in range(args.block):
            annotator.label()
        pg1, web1 = backend_cpu(), time.thread_time()
        slowest = sorted(spent, key=lambda sql: spent[sql] / runs[sql], reverse=True)[:2]
        named = "; ".join(
            f"{' '.join(sql.split()[:4])[:36]} x{runs[sql]} {spent[sql] / runs[sql] * 1e3:.2f}"
            for sql in slowest
        )
        first = block * args.block + 2
        print(
            f"{first:>5}-{first + args.block - 1:<5} {(web1 - web0) / args.block * 1e3:>12.2f}"
            f" {(pg1 - pg0) / args.block * 1e3:>20.2f}     {named}",
            flush=True,
        )


if __name__ == "__main__":
    main()
