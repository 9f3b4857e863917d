"""The schemathesis run of tests/api/test_fuzz.py with many more examples per operation.

CI runs a bounded number of examples per operation and role (CONCORD_FUZZ_EXAMPLES, default 10);
this runs the same test with more (default 200), randomised, and prints operations, calls per
role, the statuses seen and the failures, from the test's call log.

    .venv/bin/python bench/fuzz.py [--examples 200] [pytest args...]

Needs the test environment (DATABASE_URL to PostgreSQL, as for ./dev test).
"""

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--examples", type=int, default=200)
    args, rest = p.parse_known_args()
    with tempfile.NamedTemporaryFile(suffix=".log", delete=False) as f:
        log = f.name
    env = dict(
        os.environ,
        CONCORD_FUZZ_EXAMPLES=str(args.examples),
        CONCORD_FUZZ_LOG=log,
        CONCORD_FUZZ_RANDOM="1",
    )
    t0 = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/api/test_fuzz.py",
            "-q",
            "-p",
            "no:cacheprovider",
            "--timeout=3600",
            *rest,
        ],
        cwd=ROOT,
        env=env,
    )
    seconds = time.monotonic() - t0
    with open(log) as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    os.unlink(log)
    operations = {r[0] for r in rows}
    by_role = collections.Counter(r[1] for r in rows)
    statuses = collections.Counter(r[2] for r in rows)
    print(
        f"\n{len(operations)} operations, {len(rows)} calls in {seconds:.0f} s "
        f"(up to {args.examples} examples per operation and role; each may add "
        "schemathesis' own follow-up calls, e.g. the same call without credentials)"
    )
    print("calls per role:", dict(by_role))
    print("statuses:", dict(sorted(statuses.items())))
    failing = collections.Counter((r[0], r[1]) for r in rows if r[2] == "failed")
    print("failing operation/role pairs:", len(failing))
    for (op, role), n in failing.most_common():
        print(f"  {op} as {role}: {n} failing calls")
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
