"""Concord project package: settings, URLs, the Celery app, WSGI/ASGI entry points."""

import os

# One BLAS/OpenMP thread per process, unless the operator says otherwise. Concord's processes
# (web workers, Celery workers, PostgreSQL) share the machine's cores; a multi-threaded BLAS in a
# worker spins its threads waiting for cores the others hold. On the 2-core bench machine at
# load 12, one report's agreement bootstraps took 39.9 s of CPU with OpenBLAS's default threads
# and 2.8 s with one (bench/README.md). Set here, before anything imports numpy.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

from .celery import app as celery_app  # noqa: E402

__all__ = ["celery_app"]
