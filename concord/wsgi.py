"""WSGI entry point for gunicorn: Django's application, with the work API's common requests
served by its lean path (annotation/lean.py)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "concord.settings")
django_application = get_wsgi_application()

from annotation.lean import LeanWorkPath  # noqa: E402 - needs the apps loaded

application = LeanWorkPath(django_application)
