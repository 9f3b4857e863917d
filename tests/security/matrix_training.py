"""Permission-matrix entries of the training pages (issue 13): the lead's guide, qualification
and calibration pages (leads of the study's workspace and staff), and the annotator's steps (the
annotator enrolled in the study, and for a batch or a session only its own annotator).

Every view signs in first (anonymous: 302 to the login page for any method), then checks the
method (405), then the scope (404). Writes carry valid data, so a refused role that could write
would show up as a changed database.
"""

import uuid

from annotation.models import GoldAnswer
from annotation.services import batches, calibration, guides, qualification
from tests.factories import enrol
from tests.security.test_permission_matrix import Route, roles
from tests.training.helpers import answer_batch

LEAD_PAGE = roles(anonymous=302, lead_here=200, staff=200, rest=404)
LEAD_WRITE = roles(anonymous=302, lead_here=302, staff=302, rest=404)
ANNOTATOR_PAGE = roles(anonymous=302, annotator_here=200, rest=404)
ANNOTATOR_WRITE = roles(anonymous=302, annotator_here=302, rest=404)
OTHERS = roles(anonymous=302, rest=405)


def _unit(w, prompt="p0", system="alpha"):
    return w.study_a.units.get(
        role="production",
        members__output__prompt__external_id=prompt,
        members__output__system__name=system,
    )


def _version(w):
    """A published guide version of study A."""
    if "version" not in w.extra:
        w.extra["version"] = guides.publish_version(w.study_a, body="# Guide\nBe careful.")
    return w.extra["version"]


def _second_rater(w):
    if "second_rater" not in w.extra:
        w.extra["second_rater"] = enrol(w.study_a).user
    return w.extra["second_rater"]


def _session(w):
    """A calibration session of study A whose raters are the annotator here and one more."""
    if "session" not in w.extra:
        w.extra["session"] = calibration.open_session(
            w.study_a,
            title="Rice week",
            raters=[w.users["annotator_here"], _second_rater(w)],
            units=[_unit(w, "p0"), _unit(w, "p1")],
        )
    return w.extra["session"]


def _test_items(w):
    """Two items in study A's qualification test."""
    if "test_items" not in w.extra:
        w.extra["test_items"] = [
            qualification.add_item(w.study_a, _unit(w, "p0"), answer="unsafe", difficulty="easy"),
            qualification.add_item(w.study_a, _unit(w, "p1"), answer="safe", difficulty="boundary"),
        ]
    return w.extra["test_items"]


def _flagged_gold(w):
    """A gold answer flagged by a ruling that cites its item."""
    if "gold" not in w.extra:
        unit = _unit(w, "p2")
        GoldAnswer.objects.create(unit=unit, value={"choice": "safe"})
        guides.publish_version(
            w.study_a,
            body="# Guide",
            rulings=[guides.NewRuling("Rice", "Counter rice is unsafe.", examples=(unit,))],
        )
        w.extra["gold"] = GoldAnswer.objects.get(unit=unit)
    return w.extra["gold"]


def _open_batch(w):
    """The annotator's calibration batch with its first task leased (made in setup: a lease
    made while a request is checked would count as that request's write)."""
    if "batch" not in w.extra:
        batch = calibration.start_session_batch(_session(w), w.users["annotator_here"])
        w.extra["batch"], w.extra["task"] = batch, batches.next_task(batch)
    return w.extra["batch"]


def _finished_attempt(w):
    """The annotator's qualification attempt, answered and scored."""
    if "attempt" not in w.extra:
        _test_items(w)
        batch = qualification.start_attempt(w.study_a, w.users["annotator_here"])
        answer_batch(batch, lambda unit: "safe")
        w.extra["attempt"] = qualification.finish_attempt(batch)
    return w.extra["attempt"]


def _recalibration_due(w):
    """A guide version that asks the annotator to recalibrate on two items."""
    guides.publish_version(
        w.study_a,
        body="# Guide v2",
        requires_recalibration=True,
        recalibration_units=[_unit(w, "p0"), _unit(w, "p1")],
    )


def _token(w):
    return {"token": w.study_a.token}


def _batch(make):
    return lambda w: {"token": w.study_a.token, "batch": make(w).token}


