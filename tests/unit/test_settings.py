"""Production settings refuse unsafe configuration at startup, and `check --deploy` is clean."""

import os
import subprocess
import sys

import pytest
from django.conf import settings

GOOD_KEY = "k" * 20 + "-a-random-production-secret-key-of-enough-length-0123456789"


def run_manage(*args: str, **env_overrides: str) -> subprocess.CompletedProcess:
    # A deployment's environment: nothing the test run itself set (the browser tests' async flag
    # is refused by `check --deploy`, rightly).
    dropped = {"DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def production(**overrides: str) -> dict[str, str]:
    env = {"CONCORD_ENV": "production", "SECRET_KEY": GOOD_KEY, "ALLOWED_HOSTS": "concord.example"}
    env.update(overrides)
    return {k: v for k, v in env.items() if v is not None}


def test_check_deploy_is_clean_with_production_settings():
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", **production())
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"DEBUG": "1"}, "DEBUG must be off"),
        ({"SECRET_KEY": ""}, "SECRET_KEY"),
        ({"SECRET_KEY": "dev-insecure-key-change-me"}, "SECRET_KEY"),
        ({"SECRET_KEY": "change-me"}, "SECRET_KEY"),
        ({"ALLOWED_HOSTS": ""}, "ALLOWED_HOSTS"),
    ],
    ids=["debug", "missing-key", "example-key", "changeme-key", "no-hosts"],
)
def test_production_startup_refuses_unsafe_settings(overrides, message):
    result = run_manage("check", **production(**overrides))
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr


def test_development_default_starts_without_any_environment():
    result = run_manage("check", CONCORD_ENV="development")
    assert result.returncode == 0, result.stderr


def test_every_response_carries_an_enforcing_content_security_policy(client):
    response = client.get("/accounts/login/")
    csp = response["Content-Security-Policy"]
    assert "script-src 'self'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp


@pytest.mark.django_db
def test_health_check_answers_for_any_host_without_redirect(client):
    response = client.get("/healthz", HTTP_HOST="not-an-allowed-host.internal")
    assert response.status_code == 200
    assert response.content == b"ok"


def test_production_static_files_collect_into_a_manifest(tmp_path):
    """The Docker image's build step: every vendored file's references must resolve."""
    result = run_manage(
        "collectstatic", "--noinput", "-v0", STATIC_ROOT=str(tmp_path), **production()
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "staticfiles.json").exists()
