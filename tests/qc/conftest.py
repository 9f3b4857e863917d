"""Fixtures of the quality-report tests: an empty in-process debounce and state-row memo (SQLite
reuses ids, so a study could inherit an earlier one's)."""

import pytest


@pytest.fixture(autouse=True)
def no_queued_recomputations(monkeypatch):
    from qc import services

    monkeypatch.setattr(services, "_queued_until", {})
    monkeypatch.setattr(services, "_state_rows", set())
    monkeypatch.setattr(services, "_checked_until", {})
    monkeypatch.setattr(services, "_unchecked", set())


@pytest.fixture
def broker_mode():
    """Tasks go to a broker instead of running eagerly (restored afterwards)."""
    from concord.celery import app

    old = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield app
    app.conf.task_always_eager = old
