"""Every route x method x role answers as this table says, and a refused write changes nothing.

The table is driven by the URL conf: `test_every_route_has_an_entry` fails for a route that has
no entry (and for an entry whose route is gone), so a new page or endpoint cannot ship without
someone deciding who may reach it.

How to add a route (other helpers: read this):
- Add one `Route` to ROUTES below, keyed by the URL name ("namespace:name" inside a namespace),
  in the section of your app; or, to keep merges apart, put `ROUTES = {...}` in a module of your
  own named `tests/security/matrix_<topic>.py`: every such module is merged into the table.
- `expect` maps each method you serve to `roles(...)` (the status per role); every method you do
  not list must answer `others` (default 405 for every role).
- `kwargs(world)` gives the URL arguments (default: study A's token); `data(world)` the query of a
  GET / body of a write; `setup(world)` creates whatever else the route needs. The World holds two
  workspaces (A, B), each with a live study (`study_a` is a Prolific crowd study with a stored
  report), and one user per role; `world.lease` is an open lease of the annotator in study A.
- Roles: anonymous, annotator here (member of A, enrolled in study A), annotator elsewhere (same
  in B), lead here (lead of A), lead elsewhere (lead of B), staff (is_staff, no membership).
"""

from __future__ import annotations

import importlib
import json as json_module
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from django.apps import apps
from django.db import connection
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from annotation.models import Membership, Study
from annotation.services.assignment import next_assignment
from tests.factories import MembershipFactory, UserFactory, enrol, make_study

pytestmark = pytest.mark.django_db

ROLES = (
    "anonymous",
    "annotator_here",
    "annotator_elsewhere",
    "lead_here",
    "lead_elsewhere",
    "staff",
)
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
# Statuses that mean "refused": after one of these on a write, the database must be unchanged.
REFUSED = {400, 401, 403, 404, 405, 409, 415, 429}
PROLIFIC = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "6a" * 12, "SESSION_ID": "s1"}


def roles(rest: int | None = None, **status: int) -> dict[str, int]:
    """{role: status}: the named roles as given, every other role `rest`."""
    unknown = set(status) - set(ROLES)
    assert not unknown, f"unknown roles {unknown}"
    table = {role: status.get(role, rest) for role in ROLES}
    missing = [role for role, s in table.items() if s is None]
    assert not missing, f"no status for {missing}"
    return table


@dataclass
class World:
    study_a: Study
    study_b: Study
    users: dict
    lease: object = None
    extra: dict = field(default_factory=dict)


@dataclass
class Route:
    expect: dict[str, dict[str, int]]
    others: dict[str, int] = field(default_factory=lambda: roles(rest=405))
    kwargs: Callable[[World], dict] = lambda w: {"token": w.study_a.token}
    data: Callable[[World], dict] | None = None
    setup: Callable[[World], None] | None = None
    # Where the route is reached for the check (a namespace entry such as "admin:*").
    url: Callable[[World], str] | None = None
    # Writes are sent as JSON (the REST API's only parser) instead of a form.
    json: bool = False


# Shorthands for the common shapes.
ANNOTATOR_PAGE = roles(anonymous=302, annotator_here=200, rest=404)
LEAD_PAGE = roles(anonymous=302, lead_here=200, staff=200, rest=404)
LEAD_WRITE = roles(anonymous=302, lead_here=302, staff=302, rest=404)


def _assignment(w: World) -> dict:
    return {"token": w.study_a.token, "assignment_token": w.lease.token}


