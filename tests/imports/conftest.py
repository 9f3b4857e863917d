"""Fixtures of the import tests."""

import pytest


@pytest.fixture
def broker_mode():
    """Tasks go to a broker instead of running eagerly (restored afterwards)."""
    from concord.celery import app

    old = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield app
    app.conf.task_always_eager = old
