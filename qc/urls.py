from django.urls import path

from qc import views
from qc.raters import views as raters

urlpatterns = [
    path("studies/<str:token>/dashboard/", views.dashboard, name="study-dashboard"),
    path("studies/<str:token>/dashboard/recompute/", views.recompute_now, name="study-recompute"),
    path(
        "studies/<str:token>/dashboard/progress/", views.progress, name="study-recompute-progress"
    ),
    path("studies/<str:token>/dashboard/options/", views.options, name="study-report-options"),
    path("studies/<str:token>/report.json", views.report_json, name="study-report-json"),
    path("studies/<str:token>/report/<slug:table>.csv", views.report_csv, name="study-report-csv"),
    path(
        "studies/<str:token>/report/aggregated-labels.jsonl",
        views.aggregated_jsonl,
        name="study-aggregated-jsonl",
    ),
    path("studies/<str:token>/raters/", raters.study_raters, name="study-raters"),
    path("studies/<str:token>/raters/<int:annotator_id>/", raters.rater_page, name="rater-page"),
    path(
        "studies/<str:token>/raters/<int:annotator_id>/audit/",
        raters.send_to_audit,
        name="rater-audit",
    ),
    path("studies/<str:token>/triage/", raters.triage, name="study-triage"),
    path("studies/<str:token>/triage/<str:unit_token>/", raters.triage_item, name="triage-item"),
    path("studies/<str:token>/audits/", raters.audits, name="study-audits"),
    path("studies/<str:token>/audits/<int:audit_id>/", raters.audit_detail, name="audit-detail"),
    path("workspaces/<slug:slug>/raters/", raters.overview, name="raters-overview"),
]
