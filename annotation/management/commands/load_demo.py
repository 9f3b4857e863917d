"""`manage.py load_demo`: the demo workspace, accounts and three studies (idempotent)."""

from django.core.management.base import BaseCommand

from annotation.demo import DEMO_ACCOUNTS, DEMO_PASSWORD, load_demo


class Command(BaseCommand):
    help = "Load the demo studies and accounts (a second run changes nothing)."

    def handle(self, *args, **options):
        studies = load_demo()
        self.stdout.write(self.style.SUCCESS(f"Demo loaded: {len(studies)} studies."))
        self.stdout.write(f"Demo accounts (password for all: {DEMO_PASSWORD}):")
        for username, what in DEMO_ACCOUNTS.items():
            self.stdout.write(f"  {username:<12} {what}")
