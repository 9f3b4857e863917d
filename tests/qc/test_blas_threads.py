"""Every Concord process runs its linear algebra on one thread unless the operator says otherwise:
the web and Celery workers share the cores with PostgreSQL, and a multi-threaded BLAS spins
waiting for them (bench/README.md, report recomputation)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import concord, numpy, threadpoolctl, json; "
    "numpy.ones((64, 64)) @ numpy.ones((64, 64)); "
    "print(json.dumps([p['num_threads'] for p in threadpoolctl.threadpool_info()]))"
)
KNOBS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _threads(**env) -> list[int]:
    clean = {k: v for k, v in os.environ.items() if k not in KNOBS}
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_concord_limits_blas_to_one_thread():
    threads = _threads()
    assert threads and all(n == 1 for n in threads)


def test_an_operators_own_setting_wins():
    threads = _threads(OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="2")
    assert threads and max(threads) == 2
