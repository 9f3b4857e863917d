"""The annotation loop under load: simulated annotators against gunicorn and PostgreSQL.

Each client signs in (a real session cookie), then loops GET next / POST submit over the lean JSON
API with CSRF and an Idempotency-Key, with gold and repeat injection and the presentation record
in the loop; with `--api v1` the same loop runs through the REST API (POST next, POST submit,
authenticated by a personal API token, DRF views, serializers and the write throttle). Reports
labels/s, p50/p99 of next and submit, errors, web process RSS, the EXPLAIN of the pick, and
checks the invariants afterwards.

    .venv/bin/python bench/loop.py [--sizes 10000,1000000] [--seconds 20]
        [--database postgres://postgres@127.0.0.1:5432/concord_bench] [--api lean,v1]

Studies are bulk-loaded once into the benchmark database and reset between scenarios.
"""

import argparse
import http.client
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--database", default="postgres://postgres@127.0.0.1:5432/concord_bench")
    p.add_argument("--broker", default="redis://127.0.0.1:6379/14")
    p.add_argument(
        "--cache",
        default="redis://127.0.0.1:6379/13",
        help="CACHE_URL of the web processes (sessions are read through it); '' for none",
    )
    p.add_argument("--sizes", default="10000,1000000")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument(
        "--scenarios",
        default="16:0,64:0,64:2",
        help="clients:think-seconds, comma separated (run on the largest size)",
    )
    p.add_argument("--small-scenarios", default="16:0,64:0", help="run on the smaller sizes")
    p.add_argument(
        "--api",
        default="lean,v1",
        help="which loops to run, comma separated: lean (/api/work/) and/or v1 (/api/v1/work/)",
    )
    return p.parse_args()


def setup_django(args):
    os.environ["DATABASE_URL"] = args.database
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "concord.settings")
    os.environ["DEBUG"] = "0"
    os.environ["CELERY_BROKER_URL"] = args.broker
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "0"
    import django

    django.setup()


def ensure_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    env = dict(os.environ, DATABASE_URL=url)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(args, port: int, queue: str) -> subprocess.Popen:
    env = dict(
        os.environ,
        DATABASE_URL=args.database,
        DEBUG="0",
        DB_CONN_MAX_AGE="600",
        CELERY_BROKER_URL=args.broker,
        CELERY_TASK_ALWAYS_EAGER="0",
        CACHE_URL=args.cache,
        # Recompute tasks queue up in a queue of the run's own (no worker drains it here).
        CELERY_TASK_DEFAULT_QUEUE=queue,
        # The REST loop's write throttle stays on (its cost is measured) but never refuses here.
        CONCORD_API_WRITE_RATE="1000000/min",
    )
    proc = subprocess.Popen(
        [
            str(ROOT / ".venv/bin/gunicorn"),
            "concord.wsgi",
            "-k",
            "gthread",
            "--workers",
            str(args.workers),
            "--threads",
            str(args.threads),
            "--bind",
            f"127.0.0.1:{port}",
            "--backlog",
            "512",
            "--keep-alive",
            "30",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("gunicorn did not start")


def rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def worker_pids(master: int) -> list[int]:
    out = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(master)], capture_output=True, text=True
    ).stdout
    return [int(p) for p in out.split()]


def cpu_seconds(pids) -> float:
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            pass
    return total


def postgres_cpu() -> float:
    out = subprocess.run(["pgrep", "-x", "postgres"], capture_output=True, text=True).stdout
    return cpu_seconds(int(p) for p in out.split())


