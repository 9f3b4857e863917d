"""The annotation loop under load: simulated annotators against gunicorn and PostgreSQL.

Each client signs in (a real session cookie), then loops GET next / POST submit over the lean JSON
API with CSRF and an Idempotency-Key, with gold and repeat injection and the presentation record
in the loop; with `--api v1` the same loop runs through the REST API (POST next, POST submit,
authenticated by a personal API token, DRF views, serializers and the write throttle). Reports
labels/s, p50/p99 of next and submit, errors, web process RSS, the EXPLAIN of the pick, and
checks the invariants afterwards.

    .venv/bin/python bench/loop.py [--sizes 10000,1000000] [--seconds 20]
        [--database postgres://postgres@127.0.0.1:5432/concord_bench] [--api lean,v1]
        [--floor ../shared/floor] [--rounds 2] [--count-labels 300]

Studies are bulk-loaded once into the benchmark database and reset between scenarios.

Beside each run: CPU per label of the gunicorn workers and of the PostgreSQL backends serving the
run's database (not the whole server: the machine is shared), the cores both keep busy, the
transactions per label PostgreSQL counted for that database (pg_stat_database), and the rows its
tables gave to sequential scans per label (pg_stat_user_tables). A counting run (one annotator,
`--count-labels` labels, through bench/counting_wsgi.py) adds the statements, transactions and
Redis commands per label counted at the drivers.

With `--floor DIR` the floor (DIR/floor_app.py: the same loop as two prepared statements in a bare
Django, see DIR/README.md) runs in the same minutes, scenario by scenario, under the same gunicorn
shape and client, in its own database (`--floor-database`, loaded from DIR/floor_schema.sql when
empty), and the table gains Concord's ratio to it.
"""

import argparse
import http.client
import itertools
import json
import os
import random
import signal
import socket
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
    p.add_argument(
        "--floor",
        default="",
        help="folder of the floor (floor_app.py): run it beside each scenario and print ratios",
    )
    p.add_argument("--floor-database", default="postgres://postgres@127.0.0.1:5432/floor")
    p.add_argument("--rounds", type=int, default=1, help="repeat the scenarios this many times")
    p.add_argument(
        "--count-labels",
        type=int,
        default=300,
        help="labels of the counting run (statements, transactions, Redis per label); 0: none",
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


def start_gunicorn(
    args, port: int, queue: str, app: str = "concord.wsgi", workers=None, threads=None
) -> subprocess.Popen:
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
    return _gunicorn(app, port, ROOT, env, workers or args.workers, threads or args.threads)


def _gunicorn(app: str, port: int, cwd, env: dict, workers: int, threads: int):
    proc = subprocess.Popen(
        [
            str(ROOT / ".venv/bin/gunicorn"),
            app,
            "-k",
            "gthread",
            "--workers",
            str(workers),
            "--threads",
            str(threads),
            "--bind",
            f"127.0.0.1:{port}",
            "--backlog",
            "512",
            "--keep-alive",
            "30",
            "--log-level",
            "warning",
            "--no-control-socket",
            "--timeout",
            "120",
        ],
        cwd=cwd,
        env=env,
    )
    # Up when a worker answers HTTP (any status): on a loaded machine importing Concord takes a
    # worker many seconds, during which the master already accepts connections.
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            conn.request("GET", "/healthz", headers={"Host": "127.0.0.1"})
            conn.getresponse().read()
            conn.close()
            return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("gunicorn did not start")


def warm_up(clients) -> None:
    """Every client on the connection it keeps, until each has stored labels: the server
    threads open their database connections and prepare their statements. (A cold start of 64
    connections at once queues for seconds behind gunicorn's gthread accept loop, and workers
    that are still importing answer late; none of that is measured.)"""
    deadline = time.monotonic() + 180
    while True:
        run_all(clients, time.monotonic() + 5, think=0)
        if all(c.labels >= 3 for c in clients) or time.monotonic() > deadline:
            return


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


def _admin(url: str):
    import psycopg

    return psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True)


def backend_pids(url: str) -> list[int]:
    """The PostgreSQL backends connected to this database (the web processes' connections)."""
    with _admin(url) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s"
            " AND backend_type = 'client backend'",
            (url.rsplit("/", 1)[1],),
        ).fetchall()
    return [r[0] for r in rows]


