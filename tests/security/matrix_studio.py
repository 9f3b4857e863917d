"""Permission-matrix entries for the lead's studio pages and invite links (issue 12)."""

from annotation.models import Enrolment
from annotation.services import invites
from tests.security.test_permission_matrix import LEAD_PAGE, LEAD_WRITE, Route, roles

# Every studio view checks the method first (405), then sign-in (302), then the tenant scope.
# Pages of a workspace or for creating a study: leads of any workspace reach their own.
ANY_LEAD_PAGE = roles(anonymous=302, lead_here=200, lead_elsewhere=200, staff=200, rest=404)
# A lead page whose empty POST re-renders the form with its errors (nothing written).
LEAD_FORM = roles(anonymous=302, lead_here=200, staff=200, rest=404)


def _workspace(w):
    return {"slug": w.study_a.workspace.slug}


def _invite(w):
    invite, secret = invites.create_invite(study=w.study_a, created_by=None)
    w.extra["invite"], w.extra["secret"] = invite, secret


def _enrolment(w):
    e = Enrolment.objects.get(study=w.study_a, user=w.users["annotator_here"])
    return {"token": w.study_a.token, "enrolment_id": e.pk}


ROUTES = {
    "studio-new-study": Route(
        expect={"GET": ANY_LEAD_PAGE, "POST": ANY_LEAD_PAGE},
        kwargs=lambda w: {},
    ),
    "studio-workspace": Route(expect={"GET": LEAD_PAGE}, kwargs=_workspace),
    "studio-new-study-in": Route(expect={"GET": LEAD_PAGE, "POST": LEAD_FORM}, kwargs=_workspace),
    "studio-settings": Route(expect={"GET": LEAD_PAGE, "POST": LEAD_FORM}),
    "studio-launch": Route(expect={"GET": LEAD_PAGE}),
    # An empty status is refused with a message on the launch page (a redirect, no change).
    "studio-set-status": Route(expect={"POST": LEAD_WRITE}),
    "studio-people": Route(expect={"GET": LEAD_PAGE, "POST": LEAD_FORM}),
    "studio-invite": Route(expect={"POST": LEAD_FORM}),
    "studio-revoke-invite": Route(
        expect={"POST": LEAD_WRITE},
        setup=_invite,
        kwargs=lambda w: {"token": w.study_a.token, "invite_id": w.extra["invite"].pk},
    ),
    # An empty form is refused with a message (a redirect, no change).
    "studio-enrolment": Route(expect={"POST": LEAD_WRITE}, kwargs=_enrolment),
    "studio-remove": Route(expect={"POST": LEAD_WRITE}, kwargs=_enrolment),
    # The invite link: anyone may open it; signed in, the page only explains (nothing changes);
    # an empty form re-renders with its errors.
    "invite-accept": Route(
        expect={"GET": roles(rest=200), "POST": roles(rest=200)},
        setup=_invite,
        kwargs=lambda w: {"secret": w.extra["secret"]},
    ),
}