ROUTES: dict[str, Route] = {
    # --- accounts (concord/urls.py) ---
    "login": Route(
        expect={
            "GET": roles(anonymous=200, rest=302),
            "POST": roles(anonymous=200, rest=302),  # an empty form re-renders with its errors
            "PUT": roles(anonymous=200, rest=302),  # Django's FormView treats PUT as POST
        },
        others=roles(anonymous=405, rest=302),  # a signed-in user is sent on before the method
        kwargs=lambda w: {},
    ),
    "logout": Route(expect={"POST": roles(rest=302)}, kwargs=lambda w: {}),
    "admin:*": Route(
        expect={"GET": roles(staff=200, rest=302), "POST": roles(staff=200, rest=302)},
        others=roles(staff=200, rest=302),
        url=lambda w: reverse("admin:index"),
    ),
    # --- annotation: lead pages and the annotator's side ---
    "home": Route(expect={"GET": roles(anonymous=302, rest=200)}, kwargs=lambda w: {}),
    "study-overview": Route(expect={"GET": LEAD_PAGE}),
    "work-start": Route(expect={"GET": ANNOTATOR_PAGE}),
    "work-task": Route(expect={"GET": ANNOTATOR_PAGE}),
    "work-guide": Route(expect={"GET": ANNOTATOR_PAGE}),
    # An empty form from the annotator is refused as incomplete (400).
    "work-submit": Route(expect={"POST": roles(anonymous=302, annotator_here=400, rest=404)}),
    # The crowd link: signed out it signs the worker in; signed in as someone else it asks first
    # (200); the POST of that page switches (302).
    "crowd-entry": Route(
        expect={"GET": roles(anonymous=302, rest=200), "POST": roles(rest=302)},
        data=lambda w: dict(PROLIFIC),
    ),
    "api-work-next": Route(expect={"GET": roles(anonymous=401, annotator_here=200, rest=404)}),
    # An empty answer from the annotator is refused as invalid (400).
    "api-work-submit": Route(
        expect={"POST": roles(anonymous=401, annotator_here=400, rest=404)}, kwargs=_assignment
    ),
    # --- qc: the lead's dashboard and downloads (login first, then the method) ---
    "study-dashboard": Route(expect={"GET": LEAD_PAGE}, others=roles(anonymous=302, rest=405)),
    "study-recompute": Route(expect={"POST": LEAD_WRITE}, others=roles(anonymous=302, rest=405)),
    "study-recompute-progress": Route(
        expect={"GET": LEAD_PAGE}, others=roles(anonymous=302, rest=405)
    ),
    "study-report-options": Route(
        expect={"POST": LEAD_WRITE}, others=roles(anonymous=302, rest=405)
    ),
    "study-report-json": Route(expect={"GET": LEAD_PAGE}, others=roles(anonymous=302, rest=405)),
    "study-report-csv": Route(
        expect={"GET": LEAD_PAGE},
        others=roles(anonymous=302, rest=405),
        kwargs=lambda w: {"token": w.study_a.token, "table": "agreement"},
    ),
}


def _more_routes() -> dict[str, Route]:
    """Entries from tests/security/matrix_*.py modules (each with a ROUTES dict)."""
    import tests.security as package

    found: dict[str, Route] = {}
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("matrix_"):
            module = importlib.import_module(f"tests.security.{info.name}")
            clash = set(module.ROUTES) & (set(ROUTES) | set(found))
            assert not clash, f"{info.name} repeats entries {clash}"
            found.update(module.ROUTES)
    return found


TABLE = {**ROUTES, **_more_routes()}


def url_names(patterns=None, prefix: str = "") -> set[str]:
    """Every route of the URL conf by name; a namespace we do not own (the admin) as `ns:*`;
    an unnamed route by its pattern."""
    names = set()
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(entry, URLResolver):
            if entry.namespace == "admin":
                names.add("admin:*")
                continue
            inner = f"{prefix}{entry.namespace}:" if entry.namespace else prefix
            names |= url_names(entry.url_patterns, inner)
        elif isinstance(entry, URLPattern):
            names.add(f"{prefix}{entry.name}" if entry.name else f"<unnamed {entry.pattern}>")
    return names


def test_every_route_has_an_entry():
    routes = url_names()
    assert sorted(routes - set(TABLE)) == [], "routes without a permission-matrix entry"
    assert sorted(set(TABLE) - routes) == [], "entries for routes that no longer exist"