def transactions(url: str) -> int:
    """Transactions PostgreSQL counted for this database (committed and rolled back).

    Backends publish their counts when idle for a second: call it with the clients at rest."""
    with _admin(url) as conn:
        row = conn.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
            (url.rsplit("/", 1)[1],),
        ).fetchone()
    return row[0]


def seq_rows(url: str) -> int:
    """Rows this database's tables have given to sequential scans so far (pg_stat_user_tables;
    published as `transactions` are). Per label it should stay near zero: the hot statements
    read by index, and a generic plan made while the tables were small shows here."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(
            "SELECT coalesce(sum(seq_tup_read), 0)::bigint FROM pg_stat_user_tables"
        ).fetchone()[0]


# Time for idle backends to publish their statistics (PostgreSQL flushes them after 1 s idle).
STATS_SETTLE = 1.5


class Measure:
    """CPU of the web workers and of the database's backends, and its transactions, between
    `start` and `stop` (the clients at rest at both ends)."""

    def __init__(self, master_pid: int, url: str):
        self.master, self.url = master_pid, url

    def start(self):
        time.sleep(STATS_SETTLE)
        self.pids, self.backends = worker_pids(self.master), backend_pids(self.url)
        self.xact0, self.seq0 = transactions(self.url), seq_rows(self.url)
        self.cpu0, self.pg0 = cpu_seconds(self.pids), cpu_seconds(self.backends)
        self.t0 = time.monotonic()
        return self.t0

    def stop(self, elapsed: float, labels: int) -> dict:
        cpu1, pg1 = cpu_seconds(self.pids), cpu_seconds(self.backends)
        time.sleep(STATS_SETTLE)
        xacts = transactions(self.url) - self.xact0
        seq = seq_rows(self.url) - self.seq0
        n = max(labels, 1)
        web, pg = cpu1 - self.cpu0, pg1 - self.pg0
        return {
            "web_cpu_ms_per_label": 1000 * web / n,
            "pg_cpu_ms_per_label": 1000 * pg / n,
            "cpu_ms_per_label": 1000 * (web + pg) / n,
            "web_cores": round(web / elapsed, 2),
            "pg_cores": round(pg / elapsed, 2),
            "xacts_per_label": xacts / n,
            "seq_rows_per_label": seq / n,
            "rss_mib_per_worker": round(max(rss_mib(p) for p in self.pids), 1),
            "rss_mib_total": round(sum(rss_mib(p) for p in self.pids) + rss_mib(self.master), 1),
        }


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
        clients = [Client(port, study.token, p, think, api) for p in people]
        warm_up(clients)
        measure = Measure(server.pid, args.database)
        t0 = measure.start()
        run_all(clients, t0 + seconds, think=think)
        elapsed = time.monotonic() - t0
        labels = sum(c.labels for c in clients)
        measured = measure.stop(elapsed, labels)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)
        purge(args.broker, queue)
    next_ms = [v for c in clients for v in c.next_ms]
    submit_ms = [v for c in clients for v in c.submit_ms]
    errors = [e for c in clients for e in c.errors]
    return {
        "system": "concord",
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
        "load": load(),
        **measured,
    }


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# --- the floor ----------------------------------------------------------------------------------

# Fresh annotator ids for every floor run (its labels stay; ids must not repeat across sessions).
_floor_ids = itertools.count((int(time.time()) % 1_000_000) * 1000)


class FloorClient:
    """The floor's closed loop, as its floor_loop.py drives it: GET /next2, POST /submit2."""

    def __init__(self, port: int, annotator: int):
        self.port, self.a = port, annotator
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def request(self, method, path, body=None, headers=None):
        h = {"Host": "127.0.0.1"}
        h.update(headers or {})
        t0 = time.perf_counter()
        self.conn.request(method, path, body=body, headers=h)
        response = self.conn.getresponse()
        data = response.read()
        return response.status, data, (time.perf_counter() - t0) * 1000

    def reset(self, stop_at):
        self.stop_at = stop_at
        self.next_ms, self.submit_ms, self.errors, self.labels, self.slow = [], [], [], 0, []

    def run(self):
        rng = random.Random(self.a)
        if self.think:
            time.sleep(rng.uniform(0, self.think))
        while time.monotonic() < self.stop_at:
            try:
                status, data, ms = self.request("GET", f"/next2?a={self.a}")
                if status != 200:
                    self.errors.append(f"next {status}")
                    continue
                self.next_ms.append(ms)
                unit = json.loads(data)["unit"]
                if unit is None:
                    self.errors.append("blocked")
                    break
                if self.think:
                    time.sleep(self.think * rng.uniform(0.5, 1.5))
                body = json.dumps({"unit": unit, "value": rng.randint(0, 4)})
                status, data, ms = self.request(
                    "POST",
                    f"/submit2?a={self.a}",
                    body=body,
                    headers={"Content-Type": "application/json"},
                )
                if status != 201:
                    self.errors.append(f"submit {status} {data[:60]!r}")
                    continue
                self.submit_ms.append(ms)
                self.labels += 1
            except (OSError, http.client.HTTPException) as exc:
                self.errors.append(repr(exc))
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)


