"""qc's API routes, mounted under /api/v1/ by concord/urls.py."""

from django.urls import path

from qc.rest import views

urlpatterns = [
    path("studies/<str:study>/report/", views.Report.as_view(), name="api-report"),
    path(
        "studies/<str:study>/report/recompute/",
        views.Recompute.as_view(),
        name="api-report-recompute",
    ),
    path("studies/<str:study>/report/tables/", views.TableList.as_view(), name="api-report-tables"),
    path(
        "studies/<str:study>/report/tables/<str:table>/",
        views.Table.as_view(),
        name="api-report-table",
    ),
    path(
        "studies/<str:study>/aggregated-labels/",
        views.AggregatedLabels.as_view(),
        name="api-aggregated-labels",
    ),
]
