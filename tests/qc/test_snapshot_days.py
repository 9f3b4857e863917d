"""The snapshot's labels per day (the over-time chart's cut points) are local days, as the
database's TruncDate reads them, though the loader places epoch seconds between local midnights
instead of converting a date per label."""

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
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


def _local_dates(seconds, tz):
    """The reference: each time's calendar date in `tz`, one conversion per time."""
    return [datetime.fromtimestamp(s, tz).date() for s in seconds.tolist()]


def test_the_last_day_is_read_in_the_current_zone_when_it_is_ahead_of_the_servers():
    # UTC+14: 09:00 local on the 7th is 19:00 UTC on the 6th, so a last day read in the
    # server's zone (UTC) would end the list a day early and fold that label into the 6th
    tz = ZoneInfo("Pacific/Kiritimati")
    seconds = np.array(
        [
            datetime(2026, 3, 6, 10, 0, tzinfo=tz).timestamp(),
            datetime(2026, 3, 6, 23, 30, tzinfo=tz).timestamp(),
            datetime(2026, 3, 7, 9, 0, tzinfo=tz).timestamp(),
        ]
    )
    with timezone.override(tz):
        index, days = loaders.local_days(seconds)
    assert [days[i] for i in index.tolist()] == _local_dates(seconds, tz)
    assert days == [date(2026, 3, 6), date(2026, 3, 7)]


def test_a_label_at_exactly_local_midnight_belongs_to_the_day_it_starts():
    # whole epoch seconds (as the database gives them) can fall on midnight itself
    tz = ZoneInfo("America/New_York")
    seconds = np.array(
        [
            datetime(2026, 3, 7, 12, 0, tzinfo=tz).timestamp(),
            datetime(2026, 3, 8, 0, 0, tzinfo=tz).timestamp(),  # the DST day's midnight
            datetime(2026, 3, 9, 0, 0, tzinfo=tz).timestamp(),
            datetime(2026, 3, 8, 23, 59, 59, tzinfo=tz).timestamp(),
        ]
    )
    with timezone.override(tz):
        index, days = loaders.local_days(seconds)
    assert [days[i] for i in index.tolist()] == _local_dates(seconds, tz)
    assert index.tolist() == [0, 1, 2, 1]