def ensure_floor(args) -> None:
    """The floor's database, loaded from its schema file once (about a minute)."""
    import psycopg

    name = args.floor_database.rsplit("/", 1)[1]
    with _admin(args.floor_database) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    with psycopg.connect(args.floor_database) as conn:
        loaded = conn.execute("SELECT to_regclass('units') IS NOT NULL").fetchone()[0]
    if not loaded:
        print("loading the floor's 1,000,000 units", flush=True)
        subprocess.run(
            ["psql", args.floor_database, "-q", "-v", "ON_ERROR_STOP=1", "-f", "floor_schema.sql"],
            cwd=args.floor,
            check=True,
        )


def run_floor(args, n_clients: int, think: float, seconds: float) -> dict:
    import psycopg

    with psycopg.connect(args.floor_database, autocommit=True) as conn:
        for table in ("units", "labels", "leases"):
            conn.execute(f"VACUUM ANALYZE {table}")
    db = args.floor_database
    host_port = db.split("@", 1)[1].split("/", 1)[0]
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="floor_settings",
        FLOOR_SSB="1",
        FLOOR_DB=db.rsplit("/", 1)[1],
        FLOOR_DB_USER=db.split("://", 1)[1].split("@", 1)[0].split(":", 1)[0],
    )
    assert host_port == "127.0.0.1:5432", "the floor's settings use 127.0.0.1:5432"
    port = free_port()
    server = _gunicorn("floor_app:application", port, args.floor, env, args.workers, args.threads)
    try:
        clients = [FloorClient(port, next(_floor_ids)) for _ in range(n_clients)]
        warm_up(clients)
        measure = Measure(server.pid, db)
        t0 = measure.start()
        run_all(clients, t0 + seconds, think=think)
        elapsed = time.monotonic() - t0
        labels = sum(c.labels for c in clients)
        measured = measure.stop(elapsed, labels)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)
    next_ms = [v for c in clients for v in c.next_ms]
    submit_ms = [v for c in clients for v in c.submit_ms]
    errors = [e for c in clients for e in c.errors]
    return {
        "system": "floor",
        "api": "floor",
        "units": 1_000_000,
        "clients": n_clients,
        "think_s": think,
        "labels": labels,
        "labels_per_s": labels / elapsed,
        "next_p50": pct(next_ms, 0.5),
        "next_p99": pct(next_ms, 0.99),
        "submit_p50": pct(submit_ms, 0.5),
        "submit_p99": pct(submit_ms, 0.99),
        "errors": len(errors),
        "error_sample": errors[:3],
        "load": load(),
        **measured,
    }


# --- the counting run ----------------------------------------------------------------------------


