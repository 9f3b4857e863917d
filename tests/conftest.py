"""Test-wide set-up: service detection for the markers, and shared fixtures.

A test marked `postgres`, `redis`, `worker` or `browser` skips when that service is absent, unless
CONCORD_REQUIRE_SERVICES=1 (as in CI), where a missing service fails the test instead.
"""

import os
import shutil
from functools import cache

import pytest
from django.conf import settings

REQUIRE_SERVICES = os.environ.get("CONCORD_REQUIRE_SERVICES", "") in {"1", "true", "yes"}
CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def using_postgres() -> bool:
    return settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"


@cache
def redis_reachable() -> bool:
    url = settings.CELERY_BROKER_URL
    if not url.startswith("redis://"):
        return False
    try:
        import redis

        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except Exception:
        return False


def chromium_available() -> bool:
    return bool(CHROMIUM) and os.path.exists(CHROMIUM)


def _missing(marker: str) -> str | None:
    if marker in {"postgres", "worker"} and not using_postgres():
        return "needs PostgreSQL: set DATABASE_URL=postgres://..."
    if marker in {"redis", "worker"} and not redis_reachable():
        return "needs Redis: set CELERY_BROKER_URL=redis://... to a running server"
    if marker == "browser" and not chromium_available():
        return "needs Chromium (apt-get install chromium) or CHROMIUM_PATH"
    return None


def pytest_runtest_setup(item):
    for marker in ("postgres", "redis", "worker", "browser"):
        if item.get_closest_marker(marker):
            reason = _missing(marker)
            if reason and REQUIRE_SERVICES:
                pytest.fail(f"[{marker}] {reason} (CONCORD_REQUIRE_SERVICES is set)")
            elif reason:
                pytest.skip(reason)


def start_worker(queue: str, log_path, **extra_env):
    """A real `celery worker` process on the test database and the configured Redis broker,
    consuming only `queue` (so stray messages from other runs are never taken). Extra environment
    (e.g. a test hook) goes to the worker. Tasks must be sent to `queue` explicitly, since the
    test process itself may run tasks eagerly."""
    import subprocess
    import sys

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
    command = [sys.executable, "-m", "celery", "-A", "concord", "worker", "--pool=solo"]
    command += ["--concurrency=1", "--without-gossip", "--without-mingle", "--without-heartbeat"]
    command += ["-Q", queue, "-n", f"{queue}-{os.getpid()}@%h", "--loglevel=INFO"]
    with open(log_path, "a") as log:
        return subprocess.Popen(
            command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=settings.BASE_DIR
        )


@pytest.fixture
def worker_process(transactional_db, tmp_path):
    """A real worker (see `start_worker`) on a queue of its own for this test; stopped after.

    Yields the Popen, with `.queue` and `.log_path`.
    """
    import subprocess
    import time

    from concord.celery import app as celery_app

    queue = f"test-{os.getpid()}-{time.monotonic_ns()}"
    log = tmp_path / "worker.log"
    proc = start_worker(queue, log)
    proc.queue = queue
    proc.log_path = log
    old_queue = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = queue
    try:
        yield proc
    finally:
        celery_app.conf.task_default_queue = old_queue
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.2):
    """Poll `predicate` until it returns something truthy, or fail after `timeout` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval)
    pytest.fail(f"condition not met within {timeout:.0f} s")


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hashing(request):
    """Tests hash with MD5: PBKDF2's deliberate 0.4 s per password, over the thousands of users the
    fixtures create, was minutes of the suite. Production keeps Django's default hashers."""
    if not request.config.pluginmanager.hasplugin("django"):
        yield
        return
    from django.test import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(autouse=True)
def _reports_recompute_only_where_tested(request):
    """Only the report pipeline's own tests recompute on every label; elsewhere (engine, workbench)
    an eager recomputation per label would only slow the tests and contend for SQLite's lock."""
    in_qc = "tests/qc/" in str(request.node.path).replace("\\", "/")
    if in_qc or not request.config.pluginmanager.hasplugin("django"):
        return
    request.getfixturevalue("settings").CONCORD_QC_AUTO_RECOMPUTE = False


@pytest.fixture(scope="session")
def chromium():
    """One headless Debian Chromium for the whole run, driven by Playwright's sync API.

    There is one per run because the sync API allows one event loop per thread. That loop would
    make Django refuse the tests' own (synchronous) ORM calls as "async", hence the switch.
    """
    from playwright.sync_api import sync_playwright

    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