@pytest.fixture
def world(settings) -> World:
    settings.CONCORD_QC_AUTO_RECOMPUTE = False
    study_a = make_study(n_prompts=3, crowd_platform=Study.CrowdPlatform.PROLIFIC)
    study_b = make_study(n_prompts=3)
    users = {
        "annotator_here": enrol(study_a).user,
        "annotator_elsewhere": enrol(study_b).user,
        "lead_here": MembershipFactory(workspace=study_a.workspace, role="lead").user,
        "lead_elsewhere": MembershipFactory(workspace=study_b.workspace, role="lead").user,
        "staff": UserFactory(is_staff=True),
    }
    assert not Membership.objects.filter(user=users["staff"]).exists()
    from qc import services

    services.recompute(study_a.id)  # a stored report, so the downloads have something to serve
    w = World(study_a, study_b, users)
    w.lease = next_assignment(users["annotator_here"], study_a)
    return w


def test_the_change_detector_sees_an_update_an_insert_and_a_delete(world):
    """The matrix's "refused but changed" check is only as good as db_state: it must tell."""
    before = db_state()
    Study.objects.filter(pk=world.study_a.pk).update(name="renamed")
    after_update = db_state()
    assert [k for k in before if before[k] != after_update[k]] == ["annotation.Study"]
    user = UserFactory()
    after_insert = db_state()
    assert after_insert["auth.User"] != after_update["auth.User"]
    user.delete()
    assert db_state()["auth.User"] == after_update["auth.User"]


def db_state() -> dict[str, int]:
    """A hash of every row of our apps' tables and the accounts (sessions and the login
    throttle's log excluded: signing in and failing to are allowed to write those)."""
    models = [
        m for app in ("annotation", "qc", "auth") for m in apps.get_app_config(app).get_models()
    ]
    if connection.vendor == "postgresql":
        # One statement, hashed by the server: per table, the md5 of its rows as text in order.
        # (Read per model through the ORM, this was half of the matrix's ten minutes.)
        quote = connection.ops.quote_name
        sql = " UNION ALL ".join(
            f"SELECT %s, md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), ''))"
            f" FROM {quote(m._meta.db_table)} t"
            for m in models
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [m._meta.label for m in models])
            return dict(cursor.fetchall())
    return {
        m._meta.label: hash(repr(tuple(m.objects.order_by("pk").values_list()))) for m in models
    }


def signed_in(w: World, role: str) -> Client:
    client = Client()
    if role != "anonymous":
        client.force_login(w.users[role])
    return client


def request(client: Client, w: World, route: Route, name: str, method: str):
    url = route.url(w) if route.url else reverse(name, kwargs=route.kwargs(w))
    data = route.data(w) if route.data else {}
    if method == "GET":
        return client.get(url, data)
    if route.json:
        return client.generic(method, url, json_module.dumps(data), content_type="application/json")
    if method == "POST":
        return client.post(url, data)
    return client.generic(method, url)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_route_answers_each_role_as_the_table_says(world, name):
    route = TABLE[name]
    if route.setup:
        route.setup(world)
    unknown = set(route.expect) - set(METHODS)
    assert not unknown, f"{name}: unknown methods {unknown}"
    wrong = []
    for method in METHODS:
        expected = route.expect.get(method, route.others)
        for role in ROLES:
            client = signed_in(world, role)
            before = db_state() if method != "GET" else None
            response = request(client, world, route, name, method)
            if response.status_code != expected[role]:
                wrong.append(
                    f"{method} as {role}: {response.status_code}, expected {expected[role]}"
                )
            refused = response.status_code in REFUSED or (
                response.status_code == 302 and "/login/" in response.get("Location", "")
            )
            if before is not None and refused:
                changed = [k for k, v in db_state().items() if before[k] != v]
                if changed:
                    wrong.append(f"{method} as {role} was refused but changed {changed}")
    assert wrong == [], f"{name}:\n" + "\n".join(wrong)
