from django.urls import path

from qc import views

urlpatterns = [
    path("studies/<str:token>/dashboard/", views.dashboard, name="study-dashboard"),
    path("studies/<str:token>/dashboard/recompute/", views.recompute_now, name="study-recompute"),
    path(
        "studies/<str:token>/dashboard/progress/", views.progress, name="study-recompute-progress"
    ),
    path("studies/<str:token>/dashboard/options/", views.options, name="study-report-options"),
    path("studies/<str:token>/report.json", views.report_json, name="study-report-json"),
    path("studies/<str:token>/report/<slug:table>.csv", views.report_csv, name="study-report-csv"),
]