class Client:
    """One simulated annotator on one persistent HTTP connection (as a browser keeps it)."""

    def __init__(self, port, study_token, person, think, api="lean"):
        self.port, self.token, self.person = port, study_token, person
        self.api = api
        self.think = think
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.reset(0.0)

    def reset(self, stop_at):
        self.stop_at = stop_at
        self.next_ms, self.submit_ms, self.errors, self.labels = [], [], [], 0
        self.cookie = f"sessionid={self.person['session']}; csrftoken={self.person['csrf']}"
        self.slow, self.started = [], time.monotonic()

    def request(self, conn, method, path, body=None, headers=None):
        if self.api == "v1":
            h = {"Authorization": f"Bearer {self.person['token']}", "Host": "127.0.0.1"}
        else:
            h = {"Cookie": self.cookie, "Host": "127.0.0.1"}
        h.update(headers or {})
        t0 = time.perf_counter()
        conn.request(method, path, body=body, headers=h)
        response = conn.getresponse()
        data = response.read()
        ms = (time.perf_counter() - t0) * 1000
        if ms > 1000:
            self.slow.append((round(time.monotonic() - self.started, 1), method, round(ms)))
        return response.status, data, ms

    def next_task(self, conn, base):
        if self.api == "v1":
            return self.request(conn, "POST", f"{base}/next/")
        return self.request(conn, "GET", f"{base}/next")

    def submit(self, conn, base, task):
        key = str(uuid.uuid4())
        if self.api == "v1":
            body = {"idempotency_key": key, "answer": {"choice": "good"}}
            body["timings"] = {"duration_ms": 1500}
            return self.request(
                conn,
                "POST",
                f"{base}/tasks/{task}/submit/",
                body=json.dumps(body),
                headers={"Content-Type": "application/json"},
            )
        body = json.dumps({"choice": "good", "timings": {"duration_ms": 1500}})
        return self.request(
            conn,
            "POST",
            f"{base}/submit/{task}",
            body=body,
            headers={
                "Content-Type": "application/json",
                "X-CSRFToken": self.person["csrf"],
                "Idempotency-Key": key,
            },
        )

    def run(self):
        conn = self.conn
        base = f"/api/v1/work/{self.token}" if self.api == "v1" else f"/api/work/{self.token}"
        rng = random.Random(self.person["id"])
        if self.think:
            # People do not start or think in lockstep: a staggered start, and think times
            # spread around the mean (0.5x to 1.5x), else every client fires in one burst.
            time.sleep(rng.uniform(0, self.think))
        while time.monotonic() < self.stop_at:
            try:
                status, data, ms = self.next_task(conn, base)
                if status != 200:
                    self.errors.append(f"next {status}")
                    continue
                self.next_ms.append(ms)
                task = json.loads(data)
                if task["token"] is None:
                    self.errors.append(f"blocked {task['blocked']}")
                    break
                if self.think:
                    time.sleep(self.think * rng.uniform(0.5, 1.5))
                status, data, ms = self.submit(conn, base, task["token"])
                if status != 200 or json.loads(data)["status"] != "stored":
                    self.errors.append(f"submit {status} {data[:80]!r}")
                    continue
                self.submit_ms.append(ms)
                self.labels += 1
            except (OSError, http.client.HTTPException) as exc:
                self.errors.append(repr(exc))
                conn.close()
                conn = self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)


def run_all(clients, stop_at, think):
    for c in clients:
        c.reset(stop_at)
        c.think = think
        c.next_ms, c.submit_ms, c.errors, c.labels, c.slow = [], [], [], 0, []
        c.started = time.monotonic()
    threads = [threading.Thread(target=c.run, daemon=True) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def pct(values, q):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def run_scenario(args, study, n_clients, think, seconds, api="lean"):
    from django.db import connections

    from bench.loop_data import annotators, reset

    reset(study)
    people = annotators(study, n_clients)
    connections.close_all()
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    port = free_port()
    server = start_gunicorn(args, port, queue)
    try:
        # Warm-up, every client on the connection it keeps: the server threads open their
        # database connections and prepare their statements. (A cold start of 64 connections
        # at once queues for seconds behind gunicorn's gthread accept loop; not measured here.)
        clients = [Client(port, study.token, p, think, api) for p in people]
        run_all(clients, time.monotonic() + 5, think=0)
        pids = worker_pids(server.pid)
        cpu0, pg0 = cpu_seconds(pids), postgres_cpu()
        t0 = time.monotonic()
        run_all(clients, t0 + seconds, think=think)
        elapsed = time.monotonic() - t0
        cpu1, pg1 = cpu_seconds(pids), postgres_cpu()
        rss = [rss_mib(p) for p in pids]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)
        purge(args.broker, queue)
    labels = sum(c.labels for c in clients)
    next_ms = [v for c in clients for v in c.next_ms]
    submit_ms = [v for c in clients for v in c.submit_ms]
    errors = [e for c in clients for e in c.errors]
    return {
        "api": api,
        "units": study.units.count() if False else None,
        "clients": n_clients,
        "think_s": think,
        "labels": labels,
        "labels_per_s": labels / elapsed,
        "next_p50": pct(next_ms, 0.5),
        "next_p99": pct(next_ms, 0.99),
        "submit_p50": pct(submit_ms, 0.5),
        "submit_p99": pct(submit_ms, 0.99),
        "errors": len(errors),
        "slow_over_1s": sorted(v for c in clients for v in c.slow)[:8],
        "error_sample": errors[:3],
        "web_cpu_ms_per_label": 1000 * (cpu1 - cpu0) / max(labels, 1),
        "pg_cpu_ms_per_label": 1000 * (pg1 - pg0) / max(labels, 1),
        "rss_mib_per_worker": round(max(rss), 1),
        "rss_mib_total": round(sum(rss) + rss_mib(server.pid), 1),
    }


def purge(broker: str, queue: str) -> None:
    try:
        import redis

        redis.Redis.from_url(broker).delete(queue)
    except Exception:  # noqa: BLE001 - best effort cleanup
        pass


