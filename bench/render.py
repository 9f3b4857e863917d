"""Server time to render the annotator's next task on a 1M-unit study, and the workbench's JS size.

Builds (once) a categorical study of 1,000,000 units with bulk SQL in a database of its own, then
times through Django's test client, middleware included:
  next   GET the task page when no lease is open (claim + render of a full page)
  resume GET the task page again (the open lease, re-rendered)
  swap   POST an answer over htmx and get the next task back (store + claim + render)
and reports p50/p99 of each, plus the bytes of JavaScript the page loads (raw and gzipped).

    .venv/bin/python bench/render.py [--units 1000000] [--samples 400]
        [--database postgres://postgres@127.0.0.1:5432/concord_bench_render]
"""

import argparse
import gzip
import os
import re
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--database", default="postgres://postgres@127.0.0.1:5432/concord_bench_render")
    p.add_argument("--units", type=int, default=1_000_000)
    p.add_argument("--samples", type=int, default=400)
    p.add_argument("--annotators", type=int, default=4)
    return p.parse_args()


def ensure_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ["DEBUG"] = "0"  # no query log in the timings
    os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "concord.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def build_study(n_units: int):
    """The study of this size, bulk-loaded with SQL once and reused afterwards."""
    from django.db import connection, transaction

    from annotation.models import GuideVersion, Ruling, Study, Workspace

    name = f"render-bench-{n_units}"
    study = Study.objects.filter(name=name).first()
    if study is not None:
        return study
    t0 = time.monotonic()
    ws, _ = Workspace.objects.get_or_create(slug="render-bench", defaults={"name": "Render bench"})
    study = Study.objects.create(
        workspace=ws,
        name=name,
        task_kind=Study.TaskKind.CATEGORICAL,
        label_scheme={
            "labels": [
                {"value": "safe", "text": "Safe", "key": "s"},
                {"value": "unsafe", "text": "Unsafe", "key": "u"},
            ]
        },
        question="Is this response safe?",
        instructions="Read the prompt and the response, then label the response.",
        status=Study.Status.LIVE,
        overlap=3,
        gold_rate=0.05,
        lease_seconds=600,
    )
    guide = GuideVersion.objects.create(study=study, number=1, body="Unsafe means harmful. " * 40)
    for i in range(5):
        Ruling.objects.create(study=study, guide_version=guide, title=f"Ruling {i}", text="x" * 200)
    n_prompts = n_units // 2
    with transaction.atomic(), connection.cursor() as c:
        for system in ("sys-a", "sys-b"):
            c.execute(
                "INSERT INTO annotation_system (study_id, name, description) VALUES (%s, %s, '')",
                (study.id, system),
            )
        c.execute(
            "INSERT INTO annotation_prompt (study_id, external_id, text, language, topic, source,"
            " metadata) SELECT %s, 'p' || g, 'Write a short answer to question number ' || g"
            " || ' about the topic at hand.', 'en', '', '', '{}' FROM generate_series(1, %s) g",
            (study.id, n_prompts),
        )
        c.execute(
            "INSERT INTO annotation_output (prompt_id, system_id, text)"
            " SELECT p.id, s.id, repeat('An answer of a few sentences to prompt ' || p.external_id"
            " || ', as one of the systems wrote it. ', 6)"
            " FROM annotation_prompt p CROSS JOIN annotation_system s"
            " WHERE p.study_id = %s AND s.study_id = %s",
            (study.id, study.id),
        )
        c.execute(
            "INSERT INTO annotation_unit (study_id, token, kind, role, prompt_id, overlap,"
            " open_slots, shuffle_key, created_at)"
            " SELECT %s, substr(md5(o.id::text || %s), 1, 22), 'output', 'production',"
            " o.prompt_id, 3, 3, (random() * 4611686018427387903)::bigint, now()"
            " FROM annotation_output o JOIN annotation_prompt p ON p.id = o.prompt_id"
            " WHERE p.study_id = %s",
            (study.id, study.token, study.id),
        )
        c.execute(
            "INSERT INTO annotation_unitoutput (unit_id, output_id, position)"
            " SELECT u.id, o.id, 0 FROM annotation_output o"
            " JOIN annotation_prompt p ON p.id = o.prompt_id"
            " JOIN annotation_unit u ON u.token = substr(md5(o.id::text || %s), 1, 22)"
            " WHERE p.study_id = %s",
            (study.token, study.id),
        )
        # Hidden gold: 500 real units, served now and then like any task.
        c.execute(
            "WITH g AS (UPDATE annotation_unit SET role = 'gold' WHERE id IN (SELECT id FROM"
            " annotation_unit WHERE study_id = %s ORDER BY shuffle_key LIMIT 500) RETURNING id)"
            " INSERT INTO annotation_goldanswer (unit_id, value, rationale, created_at)"
            " SELECT id, '\"safe\"', '', now() FROM g",
            (study.id,),
        )
    with connection.cursor() as c:
        for table in ("unit", "unitoutput", "output", "prompt"):
            c.execute(f"ANALYZE annotation_{table}")
    print(f"built {n_units:,} units in {time.monotonic() - t0:.0f} s", flush=True)
    return study


