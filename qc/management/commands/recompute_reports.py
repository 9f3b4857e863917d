"""`manage.py recompute_reports [--study TOKEN ...]`: compute study reports now.

Runs in this process, as a worker would; a snapshot that already has its report is skipped.
"""

from django.core.management.base import BaseCommand

from annotation.models import Study
from qc import services


class Command(BaseCommand):
    help = "Recompute quality reports now, in this process (skips snapshots already stored)."

    def add_arguments(self, parser):
        parser.add_argument("--study", action="append", default=[], help="study token (repeatable)")

    def handle(self, *args, study, **options):
        studies = Study.objects.all() if not study else Study.objects.filter(token__in=study)
        for item in studies.order_by("id"):
            outcome = services.recompute(item.id)
            self.stdout.write(f"{item.name}: {outcome}")
