"""The snapshot's labels per day (the over-time chart's cut points) are local days, as the
database's TruncDate reads them, though the loader places epoch seconds between local midnights
instead of converting a date per label."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db.models import Count, Max
from django.db.models.functions import TruncDate
from django.utils import timezone

from annotation.models import Label
from qc import loaders
from tests.qc import simulate

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Kolkata"])
def test_days_match_truncdate_in_the_current_time_zone_across_midnight_and_dst(zone):
    study, _ = simulate.categorical_study(n_prompts=12, n_annotators=3, accuracy=0.9)
    tz = ZoneInfo(zone)
    # labels spread every 7 hours 13 minutes from just before a DST change (US: 2026-03-08)
    start = datetime(2026, 3, 6, 22, 50, tzinfo=tz)
    labels = list(Label.objects.filter(study=study).order_by("id"))
    for k, label in enumerate(labels):
        label.created_at = start + k * timedelta(hours=7, minutes=13)
    Label.objects.bulk_update(labels, ["created_at"])
    with timezone.override(tz):
        expected = [
            (row["day"].isoformat(), row["n"], row["last"], row["people"])
            for row in Label.objects.filter(study=study)
            .annotate(day=TruncDate("created_at"))
            .values("day")
            .annotate(n=Count("id"), last=Max("id"), people=Count("annotator_id", distinct=True))
            .order_by("day")
        ]
        days = loaders.load_snapshot(study).days
    assert len(expected) > 5
    assert days == expected
