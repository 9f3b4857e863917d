"""Schemathesis against the live schema, as an annotator, a lead and staff (bounded examples per
operation in CI; bench/fuzz.py runs longer): no 5xx, responses that conform to the schema,
unauthenticated calls refused, schema-violating input rejected. The lead's writes (studies,
status, content, comparisons, guide, gold, people) are fuzzed as lead and staff: their bodies
change the study as they go (a study may end up closed), which is part of what is fuzzed.

The requests go through Django's WSGI handler in this process, so the fixtures' rows (and the
test's transaction) are what the API sees. Path parameters naming a study or a workspace are
pointed at real ones, so operations are exercised past the 404 of an unknown id.
"""

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import checks

from annotation.services.api_tokens import create_token
from concord.wsgi import application

MAX_EXAMPLES = int(os.environ.get("CONCORD_FUZZ_EXAMPLES", "10"))
# bench/fuzz.py sets this to count the calls made (operation, role, status) per run.
CALL_LOG = os.environ.get("CONCORD_FUZZ_LOG")

schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)
# Derandomised in the test suite (the same examples every run, so CI is repeatable); bench/fuzz.py
# sets CONCORD_FUZZ_RANDOM=1 to explore new ones.
schema.config.generation.update(
    max_examples=MAX_EXAMPLES,
    database="none",
    deterministic=os.environ.get("CONCORD_FUZZ_RANDOM") != "1",
)

CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
    checks.negative_data_rejection,
    checks.ignored_auth,
]


def lead_write(case) -> bool:
    """A write operation of a lead's route: creating a study, and everything under a study.
    (The operation's method: schemathesis also sends other methods to a read operation.)"""
    writes = ("POST", "PUT", "PATCH", "DELETE")
    operation = case.operation
    return operation.method.upper() in writes and operation.path.startswith("/api/v1/studies/")


@pytest.fixture
def api_unthrottled(settings):
    settings.CONCORD_API_THROTTLE_RATES = {
        **settings.CONCORD_API_THROTTLE_RATES,
        "writes": "100000/min",
        "tokens": "100000/min",
    }
    # Schemathesis sends many made-up tokens from one address; pausing it is tested elsewhere
    # (tests/security/test_token_throttle.py).
    settings.AXES_FAILURE_LIMIT = 100000


@pytest.fixture
def connection_kept_open():
    """As Django's test client does: the handler must not close the test's connection (and
    with it the test's transaction) at the end of each request."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.mark.django_db
@pytest.mark.slow
@pytest.mark.parametrize("role", ["annotator", "lead", "staff"])
@schema.parametrize()
@settings(suppress_health_check=list(HealthCheck), deadline=None)
def test_api_conforms_to_its_schema(case, role, world, api_unthrottled, connection_kept_open):
    user = {"annotator": world.annotator, "lead": world.lead, "staff": world.staff}[role]
    secret = create_token(user, f"fuzz {role}").secret if not hasattr(user, "_fuzz") else user._fuzz
    user._fuzz = secret
    params = case.path_parameters or {}
    if "study" in params:
        params["study"] = world.study.token
    if "workspace" in params:
        params["workspace"] = world.study.workspace.slug
    if role == "annotator" and lead_write(case):
        # A lead's write, whatever its body, is refused to an annotator of the same study before
        # the body is read (404 on the study's routes; 400 for a workspace they do not lead).
        # The permission matrix checks that nothing changes; here every generated body is tried.
        response = case.call(headers={"Authorization": f"Bearer {secret}"})
        assert response.status_code in (400, 404, 415), (
            case.method,
            case.path,
            response.status_code,
        )
        return
    try:
        response = case.call_and_validate(
            headers={"Authorization": f"Bearer {secret}"}, checks=CHECKS
        )
        status = response.status_code
    except Exception:
        status = "failed"
        raise
    finally:
        if CALL_LOG:
            with open(CALL_LOG, "a") as log:
                log.write(f"{case.method} {case.path}\t{role}\t{status}\n")