def check_invariants(study) -> dict:
    from django.db import connection

    with connection.cursor() as c:
        c.execute(
            "SELECT count(*) FROM annotation_unit u WHERE u.study_id = %s AND u.role = 'production'"
            " AND u.open_slots <> u.overlap - (SELECT count(*) FROM annotation_assignment a"
            " WHERE a.unit_id = u.id AND a.purpose = 'production'"
            " AND a.status IN ('leased', 'submitted'))",
            (study.id,),
        )
        slot_mismatch = c.fetchone()[0]
        c.execute(
            "SELECT count(*) FROM (SELECT unit_id FROM annotation_label WHERE study_id = %s"
            " AND purpose = 'production' GROUP BY unit_id HAVING count(*) > 3) t",
            (study.id,),
        )
        over = c.fetchone()[0]
        c.execute(
            "SELECT count(*) FROM (SELECT 1 FROM annotation_label WHERE study_id = %s"
            " AND purpose = 'production' GROUP BY annotator_id, unit_id HAVING count(*) > 1) t",
            (study.id,),
        )
        dup = c.fetchone()[0]
        c.execute(
            "SELECT purpose, count(*) FROM annotation_label WHERE study_id = %s GROUP BY purpose",
            (study.id,),
        )
        purposes = dict(c.fetchall())
        # Per-annotator system mix: the largest gap between a rater's share of a system and 1/4.
        c.execute(
            "SELECT l.annotator_id, o.system_id, count(*) FROM annotation_label l"
            " JOIN annotation_unitoutput uo ON uo.unit_id = l.unit_id"
            " JOIN annotation_output o ON o.id = uo.output_id"
            " WHERE l.study_id = %s AND l.purpose = 'production' GROUP BY 1, 2",
            (study.id,),
        )
        per = {}
        for annotator, system, n in c.fetchall():
            per.setdefault(annotator, {})[system] = n
    gaps = []
    for counts in per.values():
        total = sum(counts.values())
        if total >= 40:
            gaps.append(max(abs(n / total - 0.25) for n in counts.values()))
    return {
        "units_with_slot_mismatch": slot_mismatch,
        "units_over_overlap": over,
        "duplicate_annotator_unit": dup,
        "labels_by_purpose": purposes,
        "max_system_share_gap": round(max(gaps), 3) if gaps else None,
    }


def explain_pick(study) -> str:
    from django.db import connection

    from annotation.models import Enrolment
    from annotation.services.assignment import _pick_with_members_sql, segment

    e = Enrolment.objects.filter(study=study).first()
    lo, hi = segment(e.queue_seed, e.walk_pass, e.walk_step)
    with connection.cursor() as c:
        c.execute("BEGIN")
        c.execute(
            "EXPLAIN (ANALYZE, COSTS OFF, TIMING ON) " + _pick_with_members_sql(),
            (study.id, lo, hi, e.user_id),
        )
        plan = "\n".join(r[0] for r in c.fetchall())
        c.execute("ROLLBACK")
    return plan


def main():
    args = parse_args()
    ensure_database(args.database)
    setup_django(args)
    from bench.loop_data import bench_study

    sizes = [int(s) for s in args.sizes.split(",")]
    largest = max(sizes)
    report = []
    for size in sizes:
        study = bench_study(size)
        spec = args.scenarios if size == largest else args.small_scenarios
        for item in spec.split(","):
            clients, think = item.split(":")
            seconds = args.seconds if float(think) == 0 else max(args.seconds, 30)
            for api in args.api.split(","):
                result = run_scenario(args, study, int(clients), float(think), seconds, api)
                result["units"] = size
                result.update(check_invariants(study))
                report.append(result)
                print(json.dumps(result), flush=True)
        print(f"\nEXPLAIN ANALYZE of the pick, study of {size:,} units:\n{explain_pick(study)}\n")
    print(
        "\napi   units      clients think  labels/s  next p50/p99 ms  submit p50/p99 ms  errors  "
        "web+pg CPU ms/label  RSS MiB/worker"
    )
    for r in report:
        print(
            f"{r['api']:<5} {r['units']:>9,} {r['clients']:>7} {r['think_s']:>5g}"
            f" {r['labels_per_s']:>9.0f}"
            f"  {r['next_p50']:>6.1f}/{r['next_p99']:<7.1f}  {r['submit_p50']:>7.1f}/"
            f"{r['submit_p99']:<8.1f} {r['errors']:>6}  "
            f"{r['web_cpu_ms_per_label']:>5.1f}+{r['pg_cpu_ms_per_label']:<5.1f}"
            f"        {r['rss_mib_per_worker']:>6}"
        )
    _ = statistics  # (kept for ad-hoc use)


if __name__ == "__main__":
    main()
