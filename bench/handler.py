"""What Django's request path costs the work loop: CPU per label through the WSGI handler
against calling the work API's views directly on the same WSGIRequest, in process.

The direct path skips the handler, the whole middleware stack (CSRF included), URL resolving and
the request signals, so the difference is the most a lean request path for /api/work/ could save
on the web side (issue 16); the lean path is the one gunicorn serves (annotation/lean.py: the
same views' hot path with the host, CSRF, headers and signals kept). Blocks of labels alternate
between the three paths, by one signed-in annotator on a bench study (bench/loop_data.py); it
prints the median and minimum of the web (this thread) and PostgreSQL (this connection's
backend) CPU per label.

    .venv/bin/python bench/handler.py [--units 20000] [--blocks 12] [--block 100]

With `--profile N` it then profiles N labels of the lean path by CPU time (this thread's, so
waiting on PostgreSQL does not count) and prints the functions that spend the most of it, each
with its share of the whole. The profiler's own overhead inflates every share of Python work
alike, so read the shares, not the times.
"""

import cProfile
import json
import pstats
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import history  # noqa: E402


def main():
    args = history.parse_args(_options)
    history.setup(args)
    from django.core.handlers.wsgi import WSGIHandler, WSGIRequest

    from annotation import api
    from annotation.lean import LeanWorkPath
    from bench.loop_data import annotators, bench_study, reset

    study = bench_study(args.units)
    reset(study)
    person = annotators(study, 1)[0]
    through_django = history.Annotator(WSGIHandler(), study, person)
    lean = history.Annotator(LeanWorkPath(WSGIHandler()), study, person)

    def request(method, path, body=b"", headers=None):
        return WSGIRequest(through_django.environ(method, path, body, headers))

    def direct_label():
        base = through_django.base
        token = json.loads(api.next_task(request("GET", f"{base}/next"), study.token).content)
        token = token["token"]
        body = json.dumps({"choice": "good", "timings": {"duration_ms": 1500}}).encode()
        headers = {
            "CONTENT_TYPE": "application/json",
            "HTTP_X_CSRFTOKEN": person["csrf"],
            "HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4()),
        }
        posted = request("POST", f"{base}/submit/{token}", body, headers)
        assert json.loads(api.submit(posted, study.token, token).content)["status"] == "stored"

    paths = {"handler": through_django.label, "lean": lean.label, "direct": direct_label}
    for label in paths.values():
        label()  # imports, first connection
    spent = {name: [] for name in paths}
    for block in range(args.blocks):
        for name in sorted(paths, reverse=block % 2 == 1):
            pg0, web0 = history.backend_cpu(), time.thread_time()
            for _ in range(args.block):
                paths[name]()
            pg1, web1 = history.backend_cpu(), time.thread_time()
            spent[name].append(((web1 - web0) / args.block * 1e3, (pg1 - pg0) / args.block * 1e3))
    print("path     web CPU ms/label median (min)   PostgreSQL CPU ms/label median (min)")
    for name, rows in spent.items():
        web, pg = [r[0] for r in rows], [r[1] for r in rows]
        print(
            f"{name:8} {statistics.median(web):>12.2f} ({min(web):.2f})"
            f" {statistics.median(pg):>24.2f} ({min(pg):.2f})"
        )
    if args.profile:
        profile(lean.label, args.profile)


def _options(parser):
    parser.add_argument(
        "--profile", type=int, default=0, help="then profile this many labels of the lean path"
    )


def profile(label, n: int, top: int = 40):
    """Where the lean path's web CPU goes: each function's cumulative share of this thread's CPU
    over `n` labels, the largest first."""
    profiler = cProfile.Profile(time.thread_time)
    profiler.runcall(lambda: [label() for _ in range(n)])
    stats = pstats.Stats(profiler)
    rows = sorted(
        (
            (cumulative, calls, name, path, line)
            for (path, line, name), (_, calls, _, cumulative, _) in stats.stats.items()
        ),
        reverse=True,
    )
    print(
        f"\nprofile of {n} labels through the lean path: {stats.total_tt / n * 1e3:.2f} ms CPU"
        " per label under the profiler; cumulative share, calls per label, function"
    )
    for cumulative, calls, name, path, line in rows[:top]:
        where = path.split("site-packages/")[-1].replace(str(history.ROOT) + "/", "")
        print(f"{cumulative / stats.total_tt:6.1%} {calls / n:7.1f}  {where}:{line} {name}")


if __name__ == "__main__":
    main()
