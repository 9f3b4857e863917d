"""Permission-matrix entries for the REST API's writes (studies, status, content imports, gold,
comparisons, guide versions, enrolments, invites) and its downloads. Merged into
tests/security/test_permission_matrix.py's table.

Each write is sent with a body that would succeed for a caller who may write, so an outsider's
404 is a refusal of a real write, and the table checks it changed nothing. Outsiders (annotators,
the other workspace's lead) get 404 for every method of a route under a study: the study is
looked up before the method is considered; insiders get 405 for a method not served.
"""

from tests.security.matrix_api import LEAD_READ, NOT_SERVED, SIGNED_IN_READ
from tests.security.test_permission_matrix import Route, roles

LEAD_WRITE_OK = {
    code: roles(anonymous=401, lead_here=code, staff=code, rest=404) for code in (200, 201, 204)
}
UNDER_STUDY_OTHERS = roles(anonymous=401, lead_here=405, staff=405, rest=404)


def _study(w):
    return {"study": w.study_a.token}


def _with(name, make):
    """URL kwargs of study A plus `name` -> the object `make(w)` creates once per world."""

    def kwargs(w):
        if name not in w.extra:
            w.extra[name] = make(w)
        return {"study": w.study_a.token, name: str(w.extra[name])}

    return kwargs


def _free_unit(w):
    from annotation.models import Unit

    return (
        Unit.objects.filter(study=w.study_a, role="production", assignments__isnull=True)
        .order_by("id")
        .first()
    )


def _gold(w):
    from annotation.models import GoldAnswer

    unit = _free_unit(w)
    return GoldAnswer.objects.create(unit=unit, value={"choice": "safe"}).pk


def _enrolment(w):
    from annotation.models import Enrolment

    return Enrolment.objects.get(study=w.study_a, user=w.users["annotator_here"]).pk


def _invite(w):
    from annotation.services.invites import create_invite

    return create_invite(study=w.study_a, created_by=w.users["lead_here"])[0].pk


def _job(w):
    from annotation.models import ImportJob

    return ImportJob.objects.create(
        study=w.study_a, kind="systems", format="csv", file_name="systems.csv"
    ).token


def _gamma(w):
    from annotation.models import System

    System.objects.create(study=w.study_a, name="gamma")


def _person(w):
    from tests.factories import UserFactory

    UserFactory(username="matrix-person")


def _completion_code(w):
    from annotation.models import Study

    Study.objects.filter(pk=w.study_a.pk).update(crowd_completion_code="C0MPLETE")


def _under_study(expect, data=None, kwargs=_study, setup=None, json=True) -> Route:
    return Route(
        expect=expect,
        others=UNDER_STUDY_OTHERS,
        kwargs=kwargs,
        data=data,
        setup=setup,
        json=json,
    )


ROUTES: dict[str, Route] = {
    # A study is created in a workspace the caller leads; anyone else's slug is a 400 that does
    # not say whether the workspace exists.
    "api-studies": Route(
        expect={
            "GET": SIGNED_IN_READ,
            "POST": roles(anonymous=401, lead_here=201, staff=201, rest=400),
        },
        others=NOT_SERVED,
        kwargs=lambda w: {},
        data=lambda w: {
            "workspace": w.study_a.workspace.slug,
            "name": "Matrix study",
            "task_kind": "likert",
        },
        json=True,
    ),
    # Study A's crowd settings get the completion code the builder requires, so a PATCH of a
    # live-editable setting passes the builder's checks.
    "api-study": Route(
        expect={"GET": LEAD_READ, "PATCH": LEAD_WRITE_OK[200]},
        others=NOT_SERVED,
        kwargs=_study,
        data=lambda w: {"question": "Asked by the matrix?"},
        setup=_completion_code,
        json=True,
    ),
    "api-study-status": _under_study(
        {"GET": LEAD_READ, "POST": LEAD_WRITE_OK[200]}, data=lambda w: {"status": "paused"}
    ),
    "api-systems": _under_study(
        {"GET": LEAD_READ, "POST": LEAD_WRITE_OK[201]},
        data=lambda w: {"rows": [{"name": "matrix"}]},
    ),
    "api-prompts": _under_study(
        {"GET": LEAD_READ, "POST": LEAD_WRITE_OK[201]},
        data=lambda w: {"rows": [{"id": "mx", "text": "Matrix prompt"}]},
    ),
    "api-outputs": _under_study(
        {"GET": LEAD_READ, "POST": LEAD_WRITE_OK[201]},
        data=lambda w: {"rows": [{"prompt_id": "p0", "system": "gamma", "text": "From gamma"}]},
        setup=_gamma,
    ),
    "api-gold": _under_study(
        {"GET": LEAD_READ, "POST": LEAD_WRITE_OK[201]},
        data=lambda w: {"rows": [{"unit": _free_unit(w).external_id, "value": "safe"}]},
    ),
    "api-gold-answer": _under_study(
        {"GET": LEAD_READ, "PATCH": LEAD_WRITE_OK[200]},
        data=lambda w: {"answer": "unsafe"},
        kwargs=_with("gold", _gold),
    ),
    # Study A is live with no comparisons: the first set is taken, then they are fixed (400).
    "api-comparisons": _under_study(
        {"GET": LEAD_READ, "PUT": roles(anonymous=401, lead_here=200, staff=400, rest=404)},
        data=lambda w: {"comparisons": [{"system_x": "alpha", "system_y": "beta"}]},
    ),
    "api-guide-versions": _under_study(
        {"GET": LEAD_READ, "POST": LEAD_WRITE_OK[201]},
        data=lambda w: {"body": "Matrix guide", "changes": "From the matrix"},
    ),
    # The second enrolment of the same account (staff, after the lead) is a 400.
    "api-enrolments": _under_study(
        {"GET": LEAD_READ, "POST": roles(anonymous=401, lead_here=201, staff=400, rest=404)},
        data=lambda w: {"username": "matrix-person", "pool": "expert"},
        setup=_person,
    ),
    "api-enrolment": _under_study(
        {"GET": LEAD_READ, "PATCH": LEAD_WRITE_OK[200]},
        data=lambda w: {"quota": 5},
        kwargs=_with("enrolment", _enrolment),
    ),
    "api-invites": _under_study(
        {"GET": LEAD_READ, "POST": LEAD_WRITE_OK[201]}, data=lambda w: {"note": "matrix"}
    ),
    "api-invite": _under_study(
        {"GET": LEAD_READ, "DELETE": LEAD_WRITE_OK[204]}, kwargs=_with("invite", _invite)
    ),
    # Uploads are multipart (sent as a form here); a form without its file is a 400.
    "api-imports": _under_study(
        {"GET": LEAD_READ, "POST": roles(anonymous=401, lead_here=400, staff=400, rest=404)},
        data=lambda w: {"kind": "systems"},
        json=False,
    ),
    "api-import": _under_study({"GET": LEAD_READ}, kwargs=_with("job", _job)),
    "api-labels-export": _under_study(
        {"GET": LEAD_READ}, kwargs=lambda w: {"study": w.study_a.token, "fmt": "csv"}
    ),
    "api-study-file": _under_study({"GET": LEAD_READ}),
}