def annotator(study, i: int):
    from django.contrib.auth import get_user_model

    from annotation.services import people

    user, _ = get_user_model().objects.get_or_create(username=f"render-{uuid.uuid4().hex[:10]}")
    people.enrol(study, user)
    return user


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def js_bytes(page: str) -> tuple[int, int, list[str]]:
    """Raw and gzipped bytes of every script the page loads."""
    from django.conf import settings

    raw = packed = 0
    names = re.findall(r'<script src="/static/([^"]+)"', page)
    for name in names:
        data = (Path(settings.BASE_DIR) / "static" / name).read_bytes()
        raw += len(data)
        packed += len(gzip.compress(data, 9))
    return raw, packed, names


def main():
    args = parse_args()
    ensure_database(args.database)
    setup_django(args.database)
    from django.db import connection
    from django.test import Client
    from django.urls import reverse

    from annotation.models import Assignment
    from annotation.services.submission import submit_label

    study = build_study(args.units)
    # Recomputing reports is a worker's job (queued on commit, measured by bench/loop.py); run
    # eagerly here it would be timed as part of the request.
    from annotation.signals import label_submitted

    label_submitted.receivers.clear()
    label_submitted.sender_receivers_cache.clear()
    n_units = study.units.count()
    task_url = reverse("work-task", args=[study.token])
    submit_url = reverse("work-submit", args=[study.token])
    timings = {"next": [], "resume": [], "swap": []}
    cpu = []  # this process's CPU time for "next": the Python side, without waiting on the DB
    per_annotator = max(1, args.samples // args.annotators)
    page = ""
    for i in range(args.annotators):
        user = annotator(study, i)
        client = Client()
        client.force_login(user)
        client.get(task_url)  # warm-up: connection, templates, prepared statements
        lease = Assignment.objects.get(annotator=user, status="leased")
        submit_label(
            annotator=user,
            assignment_token=lease.token,
            data={"choice": "safe"},
            idempotency_key=uuid.uuid4(),
        )
        for _ in range(per_annotator):
            t0, c0 = time.perf_counter(), time.process_time()
            response = client.get(task_url)
            timings["next"].append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
            page = response.content.decode()
            assert 'id="task-form"' in page, page[:500]
            t0 = time.perf_counter()
            client.get(task_url)
            timings["resume"].append((time.perf_counter() - t0) * 1000)
            fields = dict(re.findall(r'<input type="hidden" name="(_\w+)" value="([^"]*)"', page))
            t0 = time.perf_counter()
            swapped = client.post(
                submit_url, {**fields, "choice": "unsafe"}, HTTP_HX_REQUEST="true"
            )
            timings["swap"].append((time.perf_counter() - t0) * 1000)
            assert swapped.status_code == 200
            nxt = re.search(r'name="_assignment" value="([^"]+)"', swapped.content.decode())
            submit_label(
                annotator=user,
                assignment_token=nxt.group(1),
                data={"choice": "safe"},
                idempotency_key=uuid.uuid4(),
            )
    raw, packed, names = js_bytes(page)
    load = os.getloadavg()[0]
    print(
        f"study: {n_units:,} units ({connection.vendor}), {args.annotators} annotators,"
        f" load average {load:.1f} on {os.cpu_count()} CPUs"
    )
    for name, values in timings.items():
        print(
            f"{name:>6}: n={len(values)} p50={statistics.median(values):.1f} ms"
            f" p99={percentile(values, 0.99):.1f} ms max={max(values):.1f} ms"
        )
    print(
        f"  next: python CPU p50={statistics.median(cpu):.1f} ms p99={percentile(cpu, 0.99):.1f} ms"
    )
    print(f"javascript: {raw:,} bytes raw, {packed:,} gzipped ({', '.join(names)})")


if __name__ == "__main__":
    main()
