"""Soak: 200 simulated annotators against gunicorn, PostgreSQL, Redis and a real Celery worker.

A mix of human-paced annotators (think time drawn around `--think` seconds per task) and
zero-think ones (scripts, double-speed people) work the JSON API at the same time for
`--seconds`, over persistent connections with real session cookies read through the Redis cache.
A real worker recomputes the study's report as labels arrive. Recorded: requests, error rate,
p50/p99/max of next and submit per mix, labels/s, the most database connections seen at once
(against PostgreSQL's max_connections: no pool exhaustion), and afterwards the invariant queries
(no unit over its overlap, no annotator twice on a unit, open slots consistent with leases).

    .venv/bin/python bench/soak.py [--clients 200] [--zero-think 20] [--think 4] [--seconds 600]
        [--units 100000] [--database postgres://postgres@127.0.0.1:5432/concord_bench]

Every request goes to 127.0.0.1 only; the run is bounded by --seconds and stops by itself.
"""

import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.loop import (  # noqa: E402 - after the path set-up
    Client,
    check_invariants,
    ensure_database,
    free_port,
    pct,
    purge,
    setup_django,
    start_gunicorn,
)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--database", default="postgres://postgres@127.0.0.1:5432/concord_bench")
    p.add_argument("--broker", default="redis://127.0.0.1:6379/14")
    p.add_argument("--cache", default="redis://127.0.0.1:6379/13")
    p.add_argument("--units", type=int, default=100_000)
    p.add_argument("--clients", type=int, default=200)
    p.add_argument("--zero-think", type=int, default=20, help="how many of them never pause")
    p.add_argument("--think", type=float, default=4.0, help="mean think seconds of the others")
    p.add_argument("--seconds", type=float, default=600.0)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--no-worker", action="store_true", help="skip the Celery worker")
    return p.parse_args()


def start_worker(args, queue: str, log: Path) -> subprocess.Popen:
    env = dict(
        os.environ,
        DATABASE_URL=args.database,
        CELERY_BROKER_URL=args.broker,
        CELERY_TASK_ALWAYS_EAGER="0",
        CELERY_TASK_DEFAULT_QUEUE=queue,
        DEBUG="0",
    )
    command = [str(ROOT / ".venv/bin/celery"), "-A", "concord", "worker", "--pool=solo"]
    command += ["-Q", queue, "-n", f"soak-{os.getpid()}@%h", "--loglevel=WARNING"]
    with open(log, "a") as out:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


class ConnectionWatch(threading.Thread):
    """Samples pg_stat_activity every 2 s: the most backends on the database at once."""

    def __init__(self, database: str):
        super().__init__(daemon=True)
        self.database, self.peak, self.stop = database, 0, threading.Event()

    def run(self):
        import psycopg

        name = self.database.rsplit("/", 1)[1]
        with psycopg.connect(self.database, autocommit=True) as conn:
            while not self.stop.wait(2.0):
                n = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (name,)
                ).fetchone()[0]
                self.peak = max(self.peak, n)


def wait_until_serving(port: int, workers: int, study_token: str, person: dict) -> float:
    """Warm every web process up with real work-API requests, several at once so that each
    process gets some (the first request of a process imports and compiles for seconds on a
    loaded machine): the run measures serving, not start-up. Returns the warm-up's seconds."""
    started = time.monotonic()
    cookie = f"sessionid={person['session']}; csrftoken={person['csrf']}"

    def hit():
        for _ in range(3):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            conn.request(
                "GET",
                f"/api/work/{study_token}/next",
                headers={"Cookie": cookie, "Host": "127.0.0.1"},
            )
            conn.getresponse().read()
            conn.close()

    threads = [threading.Thread(target=hit) for _ in range(2 * workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - started


def summary(clients, elapsed: float) -> dict:
    next_ms = [v for c in clients for v in c.next_ms]
    submit_ms = [v for c in clients for v in c.submit_ms]
    errors = [e for c in clients for e in c.errors if not e.startswith("blocked")]
    requests = len(next_ms) + len(submit_ms) + len(errors)
    return {
        "clients": len(clients),
        "labels": sum(c.labels for c in clients),
        "labels_per_s": round(sum(c.labels for c in clients) / elapsed, 1),
        "requests": requests,
        "errors": len(errors),
        "error_rate": round(len(errors) / max(requests, 1), 5),
        "next_p50_ms": round(pct(next_ms, 0.5), 1),
        "next_p99_ms": round(pct(next_ms, 0.99), 1),
        "next_max_ms": round(max(next_ms, default=float("nan")), 1),
        "submit_p50_ms": round(pct(submit_ms, 0.5), 1),
        "submit_p99_ms": round(pct(submit_ms, 0.99), 1),
        "submit_max_ms": round(max(submit_ms, default=float("nan")), 1),
        "error_sample": errors[:3],
    }


def main():
    args = parse_args()
    ensure_database(args.database)
    setup_django(args)
    from django.db import connection, connections

    from bench.loop_data import annotators, bench_study, reset

    study = bench_study(args.units)
    reset(study)
    people = annotators(study, args.clients)
    with connection.cursor() as c:
        c.execute("SHOW max_connections")
        max_connections = int(c.fetchone()[0])
    connections.close_all()
    queue = f"soak-{uuid.uuid4().hex[:8]}"
    port = free_port()
    log = ROOT / "test-output" / "soak-worker.log"
    log.parent.mkdir(exist_ok=True)
    worker = None if args.no_worker else start_worker(args, queue, log)
    server = start_gunicorn(args, port, queue)
    warm_up_s = wait_until_serving(port, args.workers, study.token, people[0])
    watch = ConnectionWatch(args.database)
    watch.start()
    human = [Client(port, study.token, p, args.think) for p in people[args.zero_think :]]
    robots = [Client(port, study.token, p, 0.0) for p in people[: args.zero_think]]
    t0 = time.monotonic()
    stop_at = t0 + args.seconds
    threads = []
    for c in human + robots:
        c.reset(stop_at)
        threads.append(threading.Thread(target=c.run, daemon=True))
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(args.seconds + 120)
        elapsed = time.monotonic() - t0
    finally:
        watch.stop.set()
        for c in human + robots:
            c.conn.close()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        if worker is not None:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(60)
            except subprocess.TimeoutExpired:
                worker.kill()
        purge(args.broker, queue)
    from qc.models import QualityReport

    result = {
        "seconds": round(elapsed),
        "units": args.units,
        "think_mean_s": args.think,
        "warm_up_s": round(warm_up_s),
        "all": summary(human + robots, elapsed),
        "human_paced": summary(human, elapsed),
        "zero_think": summary(robots, elapsed),
        "db_connections_peak": watch.peak,
        "db_max_connections": max_connections,
        "reports_stored": QualityReport.objects.filter(study=study, kind="study").count(),
        "invariants": check_invariants(study),
        "load_average": os.getloadavg(),
    }
    print(json.dumps(result, indent=2), flush=True)
    inv = result["invariants"]
    bad = inv["units_with_slot_mismatch"] or inv["units_over_overlap"]
    bad = bad or inv["duplicate_annotator_unit"]
    sys.exit(1 if bad or result["all"]["errors"] else 0)


if __name__ == "__main__":
    main()
