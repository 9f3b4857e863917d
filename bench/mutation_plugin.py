"""pytest plugin for mutation runs only (`./dev mutate` loads it): cheaper per-mutant set-up.

mutmut starts one pytest session per mutant, so whatever a session pays once is paid hundreds of
times. The test database is built from the models (`--nomigrations`, in pyproject), and passwords
are hashed with MD5 instead of PBKDF2's million rounds (a factory user costs ~0.3 s otherwise).
Neither changes what a test asserts about the modules that are mutated. mutmut runs every
session in one process (each mutant's in a fork of it), so the in-memory cache is emptied at each
session's start, as a fresh `pytest` would find it.

On PostgreSQL (`bench/mutate.py --database postgres://.../<name>`) each session builds its own test
database, `<name>_<pid>`, so mutants run side by side never share one (and the name keeps the
prefix of the database it was given, not pytest-django's "test_").
"""

import os

FAST_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


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
