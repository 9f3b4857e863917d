"""Chromium opens a rater page and the workspace overview, finds their charts drawn under the
enforcing CSP, and keeps screenshots for a human to judge (test-output/screenshots/)."""

from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.urls import reverse

from annotation.models import Membership
from qc import services
from tests.factories import MembershipFactory
from tests.qc.rater_sim import monitored_study
from tests.qc.severity_sim import scored_study

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.flaky(reruns=2, reruns_delay=1),
]

SHOTS = Path(django_settings.BASE_DIR) / "test-output" / "screenshots"


def _open(chromium, live_server, client, user, url, shot, min_charts):
    client.force_login(user)
    cookie = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(20_000)
    problems, bad = [], []
    try:
        context.add_cookies(
            [{"name": django_settings.SESSION_COOKIE_NAME, "value": cookie, "url": live_server.url}]
        )
        page = context.new_page()
        page.on(
            "console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None
        )
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.on("response", lambda r: bad.append(r.url) if r.status >= 400 else None)
        page.goto(live_server.url + url)
        n = page.locator("figure.chart[data-spec]").count()
        assert n >= min_charts
        page.wait_for_function(
            "n => document.querySelectorAll('figure.chart[data-rendered=\"yes\"]').length === n",
            arg=n,
            timeout=20000,
        )
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / shot), full_page=True)
        html = page.content()
    finally:
        context.close()
    assert not [m for m in problems if "Content Security Policy" in m or "Refused" in m], problems
    assert [u for u in bad if not u.endswith("/favicon.ico")] == []
    assert [m for m in problems if not m.startswith("Failed to load resource")] == [], problems
    return html


def test_rater_page_and_overview_draw_their_charts(live_server, client, settings, chromium):
    settings.CONCORD_QC_BOOTSTRAP = 20
    settings.CONCORD_QC_BOOTSTRAP_OVER_TIME = 10
    study, watched, _, _ = monitored_study(
        [0.92] * 10 + [0.81] * 14,
        guide_change_week=10,
        repeats={"n": 12, "flip": 3},
        seed=5,
        fast_rater=True,
    )
    services.recompute(study.pk)
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    scored, strict = scored_study(confounded=True)
    MembershipFactory(workspace=scored.workspace, user=lead, role=Membership.Role.LEAD)
    services.recompute(scored.pk)

    html = _open(
        chromium,
        live_server,
        client,
        lead,
        reverse("rater-page", args=[study.token, watched.pk]),
        "rater-page.png",
        3,
    )
    assert "Sustained decline" in html
    _open(
        chromium,
        live_server,
        client,
        lead,
        reverse("raters-overview", args=[study.workspace.slug]),
        "raters-overview.png",
        0,
    )
    html = _open(
        chromium,
        live_server,
        client,
        lead,
        reverse("rater-page", args=[scored.token, strict.pk]),
        "rater-page-severity.png",
        1,
    )
    assert "stricter" in html
    html = _open(
        chromium,
        live_server,
        client,
        lead,
        reverse("study-dashboard", args=[scored.token]),
        "dashboard-severity.png",
        2,
    )
    assert "confounded with who rated what" in html
