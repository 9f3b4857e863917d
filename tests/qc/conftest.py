"""Fixtures of the quality-report tests: fast password hashing for the many simulated raters."""

import pytest


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def broker_mode():
    """Tasks go to a broker instead of running eagerly (restored afterwards)."""
    from concord.celery import app

    old = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield app
    app.conf.task_always_eager = old


def start_worker(queue: str, log_path, **extra_env):
    """A `celery worker` process on the test database, consuming `queue` (like worker_process,
    but startable more than once per test and with extra environment, e.g. the pause hook)."""
    import os
    import subprocess
    import sys

    from django.conf import settings
    from django.db import connection

    db = settings.DATABASES["default"]
    env = dict(os.environ)
    env["DATABASE_URL"] = (
        f"postgres://{db['USER']}:{db.get('PASSWORD') or ''}@{db['HOST']}:{db['PORT']}/"
        f"{connection.settings_dict['NAME']}"
    )
    env["CELERY_BROKER_URL"] = settings.CELERY_BROKER_URL
    env["CELERY_TASK_ALWAYS_EAGER"] = "0"
    env["CELERY_TASK_DEFAULT_QUEUE"] = queue
    env.update({k: str(v) for k, v in extra_env.items()})
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "concord",
            "worker",
            "--pool=solo",
            "--concurrency=1",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-Q",
            queue,
            "-n",
            f"{queue}-{os.getpid()}@%h",
            "--loglevel=INFO",
        ],
        env=env,
        stdout=open(log_path, "a"),
        stderr=subprocess.STDOUT,
        cwd=settings.BASE_DIR,
    )
