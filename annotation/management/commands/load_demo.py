"""`manage.py load_demo`: the demo workspace, accounts and a study of every task kind
(idempotent).

With --simulate (the README's run command uses it), simulated annotators label the studies
through the real engine, and the quality reports are computed once at the end.
"""

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.test.utils import override_settings

from annotation.demo import DEMO_ACCOUNTS, DEMO_PASSWORD, load_demo, simulate_labels
from annotation.models import Label


class Command(BaseCommand):
    help = "Load the demo studies and accounts (a second run changes nothing)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--simulate",
            action="store_true",
            help="also let simulated annotators label the studies, and compute the reports",
        )

    def handle(self, *args, simulate: bool, **options):
        studies = load_demo()
        self.stdout.write(self.style.SUCCESS(f"Demo loaded: {len(studies)} studies."))
        if simulate and not Label.objects.filter(study__in=studies.values()).exists():
            # One recomputation at the end, not one per simulated label.
            with override_settings(CONCORD_QC_AUTO_RECOMPUTE=False):
                made = simulate_labels(studies)
            self.stdout.write(f"Simulated annotators gave {made} labels.")
            if "qc" in settings.INSTALLED_APPS:
                call_command("recompute_reports", stdout=self.stdout)
        self.stdout.write(f"Demo accounts (password for all: {DEMO_PASSWORD}):")
        for username, what in DEMO_ACCOUNTS.items():
            self.stdout.write(f"  {username:<12} {what}")
