"""Import a CSV or JSON Lines file into a study, all or nothing, with progress on the terminal.

    manage.py import_content <study token or id> <kind> <file> [--format csv|jsonl]

Kinds: systems, prompts, outputs, comparisons, gold, labels. Exit status 1 when the file has bad
rows (each printed with its line, field and reason; nothing is published).
"""

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q

from annotation.imports import services
from annotation.imports.kinds import KINDS
from annotation.models import Study


class Command(BaseCommand):
    help = "Import systems, prompts, outputs, comparisons, gold answers or labels into a study."
    # The system checks import every URLconf, and through the report pages scipy: seconds of
    # start-up per run for nothing this command uses (`manage.py check` still runs them).
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("study", help="The study's token (or numeric id).")
        parser.add_argument("kind", choices=sorted(KINDS))
        parser.add_argument("path")
        parser.add_argument("--format", choices=["csv", "jsonl"], default=None)

    def handle(self, *args, study, kind, path, format, **options):
        match = Q(token=study) | (Q(pk=int(study)) if study.isdigit() else Q())
        found = Study.objects.filter(match).first()
        if found is None:
            raise CommandError(f"No study {study!r}.")
        try:
            fmt = format or services.guess_format(path)
        except ValueError as error:
            raise CommandError(str(error)) from None
        try:
            stream = open(path, "rb")  # noqa: SIM115 (closed below)
        except OSError as error:
            raise CommandError(f"Cannot open {path}: {error.strerror}") from None
        with stream:
            job = services.import_file(found, kind, stream, path, fmt=fmt, progress=self._progress)
        self.stdout.write("")
        if job.status == job.Status.DONE:
            self.stdout.write(self.style.SUCCESS(f"{job.file_name}: {job.message}"))
            return
        for error in job.errors:
            self.stderr.write(f"line {error['line']}, {error['field']}: {error['reason']}")
        if job.error_count > len(job.errors):
            self.stderr.write(f"... and {job.error_count - len(job.errors):,} more")
        raise CommandError(job.message)

    def _progress(self, job):
        self.stdout.write(
            f"\r{job.get_status_display()}: {job.percent}% ({job.rows_read:,} rows read)",
            ending="",
        )
        self.stdout.flush()
