"""Concord settings, all read from the environment.

The zero-setup default is SQLite with Celery tasks run eagerly; set DATABASE_URL and
CELERY_BROKER_URL for PostgreSQL and Redis. With CONCORD_ENV=production, startup refuses DEBUG,
an empty or example SECRET_KEY and empty ALLOWED_HOSTS.
"""

import os
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
if PRODUCTION:
    if DEBUG:
        raise ImproperlyConfigured("DEBUG must be off when CONCORD_ENV=production.")
    if not SECRET_KEY or SECRET_KEY in EXAMPLE_SECRET_KEYS or len(SECRET_KEY) < 50:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set to a random value of at least 50 characters in production "
            "(an empty or example key is refused)."
        )
    if not ALLOWED_HOSTS:
        raise ImproperlyConfigured("ALLOWED_HOSTS must name this site's hosts in production.")
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
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": CACHE_URL,
            "KEY_PREFIX": os.environ.get("CACHE_KEY_PREFIX", "concord"),
        }
        if CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}
SESSION_ENGINE = os.environ.get(
    "SESSION_ENGINE",
    "django.contrib.sessions.backends.cached_db"
    if CACHE_URL
    else "django.contrib.sessions.backends.db",
)
if SESSION_ENGINE.rsplit(".", 1)[-1] in {"cache", "cached_db"} and not CACHE_URL:
    # A per-process cache would keep a signed-out session alive in the other processes.
    raise ImproperlyConfigured(f"SESSION_ENGINE={SESSION_ENGINE} needs a shared CACHE_URL.")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
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
if env_bool("BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
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
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
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
    },
}

# Concord's own knobs.
CONCORD_LEASE_SECONDS = int(os.environ.get("CONCORD_LEASE_SECONDS", "1800"))
# Quality reports: a committed label schedules a recomputation, at most one per debounce window.
CONCORD_QC_AUTO_RECOMPUTE = env_bool("CONCORD_QC_AUTO_RECOMPUTE", True)
CONCORD_QC_DEBOUNCE_SECONDS = float(os.environ.get("CONCORD_QC_DEBOUNCE_SECONDS", "5"))
CONCORD_QC_BOOTSTRAP = int(os.environ.get("CONCORD_QC_BOOTSTRAP", "1000"))
CONCORD_QC_BOOTSTRAP_OVER_TIME = int(os.environ.get("CONCORD_QC_BOOTSTRAP_OVER_TIME", "100"))
# The dashboard warns when a broker is configured and no worker was seen for this long.
CONCORD_QC_WORKER_SILENCE_SECONDS = float(
    os.environ.get("CONCORD_QC_WORKER_SILENCE_SECONDS", "900")
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
    "loggers": {"django.db.backends": {"level": "INFO"}},
}
