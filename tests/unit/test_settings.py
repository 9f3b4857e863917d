"""Production settings refuse unsafe configuration at startup, and `check --deploy` is clean."""

import os
import subprocess
import sys

import pytest
from django.conf import settings

# What `secrets.token_urlsafe(50)` gives (a fixed one, so a failure is reproducible).
GOOD_KEY = "q0Zt3Wm8vKcL2xR9pYbN4sJ7hF1dGeA6uTiO5rEwQyPnMlKjHg-_aSdXcVb2Z8mN4"


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
        ({"ALLOWED_HOSTS": "*"}, "not '*'"),
        ({"ALLOWED_HOSTS": "concord.example,*"}, "not '*'"),
        ({"SECRET_KEY": "django-insecure-" + GOOD_KEY}, "example or development key"),
        ({"SECRET_KEY": "abcdefghij" * 6}, "too little entropy"),
        ({"SECRET_KEY": "a1" * 30}, "too little entropy"),
        ({"SECRET_KEY": GOOD_KEY[:40]}, "shorter than 50"),
    ],
    ids=[
        "debug",
        "missing-key",
        "example-key",
        "changeme-key",
        "no-hosts",
        "wildcard-host",
        "wildcard-among-hosts",
        "django-insecure-key",
        "repeated-block-key",
        "two-symbol-key",
        "short-key",
    ],
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


def test_random_keys_of_every_usual_shape_are_accepted():
    import secrets

    from concord.settings import secret_key_problem

    for _ in range(50):
        for key in (secrets.token_urlsafe(50), secrets.token_hex(32), secrets.token_hex(25)):
            assert secret_key_problem(key) is None, key


def readme_recipe() -> str:
    """The shell block of the README's PostgreSQL recipe."""
    text = (settings.BASE_DIR / "README.md").read_text()
    section = text.split("## Running on PostgreSQL and Redis with a real worker", 1)[1]
    return section.split("```sh", 1)[1].split("```", 1)[0]


def test_the_readme_recipe_is_a_production_deployment_that_passes_check_deploy():
    recipe = readme_recipe()
    exports = "\n".join(line for line in recipe.splitlines() if line.startswith("export "))
    assert "CONCORD_ENV=production" in exports
    assert "DEBUG" not in exports and "load_demo" not in recipe
    assert "check --deploy" in recipe and "collectstatic" in recipe
    # Run the recipe's own environment through Django's deployment checks (the database is
    # swapped for SQLite: only settings are checked here).
    script = f"{exports}\nexport DATABASE_URL=sqlite:///:memory:\nenv"
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    env = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    keep = {
        k: env[k]
        for k in env
        if k
        in {
            "CONCORD_ENV",
            "SECRET_KEY",
            "ALLOWED_HOSTS",
            "CSRF_TRUSTED_ORIGINS",
            "BEHIND_TLS_PROXY",
        }
    }
    assert keep["CONCORD_ENV"] == "production" and len(keep["SECRET_KEY"]) >= 50
    checked = run_manage("check", "--deploy", "--fail-level", "WARNING", **keep)
    assert checked.returncode == 0, checked.stdout + checked.stderr
