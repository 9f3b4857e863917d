"""The progress bar, read as a script would: its total must say nothing about the task on screen."""

import re
import uuid

import pytest
from django.urls import reverse
from scipy import stats

from annotation.models import Assignment, Unit
from annotation.services import assignment as engine
from annotation.services import setup
from annotation.services.submission import submit_label
from tests.factories import enrol
from tests.workbench.helpers import HTMX, blind_study, form_fields, signed_in

pytestmark = pytest.mark.django_db

INJECTING = {
    "gold_rate": 0.2,
    "repeat_rate": 0.1,
    "attention_rate": 0.1,
    "repeat_min_gap_units": 2,
    "repeat_min_gap_minutes": 0,
}


def injecting_study(n_prompts: int, overlap: int):
    study = blind_study("categorical", n_prompts=n_prompts, overlap=overlap, **INJECTING)
    units = list(Unit.objects.filter(study=study).order_by("id"))
    for unit in units[:8]:
        setup.mark_gold(unit, {"choice": "safe"})
    for unit in units[8:12]:
        setup.mark_gold(unit, {"choice": "safe"}, role=Unit.Role.ATTENTION)
    return study


def shown(page: str) -> tuple[int, int]:
    """(done, total) as the page states them."""
    text = re.search(r'class="wb-progress-text"[^>]*>\s*(\d+) of (\d+) done', page)
    bar = re.search(r'<progress id="wb-progress-bar" max="(\d+)" value="(\d+)"', page)
    assert text and bar, "no progress bar on the page"
    assert int(bar.group(2)) == int(text.group(1))
    return int(text.group(1)), int(text.group(2))


def walk(client, study, between=None):
    """Work through the study in the browser's way; [(purpose on screen, done, total)]."""
    page = client.get(reverse("work-task", args=[study.token])).content.decode()
    seen = []
    while 'id="task-form"' in page:
        token = form_fields(page)["_assignment"]
        purpose = Assignment.objects.get(token=token).purpose
        seen.append((purpose, *shown(page)))
        if between:
            between()
        page = client.post(
            reverse("work-submit", args=[study.token]),
            {**form_fields(page), "choice": "safe"},
            **HTMX,
        ).content.decode()
    return seen, page


def test_the_total_stays_put_whatever_the_purpose_of_the_task_on_screen(client):
    study = injecting_study(n_prompts=20, overlap=1)  # 28 production units, one person
    signed_in(client, study, queue_seed=424242)  # a fixed session, whatever ran before
    seen, last = walk(client, study)
    purposes = {p for p, _, _ in seen}
    assert {"production", "gold", "repeat", "attention"} <= purposes, purposes
    # A lone annotator's supply never changes while they work: one planned total throughout,
    # whatever is on screen, and the counter rises by one per task.
    totals = [total for _, _, total in seen]
    assert len(set(totals)) == 1, list(zip([p for p, _, _ in seen], totals, strict=True))
    assert [done for _, done, _ in seen] == list(range(len(seen)))
    assert "All done" in last and shown(last) == (len(seen), len(seen))


def test_the_totals_sequence_carries_no_signal_about_injected_work(client):
    """Others fill units while this annotator works, so the total moves; it must not move with
    the purpose of this annotator's task on screen (a script's best detector is no better than
    a coin)."""
    study = injecting_study(n_prompts=30, overlap=2)
    others = [enrol(study).user for _ in range(2)]
    turn = [0]

    def someone_else_works():
        user = others[turn[0] % 2]
        turn[0] += 1
        a = engine.next_assignment(user, study)
        if a is not None:
            submit_label(
                annotator=user,
                assignment_token=a.token,
                data={"choice": "safe"},
                idempotency_key=uuid.uuid4(),
            )

    signed_in(client, study, queue_seed=515151)
    seen, _ = walk(client, study, between=someone_else_works)
    assert len(seen) > 30
    injected = [p != "production" for p, _, _ in seen]
    totals = [total for _, _, total in seen]
    assert len(set(totals)) > 1, "the others' work should have moved the total"
    # Compare every step's total with the one before and the one after: a rise, or a fall, at
    # either moment must be as common on injected work as on production work.
    n = len(seen)
    for before, after in ((range(1, n), -1), (range(n - 1), 1)):
        for direction in (1, -1):
            moved = [(totals[i] - totals[i + after]) * direction > 0 for i in before]
            kinds = [injected[i] for i in before]
            both = sum(m and k for m, k in zip(moved, kinds, strict=True))
            only = sum(m and not k for m, k in zip(moved, kinds, strict=True))
            table = [[both, sum(kinds) - both], [only, len(kinds) - sum(kinds) - only]]
            assert stats.fisher_exact(table).pvalue > 0.01, (after, direction, table)
    # The detector that caught the old bar: "the total went up by exactly one".
    rose = [b - a == 1 for a, b in zip(totals, totals[1:], strict=False)]
    hits = sum(r and i for r, i in zip(rose, injected[1:], strict=True))
    assert hits <= sum(injected[1:]) // 2
