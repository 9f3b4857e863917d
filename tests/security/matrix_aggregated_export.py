"""Permission-matrix entry of the aggregated labels as JSON Lines (issue 14): the study's leads
and staff only, like the CSV downloads beside it."""

from tests.security.test_permission_matrix import Route, roles

ROUTES = {
    "study-aggregated-jsonl": Route(
        expect={"GET": roles(anonymous=302, lead_here=200, staff=200, rest=404)},
        others=roles(anonymous=302, rest=405),
    ),
}
