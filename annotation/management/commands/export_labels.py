"""Write a study's raw labels with their context to a file or stdout, streamed.

manage.py export_labels <study token or id> [--format csv|jsonl] [--output path]
"""

import sys

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q

from annotation.exports.labels import label_text
from annotation.models import Study


class Command(BaseCommand):
    help = "Export a study's raw labels (one row per label, per question for SPA)."
    # The system checks import every URLconf, and through the report pages scipy: seconds of
    # start-up per run for nothing this command uses (`manage.py check` still runs them).
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("study", help="The study's token (or numeric id).")
        parser.add_argument("--format", choices=["csv", "jsonl"], default="csv")
        parser.add_argument("--output", default="-", help="A file path, or - for stdout.")

    def handle(self, *args, study, format, output, **options):
        match = Q(token=study) | (Q(pk=int(study)) if study.isdigit() else Q())
        found = Study.objects.filter(match).first()
        if found is None:
            raise CommandError(f"No study {study!r}.")
        chunks = label_text(found, format)
        out = sys.stdout if output == "-" else open(output, "w", encoding="utf-8", newline="")  # noqa: SIM115
        try:
            for chunk in chunks:
                out.write(chunk)
        finally:
            if out is not sys.stdout:
                out.close()
