"""pytest plugin for mutation runs only (`./dev mutate` loads it): cheaper per-mutant set-up.

mutmut starts one pytest session per mutant, so whatever a session pays once is paid hundreds of
times. The test database is built from the models (`--nomigrations`, in pyproject), and passwords
are hashed with MD5 instead of PBKDF2's million rounds (a factory user costs ~0.3 s otherwise).
Neither changes what a test asserts about the modules that are mutated. mutmut runs every
session in one process (each mutant's in a fork of it), so the in-memory cache is emptied at each
session's start, as a fresh `pytest` would find it. So are the project's in-process caches
(`functools.cache`/`lru_cache` functions, and the module-level dicts in `PROCESS_CACHES`): the
stats run warms them in mutmut's parent process, and every mutant's fork would inherit them, so a
mutant in code that fills a cache (annotation.api's row readers and SQL texts) was never run.

On PostgreSQL (`bench/mutate.py --database postgres://.../<name>`) each session builds its own test
database, `<name>_<pid>`, so mutants run side by side never share one (and the name keeps the
prefix of the database it was given, not pytest-django's "test_").
"""

import os
import sys

FAST_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
PROJECT = ("annotation", "qc", "analysis", "concord")
PROCESS_CACHES = {
    "annotation.api": ["_ROW_READERS", "_STUDIES", "_SIGN_INS"],
    "qc.services": ["_queued_until", "_checked_until"],
}


def pytest_configure(config):
    from django.conf import settings
    from django.contrib.auth import hashers

    settings.PASSWORD_HASHERS = FAST_HASHERS
    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.postgresql":
        database.setdefault("TEST", {})["NAME"] = f"{database['NAME']}_{os.getpid()}"
    hashers.get_hashers.cache_clear()
    hashers.get_hashers_by_algorithm.cache_clear()


def pytest_sessionstart(session):
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    for cache in caches.all():
        if isinstance(cache, LocMemCache):  # never flush a shared Redis
            cache.clear()
    clear_process_caches()


def clear_process_caches():
    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] not in PROJECT:
            continue
        for value in list(vars(module).values()):
            clear = getattr(value, "cache_clear", None)
            if callable(clear) and getattr(value, "__module__", None) == name:
                clear()
        for attribute in PROCESS_CACHES.get(name, ()):
            getattr(module, attribute).clear()
