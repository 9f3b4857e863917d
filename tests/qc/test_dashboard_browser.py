"""The lead's dashboard in Chromium for each kind of study: every chart drawn or replaced by "not
enough data yet", no warning or error in the console (Vega's included), screenshots to read."""

from pathlib import Path

import numpy as np
import pytest
from django.conf import settings as django_settings
from django.urls import reverse

from annotation.models import Membership, Unit
from annotation.services import setup
from qc import services
from tests.factories import MembershipFactory
from tests.qc import simulate
from tests.qc.labels import add_labels

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.flaky(reruns=2, reruns_delay=1),
]

SCREENSHOTS = Path(django_settings.BASE_DIR) / "test-output" / "screenshots"


def categorical_with_gold():
    study, truth = simulate.categorical_study(n_prompts=30, prevalence=0.85, accuracy=0.85)
    units = list(Unit.objects.filter(study=study).order_by("id"))[:4]
    for unit in units:
        setup.mark_gold(unit, {"choice": truth[unit.pk]})
    people = simulate.annotators(2, prefix=f"g{study.pk}")
    add_labels(
        study,
        [{"unit": u, "annotator": p, "choice": truth[u.pk]} for u in units for p in people],
        purpose="gold",
    )
    return study


def pairwise_with_left_clicker():
    study = simulate.pairwise_study(n_prompts=20, n_annotators=4, overlap=2)
    (lefty,) = simulate.annotators(1, prefix=f"lefty{study.pk}")
    systems = list(study.systems.order_by("name"))
    rng = np.random.default_rng(0)
    add_labels(
        study,
        [
            {"unit": u, "annotator": lefty, "choice": "left", "winner": systems[rng.integers(2)]}
            for u in Unit.objects.filter(study=study)
        ],
    )
    return study


def spa_with_likert():
    study, _ = simulate.spa_study(
        [(0.7, "x"), (0.35, "y"), (0.52, "indifferent")],
        n_annotators=30,
        tau=1.1,
        sloppy=2,
        likert={"s0": 3.0, "s1": 3.6, "s2": 3.2, "s3": 3.3},
    )
    return study


def one_label():
    study, _ = simulate.categorical_study(n_prompts=3, n_annotators=3, overlap=1)
    return study


@pytest.mark.parametrize(
    "name, make",
    [
        ("categorical-gold", categorical_with_gold),
        ("pairwise", pairwise_with_left_clicker),
        ("spa", spa_with_likert),
        ("thin", one_label),
    ],
)
def test_dashboard_in_chromium_draws_every_chart_and_logs_nothing(
    live_server, client, settings, chromium, name, make
):
    settings.CONCORD_QC_BOOTSTRAP = 60
    study = make()
    services.recompute(study.pk)
    lead = MembershipFactory(workspace=study.workspace, role=Membership.Role.LEAD).user
    client.force_login(lead)
    cookie = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(20_000)
    try:
        context.add_cookies(
            [{"name": django_settings.SESSION_COOKIE_NAME, "value": cookie, "url": live_server.url}]
        )
        page = context.new_page()
        console = []
        page.on(
            "console",
            lambda m: (
                console.append(f"{m.type}: {m.text}")
                if m.type in ("error", "warning", "warn")
                else None
            ),
        )
        page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
        page.goto(live_server.url + reverse("study-dashboard", args=[study.token]))
        n = page.locator("figure.chart[data-spec]").count()
        page.wait_for_function(
            "n => document.querySelectorAll('figure.chart[data-rendered=\"yes\"]').length === n",
            arg=n,
        )
        page.wait_for_timeout(300)  # any late Vega warning
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"dashboard-{name}.png"), full_page=True)
        if name == "thin":
            assert page.locator("[data-chart-empty]").count() >= 1
            assert "Not enough data yet" in page.text_content("body")
    finally:
        context.close()
    assert [c for c in console if "favicon" not in c] == []