def count_run(args, study, n_labels: int, api: str = "lean") -> dict:
    """Statements, transactions and Redis commands per label on the common path (next + submit),
    counted at the drivers in the server (bench/counting_wsgi.py) for one annotator."""
    from django.db import connections

    from bench.loop_data import annotators, reset

    reset(study)
    person = annotators(study, 1)[0]
    connections.close_all()
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    port = free_port()
    server = start_gunicorn(args, port, queue, app="bench.counting_wsgi", workers=1, threads=1)
    client = Client(port, study.token, person, 0.0, api)

    def counts():
        status, data, _ = client.request(client.conn, "GET", "/__bench/counts")
        assert status == 200, status
        return json.loads(data)

    try:
        client.reset(time.monotonic() + 3600)
        base = f"/api/v1/work/{study.token}" if api == "v1" else f"/api/work/{study.token}"

        def one_label():
            status, data, _ = client.next_task(client.conn, base)
            task = json.loads(data)
            assert status == 200 and task["token"], (status, data[:200])
            status, data, _ = client.submit(client.conn, base, task["token"])
            assert status == 200 and json.loads(data)["status"] == "stored", (status, data[:200])

        for _ in range(20):  # warm-up: connection, session cache, prepared statements
            one_label()
        counts()
        for _ in range(n_labels):
            one_label()
        got = counts()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)
        purge(args.broker, queue)
    return {
        "api": api,
        "labels": n_labels,
        "requests_per_label": got["requests"] / n_labels,
        "statements_per_label": got["statements"] / n_labels,
        "transactions_per_label": got["transactions"] / n_labels,
        "redis_commands_per_label": got["redis_commands"] / n_labels,
        "statements": {k: round(v / n_labels, 2) for k, v in got["seen"].items()},
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

    if args.floor:
        ensure_floor(args)
    sizes = [int(s) for s in args.sizes.split(",")]
    largest = max(sizes)
    report, counted = [], []
    print(f"load {load()}", flush=True)
    for size in sizes:
        study = bench_study(size)
        spec = args.scenarios if size == largest else args.small_scenarios
        for round_ in range(1, args.rounds + 1):
            for item in spec.split(","):
                clients, think = item.split(":")
                seconds = args.seconds if float(think) == 0 else max(args.seconds, 30)
                floor = None
                if args.floor and size == largest:
                    floor = run_floor(args, int(clients), float(think), seconds)
                    floor["round"] = round_
                    report.append(floor)
                    print(json.dumps(floor), flush=True)
                for api in args.api.split(","):
                    result = run_scenario(args, study, int(clients), float(think), seconds, api)
                    result["units"] = size
                    result["round"] = round_
                    if floor is not None:
                        result["floor_ratio"] = result["labels_per_s"] / floor["labels_per_s"]
                    result.update(check_invariants(study))
                    report.append(result)
                    print(json.dumps(result), flush=True)
        if size == largest and args.count_labels:
            for api in args.api.split(","):
                result = count_run(args, study, args.count_labels, api)
                result.update(check_invariants(study))
                counted.append(result)
                print(json.dumps(result), flush=True)
        print(f"\nEXPLAIN ANALYZE of the pick, study of {size:,} units:\n{explain_pick(study)}\n")
    print(
        "\nround api   units      clients think  labels/s  x floor  next p50/p99 ms"
        "  submit p50/p99 ms  errors  CPU ms/label web+pg  cores web+pg  xact/label"
        "  seq rows/label  load"
    )
    for r in report:
        ratio = f"{r['floor_ratio']:.2f}" if "floor_ratio" in r else ""
        print(
            f"{r['round']:>5} {r['api']:<5} {r['units']:>9,} {r['clients']:>7} {r['think_s']:>5g}"
            f" {r['labels_per_s']:>9.0f}  {ratio:>7}"
            f"  {r['next_p50']:>6.1f}/{r['next_p99']:<7.1f}  {r['submit_p50']:>7.1f}/"
            f"{r['submit_p99']:<8.1f} {r['errors']:>6}  "
            f"{r['web_cpu_ms_per_label']:>5.2f}+{r['pg_cpu_ms_per_label']:<5.2f}"
            f"          {r['web_cores']:>4.2f}+{r['pg_cores']:<4.2f}"
            f"  {r['xacts_per_label']:>8.2f}  {r['seq_rows_per_label']:>14.1f}  {r['load']}"
        )
    if counted:
        print("\ncounted on one annotator (next + submit), per label:")
        print("api   labels  requests  statements  transactions  redis commands")
        for r in counted:
            print(
                f"{r['api']:<5} {r['labels']:>6} {r['requests_per_label']:>9.2f}"
                f" {r['statements_per_label']:>11.2f} {r['transactions_per_label']:>13.2f}"
                f" {r['redis_commands_per_label']:>15.2f}"
            )


if __name__ == "__main__":
    main()
