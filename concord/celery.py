"""The Celery application: configured from Django settings (CELERY_* names).

Workers do all statistics; task arguments are JSON only and tasks are enqueued on commit.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "concord.settings")

app = Celery("concord")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
