"""Permission-matrix entries for the lead's import and export pages (issue 12): leads of the
study's workspace and staff; everyone else 404 (anonymous: to the sign-in page)."""

from tests.security.test_permission_matrix import LEAD_PAGE, LEAD_WRITE, Route, roles

# An empty upload or study-file form is refused with its errors (400), nothing written.
LEAD_BAD_FORM = roles(anonymous=302, lead_here=400, staff=400, rest=404)


def _job(w):
    from annotation.models import ImportJob

    if "import_job" not in w.extra:
        w.extra["import_job"] = ImportJob.objects.create(
            study=w.study_a, kind="systems", format="csv", file_name="systems.csv"
        )
    return {"token": w.study_a.token, "job_token": w.extra["import_job"].token}


ROUTES = {
    "studio-imports": Route(expect={"GET": LEAD_PAGE, "POST": LEAD_BAD_FORM}),
    "studio-import-job": Route(expect={"GET": LEAD_PAGE}, kwargs=_job),
    "studio-import-progress": Route(expect={"GET": LEAD_PAGE}, kwargs=_job),
    # Building is idempotent: the study's units exist, so the lead's POST builds none (302).
    "studio-build-units": Route(expect={"POST": LEAD_WRITE}),
    "studio-exports": Route(expect={"GET": LEAD_PAGE}),
    "studio-export-labels": Route(
        expect={"GET": LEAD_PAGE}, kwargs=lambda w: {"token": w.study_a.token, "fmt": "csv"}
    ),
    "studio-study-file": Route(expect={"GET": LEAD_PAGE}),
    "studio-study-file-import": Route(expect={"POST": LEAD_BAD_FORM}),
}
