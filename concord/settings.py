"""Concord settings, all read from the environment.

The zero-setup default is SQLite with Celery tasks run eagerly; set DATABASE_URL and
CELERY_BROKER_URL for PostgreSQL and Redis. With CONCORD_ENV=production, startup refuses DEBUG,
an empty, example, `django-insecure-` or low-entropy SECRET_KEY, and empty or `*` ALLOWED_HOSTS.
"""

import math
import os
from collections import Counter
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


# Keys that appear in our docs and examples: a deployment must never run with one of them.
EXAMPLE_SECRET_KEYS = frozenset(
    {
        "dev-insecure-key-change-me",
        "change-me",
        "changeme",
        "secret",
        "django-insecure-change-me",
    }
)

# CONCORD_ENV=production turns on every safety switch and refuses unsafe settings at startup.
CONCORD_ENV = os.environ.get("CONCORD_ENV", "development").strip().lower()
if CONCORD_ENV not in {"development", "production"}:
    raise ImproperlyConfigured("CONCORD_ENV must be 'development' or 'production'.")
PRODUCTION = CONCORD_ENV == "production"

DEBUG = env_bool("DEBUG", not PRODUCTION)
SECRET_KEY = os.environ.get("SECRET_KEY", "" if PRODUCTION else "dev-insecure-key-change-me")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "" if PRODUCTION else "127.0.0.1,localhost,testserver")


def secret_key_problem(key: str) -> str | None:
    """Why `key` is unfit for production, or None. Low entropy is estimated three ways: fewer
    than 10 distinct characters, under 128 bits by its character frequencies (Shannon), or
    repeated blocks (under 90% of its 4-character runs distinct, as in "abcdefghij" * 5)."""
    if not key:
        return "it is empty"
    if key in EXAMPLE_SECRET_KEYS or key.startswith("django-insecure-"):
        return "it is an example or development key"
    if len(key) < 50:
        return "it is shorter than 50 characters"
    counts = Counter(key)
    bits = -sum(n * math.log2(n / len(key)) for n in counts.values())
    grams = [key[i : i + 4] for i in range(len(key) - 3)]
    if len(counts) < 10 or bits < 128 or len(set(grams)) < 0.9 * len(grams):
        return "it has too little entropy (not random enough)"
    return None


if PRODUCTION:
    if DEBUG:
        raise ImproperlyConfigured("DEBUG must be off when CONCORD_ENV=production.")
    if problem := secret_key_problem(SECRET_KEY):
        raise ImproperlyConfigured(
            f"SECRET_KEY is refused in production: {problem}. Set it to a random value of at "
            "least 50 characters: python3 -c 'import secrets; print(secrets.token_urlsafe(50))'"
        )
    if not ALLOWED_HOSTS:
        raise ImproperlyConfigured("ALLOWED_HOSTS must name this site's hosts in production.")
    if any(host == "*" or host.startswith("*") for host in ALLOWED_HOSTS):
        raise ImproperlyConfigured(
            "ALLOWED_HOSTS must name this site's hosts in production, not '*' (a wildcard lets "
            "any Host header through, e.g. into password-reset links and cache keys)."
        )
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "django_htmx",
    "axes",
    "annotation",
    "qc",
]

