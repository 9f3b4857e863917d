"""Permission-matrix entries of the rater-quality pages (issue 14): rater pages, the workspace
overview, triage and adjudication, audits. Leads of the study's workspace and staff only."""

from tests.security.test_permission_matrix import Route, roles

LEAD_PAGE = roles(anonymous=302, lead_here=200, staff=200, rest=404)
LEAD_WRITE = roles(anonymous=302, lead_here=302, staff=302, rest=404)
OTHERS = roles(anonymous=302, rest=405)


def _labelled(w):
    """A production label of the annotator in study A (so there is a rater and a pool to audit)."""
    from tests.qc.labels import add_labels

    if "label" not in w.extra:
        # Not the unit of the annotator's open lease: one production label per annotator and unit.
        unit = w.study_a.units.exclude(pk=w.lease.unit_id).order_by("id").first()
        (w.extra["label"],) = add_labels(
            w.study_a, [{"unit": unit, "annotator": w.users["annotator_here"], "choice": "safe"}]
        )
    return w.extra["label"]


def _audit(w):
    from qc.raters import services

    _labelled(w)
    if "audit" not in w.extra:
        w.extra["audit"] = services.draw_audit(w.study_a, "random", 1, w.users["lead_here"], seed=1)
    return w.extra["audit"]


def _rater(w):
    return {"token": w.study_a.token, "annotator_id": _labelled(w).annotator_id}


def _unit(w):
    return {"token": w.study_a.token, "unit_token": _labelled(w).unit.token}


def _audit_kwargs(w):
    return {"token": w.study_a.token, "audit_id": _audit(w).pk}


ROUTES = {
    "study-raters": Route(expect={"GET": LEAD_PAGE}, others=OTHERS),
    "rater-page": Route(expect={"GET": LEAD_PAGE}, others=OTHERS, kwargs=_rater),
    "rater-audit": Route(
        expect={"POST": LEAD_WRITE}, others=OTHERS, kwargs=_rater, data=lambda w: {"size": "1"}
    ),
    "raters-overview": Route(
        expect={"GET": LEAD_PAGE},
        others=OTHERS,
        kwargs=lambda w: {"slug": w.study_a.workspace.slug},
    ),
    "study-triage": Route(expect={"GET": LEAD_PAGE}, others=OTHERS),
    "triage-item": Route(
        expect={"GET": LEAD_PAGE, "POST": LEAD_WRITE},
        others=OTHERS,
        kwargs=_unit,
        data=lambda w: {
            "cause": "genuine_ambiguity",
            "decision": "distribution",
            "rationale": "Two readings are reasonable.",
        },
    ),
    "study-audits": Route(
        expect={"GET": LEAD_PAGE, "POST": LEAD_WRITE},
        others=OTHERS,
        setup=_labelled,
        data=lambda w: {"size": "1"},
    ),
    "audit-detail": Route(
        expect={"GET": LEAD_PAGE, "POST": LEAD_WRITE},
        others=OTHERS,
        kwargs=_audit_kwargs,
        data=lambda w: {"item": _audit(w).items.first().pk, "verdict": "wrong"},
    ),
}
