"""What a database's backends are doing, sampled: run it beside a loop at saturation to see
whether PostgreSQL waits on itself (locks, WAL, reads) or on its clients.

Every 20 ms it reads pg_stat_activity for the database's backends and counts them by state
and wait event; it prints the average number of backends in each, the largest first. A backend
"idle in transaction" with wait event ClientRead holds a transaction open while its web thread
does something else: runs Python, or waits for the GIL or a core.

    .venv/bin/python bench/waits.py [--database concord_bench] [--seconds 15]
"""

import argparse
import collections
import time

import psycopg


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--database", default="concord_bench", help="the database's name")
    p.add_argument("--server", default="postgres://postgres@127.0.0.1:5432/postgres")
    p.add_argument("--seconds", type=float, default=15.0)
    args = p.parse_args()
    seen, samples = collections.Counter(), 0
    with psycopg.connect(args.server, autocommit=True) as conn:
        end = time.monotonic() + args.seconds
        while time.monotonic() < end:
            rows = conn.execute(
                "SELECT state, wait_event_type, wait_event FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                [args.database],
            )
            seen.update(rows)
            samples += 1
            time.sleep(0.02)
    print(f"{samples} samples of {args.database}: backends on average, by state and wait event")
    for (state, kind, event), n in seen.most_common():
        print(f"{n / samples:7.2f}  {state or '-'}  {kind or '-'}  {event or '-'}")


if __name__ == "__main__":
    main()