MIDDLEWARE = [
    "concord.middleware.HealthCheckMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "concord.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "concord.middleware.HtmxLoginRequiredMiddleware",
    # Login throttling; last, as django-axes asks.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "concord.urls"
WSGI_APPLICATION = "concord.wsgi.application"
ASGI_APPLICATION = "concord.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{BASE_DIR / 'concord.sqlite3'}"),
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Server-side prepared statements for the statements the hot path asks psycopg to prepare
    # (annotation.services.assignment._execute): planned once per connection, not per call.
    # Django's default (None) turns psycopg's preparing off altogether. Set it empty behind a
    # pooler that cannot keep prepared statements (PgBouncer in transaction mode before 1.21).
    threshold = os.environ.get("DB_PREPARE_THRESHOLD", "5")
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = (
        int(threshold) if threshold.strip() else None
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # SQLite under a dev server with eager tasks: wait on the write lock instead of failing.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 20
    DATABASES["default"]["CONN_MAX_AGE"] = 0

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Cache: Redis when CACHE_URL is set (one cache shared by every web process), else this process's
# memory. Sessions stay in the database unless a shared cache is configured, where reading them
# through it ("cached_db": written to both, read from the cache) saves a query on every request.
CACHE_URL = os.environ.get("CACHE_URL", "")
CACHES = {
    "default": (
        {
            "BACKEND": "concord.cache.RedisCache",
            "LOCATION": CACHE_URL,
            "KEY_PREFIX": os.environ.get("CACHE_KEY_PREFIX", "concord"),
            # Fail fast when Redis is down or hung: callers fall back to the database.
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 1.0},
        }
        if CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}
SESSION_ENGINE = os.environ.get(
    "SESSION_ENGINE",
    # Django's cached_db, guarded: sessions fall back to the database while Redis is down.
    "concord.sessions" if CACHE_URL else "django.contrib.sessions.backends.db",
)
CONCORD_SESSION_CACHE_SECONDS = int(os.environ.get("CONCORD_SESSION_CACHE_SECONDS", "300"))
if SESSION_ENGINE.rsplit(".", 1)[-1] in {"cache", "cached_db", "sessions"} and not CACHE_URL:
    # A per-process cache would keep a signed-out session alive in the other processes.
    raise ImproperlyConfigured(f"SESSION_ENGINE={SESSION_ENGINE} needs a shared CACHE_URL.")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Login throttling (django-axes): failures are counted per address and, separately, per account
# name; at AXES_FAILURE_LIMIT in a row either is paused for AXES_COOLOFF_MINUTES and then
# unlocked by itself (never a permanent lockout of a known user). A success does not wipe the
# count: axes would clear every failure of the address, so a guesser with an account of their own
# could sign in every few guesses and never be paused; failures age out with the cool-off instead.
# A wrong API token counts against its address too (annotation.rest.authentication).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("AXES_FAILURE_LIMIT", "10"))
AXES_COOLOFF_TIME = timedelta(minutes=float(os.environ.get("AXES_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = "concord.middleware.lockout_parameters"
AXES_RESET_ON_SUCCESS = False
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_HTTP_RESPONSE_CODE = 429
AXES_CLIENT_IP_CALLABLE = "concord.middleware.client_ip"
AXES_VERBOSE = False
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if PRODUCTION
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = not PRODUCTION

# Security headers; the production switches follow CONCORD_ENV unless set explicitly.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", PRODUCTION)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", PRODUCTION)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", PRODUCTION)
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000" if PRODUCTION else "0"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = PRODUCTION
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
BEHIND_TLS_PROXY = env_bool("BEHIND_TLS_PROXY", False)
if BEHIND_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Proxies in front of us that append to X-Forwarded-For (the client is that many from the right).
CONCORD_TRUSTED_PROXY_COUNT = int(os.environ.get("CONCORD_TRUSTED_PROXY_COUNT", "1"))
SILENCED_SYSTEM_CHECKS = ["security.W021"] if not SECURE_HSTS_PRELOAD else []
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; "
    "object-src 'none'"
)

# Celery: Redis broker when configured, otherwise tasks run eagerly in-process.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", not CELERY_BROKER_URL)
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": 3600,
    "socket_connect_timeout": 2,
    "socket_timeout": 5,
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A request that queues a task must not hang on a dead broker: a few quick tries, then the
# caller records that the run is owed (see qc.services) and carries on.
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TIMEZONE = TIME_ZONE
CELERY_BEAT_SCHEDULE = {
    "reclaim-expired-leases": {
        "task": "annotation.tasks.reclaim_expired_leases",
        "schedule": float(os.environ.get("CONCORD_RECLAIM_EVERY_SECONDS", "60")),
    },
    "recompute-live-studies": {
        "task": "qc.tasks.recompute_all_live_studies",
        "schedule": float(os.environ.get("CONCORD_RECOMPUTE_EVERY_SECONDS", "600")),
    },
}

REST_FRAMEWORK = {
    # The token first: its challenge makes a request without credentials answer 401, not 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "annotation.rest.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_THROTTLE_CLASSES": ["annotation.rest.throttles.WriteThrottle"],
}
# Requests per user (or per address when signed out); read on every request, so tests and
# deployments can change them. "writes": every unsafe API call; "tokens": creating tokens.
CONCORD_API_THROTTLE_RATES = {
    "writes": os.environ.get("CONCORD_API_WRITE_RATE", "1200/min"),
    "tokens": os.environ.get("CONCORD_API_TOKEN_RATE", "10/hour"),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Concord API",
    "DESCRIPTION": (
        "Studies, their content, labels and quality reports, and the annotator loop. Every list "
        "is scoped to what the caller may see; a foreign id answers 404."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_GENERATE_CHOICE_DESCRIPTION": False,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "annotation.rest.schema.add_error_responses",
    ],
    "ENUM_NAME_OVERRIDES": {
        "StudyStatusEnum": "annotation.models.study.Status",
        "PurposeEnum": "annotation.models.work.Purpose",
        "ImportStatusEnum": "annotation.models.imports.ImportStatus",
        "ImportKindEnum": "annotation.models.imports.ImportKind",
        "PoolEnum": "annotation.models.study.Pool",
    },
}

# Concord's own knobs.
CONCORD_LEASE_SECONDS = int(os.environ.get("CONCORD_LEASE_SECONDS", "1800"))
# Quality reports: a committed label schedules a recomputation, at most one per debounce window.
CONCORD_QC_AUTO_RECOMPUTE = env_bool("CONCORD_QC_AUTO_RECOMPUTE", True)
CONCORD_QC_DEBOUNCE_SECONDS = float(os.environ.get("CONCORD_QC_DEBOUNCE_SECONDS", "5"))
CONCORD_QC_BOOTSTRAP = int(os.environ.get("CONCORD_QC_BOOTSTRAP", "1000"))
CONCORD_QC_BOOTSTRAP_OVER_TIME = int(os.environ.get("CONCORD_QC_BOOTSTRAP_OVER_TIME", "100"))
# The dashboard warns when a broker is configured and no worker was seen for this long (workers
# record themselves every CONCORD_WORKER_HEARTBEAT_SECONDS).
CONCORD_QC_WORKER_SILENCE_SECONDS = float(os.environ.get("CONCORD_QC_WORKER_SILENCE_SECONDS", "60"))
# Each worker records that it is alive this often (qc.tasks' heartbeat loop, no task needed);
# a run in progress refreshes its own heartbeat, and one silent this long has lost its worker.
CONCORD_WORKER_HEARTBEAT_SECONDS = float(os.environ.get("CONCORD_WORKER_HEARTBEAT_SECONDS", "15"))
CONCORD_QC_HEARTBEAT_SECONDS = float(os.environ.get("CONCORD_QC_HEARTBEAT_SECONDS", "10"))
CONCORD_QC_HEARTBEAT_STALE_SECONDS = float(
    os.environ.get("CONCORD_QC_HEARTBEAT_STALE_SECONDS", "60")
)
# A pending recomputation older than this is taken to be lost and may be queued again.
CONCORD_QC_PENDING_STALE_SECONDS = float(os.environ.get("CONCORD_QC_PENDING_STALE_SECONDS", "600"))
# Imports: where uploads wait for the worker (shared by web and worker), and row limits.
CONCORD_IMPORT_DIR = os.environ.get("CONCORD_IMPORT_DIR", str(BASE_DIR / "var" / "imports"))
CONCORD_IMPORT_MAX_LINE_BYTES = int(os.environ.get("CONCORD_IMPORT_MAX_LINE_BYTES", str(4 << 20)))
CONCORD_IMPORT_MAX_ERRORS = int(os.environ.get("CONCORD_IMPORT_MAX_ERRORS", "1000"))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        # django-axes logs every successful sign-in's reset at INFO; failures and lockouts warn.
        "axes": {"level": "WARNING"},
    },
}
