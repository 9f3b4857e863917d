"""Permission-matrix entries for the REST API (/api/v1/), its schema and docs, and the account's
token pages. Merged into tests/security/test_permission_matrix.py's table.

API statuses: a signed-out caller gets 401 (the Bearer challenge), a foreign or unreachable study
404 (never 403, which would confirm it exists), a method the endpoint does not serve 405; writes
are JSON, and an empty body from a caller who may write is refused with 400.
"""

from tests.security.test_permission_matrix import Route, roles


def _none(w):
    return {}


def _study(w):
    return {"study": w.study_a.token}


def _workspace(w):
    return {"workspace": w.study_a.workspace.slug}


def _api_token(w):
    from annotation.services.api_tokens import create_token

    if "api_token" not in w.extra:
        w.extra["api_token"] = create_token(w.users["lead_here"], "matrix").token
    return w.extra["api_token"]


def _lead_token_id(w):
    return {"token_id": str(_api_token(w).pk)}


def _lead_token_pk(w):
    return {"token_id": _api_token(w).pk}


def _task(w):
    return {"study": w.study_a.token, "task": w.lease.token}


LEAD_READ = roles(anonymous=401, lead_here=200, staff=200, rest=404)
SIGNED_IN_READ = roles(anonymous=401, rest=200)
NOT_SERVED = roles(anonymous=401, rest=405)

ROUTES: dict[str, Route] = {}

# Lead-only reads under a study, served GET only (the routes that also take writes are in
# tests/security/matrix_api_writes.py): outsiders get 404 for every method (the study
# is looked up before the method is considered), insiders 405 for the methods not served.
LEAD_STUDY_LIST = {
    "expect": {"GET": LEAD_READ},
    "others": roles(anonymous=401, lead_here=405, staff=405, rest=404),
}
for name in (
    "api-units",
    "api-rulings",
    "api-labels",
    "api-report",
    "api-report-tables",
    "api-aggregated-labels",
):
    ROUTES[name] = Route(kwargs=_study, json=True, **LEAD_STUDY_LIST)

ROUTES.update(
    {
        "api-report-table": Route(
            kwargs=lambda w: {"study": w.study_a.token, "table": "agreement"},
            json=True,
            **LEAD_STUDY_LIST,
        ),
        "api-report-recompute": Route(
            expect={"POST": roles(anonymous=401, lead_here=202, staff=202, rest=404)},
            others=roles(anonymous=401, lead_here=405, staff=405, rest=404),
            kwargs=_study,
            json=True,
        ),
        # Lists scoped to the caller (an empty list for someone with nothing in reach).
        "api-workspaces": Route(
            expect={"GET": SIGNED_IN_READ}, others=NOT_SERVED, kwargs=_none, json=True
        ),
        "api-work-studies": Route(
            expect={"GET": SIGNED_IN_READ}, others=NOT_SERVED, kwargs=_none, json=True
        ),
        "api-workspace": Route(
            expect={"GET": LEAD_READ}, others=NOT_SERVED, kwargs=_workspace, json=True
        ),
        "api-memberships": Route(
            expect={"GET": LEAD_READ}, others=NOT_SERVED, kwargs=_workspace, json=True
        ),
        # Tokens: your own only (a lead's token is 404 to everyone else, staff included).
        "api-tokens": Route(
            expect={"GET": SIGNED_IN_READ, "POST": roles(anonymous=401, rest=400)},
            others=NOT_SERVED,
            kwargs=_none,
            json=True,
        ),
        "api-token": Route(
            expect={
                "GET": roles(anonymous=401, lead_here=200, rest=404),
                "DELETE": roles(anonymous=401, lead_here=204, rest=404),
            },
            others=NOT_SERVED,
            kwargs=_lead_token_id,
            json=True,
        ),
        # The annotator loop: only the annotator of this study.
        "api-work-progress": Route(
            expect={"GET": roles(anonymous=401, annotator_here=200, rest=404)},
            others=NOT_SERVED,
            kwargs=_study,
            json=True,
        ),
        "api-work-next-v1": Route(
            expect={"POST": roles(anonymous=401, annotator_here=200, rest=404)},
            others=NOT_SERVED,
            kwargs=_study,
            json=True,
        ),
        "api-work-abandon": Route(
            expect={"POST": roles(anonymous=401, annotator_here=200, rest=404)},
            others=NOT_SERVED,
            kwargs=_task,
            json=True,
        ),
        # Scope first: outsiders get 404 whatever the body; the annotator's empty answer is 400.
        "api-work-submit-v1": Route(
            expect={"POST": roles(anonymous=401, annotator_here=400, rest=404)},
            others=NOT_SERVED,
            kwargs=_task,
            json=True,
        ),
        # The schema and its docs page describe the API; they are public, read only.
        "api-schema": Route(expect={"GET": roles(rest=200)}, kwargs=lambda w: {}),
        "api-docs": Route(expect={"GET": roles(rest=200)}, kwargs=lambda w: {}),
        # The account's token page: any signed-in user, their own tokens.
        "account-tokens": Route(
            expect={"GET": roles(anonymous=302, rest=200), "POST": roles(anonymous=302, rest=400)},
            others=roles(anonymous=302, rest=405),
            kwargs=lambda w: {},
        ),
        # Revoking answers with the token page whether or not the token was yours (no oracle).
        "account-token-revoke": Route(
            expect={"POST": roles(rest=302)},
            others=roles(anonymous=302, rest=405),
            kwargs=_lead_token_pk,
        ),
    }
)