ROUTES = {
    # --- the lead's pages ---
    "training-home": Route(expect={"GET": LEAD_PAGE}, others=OTHERS),
    # Publishing the next version: the lead and staff are sent to the new version's page.
    "guide-edit": Route(
        expect={"GET": LEAD_PAGE, "POST": LEAD_WRITE},
        others=OTHERS,
        data=lambda w: {"body": "# Guide\nNew text.", "changes": "wording"},
    ),
    "guide-version": Route(
        expect={"GET": LEAD_PAGE},
        others=OTHERS,
        kwargs=lambda w: {"token": w.study_a.token, "number": _version(w).number},
    ),
    # Confirming a flagged gold answer.
    "guide-flags": Route(
        expect={"GET": LEAD_PAGE, "POST": LEAD_WRITE},
        others=OTHERS,
        setup=_flagged_gold,
        data=lambda w: {"gold": _flagged_gold(w).pk, "answer": ""},
    ),
    # Saving the test's rules.
    "qualification-builder": Route(
        expect={"GET": LEAD_PAGE, "POST": LEAD_WRITE},
        others=OTHERS,
        setup=_test_items,
        data=lambda w: {"action": "settings", "pass_score": "0.5", "attempts": "3"},
    ),
    "qualification-results": Route(
        expect={"GET": LEAD_PAGE}, others=OTHERS, setup=_finished_attempt
    ),
    # Opening a session for two raters on one item.
    "calibration-sessions": Route(
        expect={"GET": LEAD_PAGE, "POST": LEAD_WRITE},
        others=OTHERS,
        setup=_second_rater,
        data=lambda w: {
            "title": "Session",
            "raters": [w.users["annotator_here"].pk, _second_rater(w).pk],
            "more_items": "p2:alpha",
        },
    ),
    # Recording a ruling against one of the session's items.
    "calibration-session": Route(
        expect={"GET": LEAD_PAGE, "POST": LEAD_WRITE},
        others=OTHERS,
        kwargs=lambda w: {"token": w.study_a.token, "session": _session(w).token},
        data=lambda w: {
            "action": "ruling",
            "item": _session(w).items.first().pk,
            "title": "Rice",
            "text": "Counter rice is unsafe.",
        },
    ),
    # --- the annotator's steps ---
    # POST starts an attempt and sends the annotator to its first task.
    "qualification-start": Route(
        expect={"GET": ANNOTATOR_PAGE, "POST": ANNOTATOR_WRITE},
        others=OTHERS,
        setup=_test_items,
    ),
    # Reading the guide again after a failed attempt (recorded: a retry may require it).
    "qualification-guide": Route(expect={"GET": ANNOTATOR_PAGE}, others=OTHERS),
    # POST starts the recalibration batch and sends the annotator to its first task.
    "recalibration-start": Route(
        expect={"GET": ANNOTATOR_PAGE, "POST": ANNOTATOR_WRITE},
        others=OTHERS,
        setup=_recalibration_due,
    ),
    # The session's raters only; POST makes the rater's batch and sends them to it.
    "calibration-rater": Route(
        expect={"GET": ANNOTATOR_PAGE, "POST": ANNOTATOR_WRITE},
        others=OTHERS,
        kwargs=lambda w: {"token": w.study_a.token, "session": _session(w).token},
    ),
    # A batch is its own annotator's only.
    "training-task": Route(
        expect={"GET": ANNOTATOR_PAGE}, others=OTHERS, setup=_open_batch, kwargs=_batch(_open_batch)
    ),
    # A real answer to the batch's leased task: stored for its annotator (sent on), refused
    # for everyone else.
    "training-submit": Route(
        expect={"POST": ANNOTATOR_WRITE},
        others=OTHERS,
        setup=_open_batch,
        kwargs=_batch(_open_batch),
        data=lambda w: {
            "_assignment": w.extra["task"].token,
            "_key": str(uuid.UUID(int=1)),
            "choice": "safe",
        },
    ),
    "training-result": Route(
        expect={"GET": ANNOTATOR_PAGE},
        others=OTHERS,
        setup=_finished_attempt,
        kwargs=_batch(_finished_attempt),
    ),
}
