"""Routes of the lead's pages (included by annotation.urls before the study overview's)."""

from django.urls import path

from annotation.studio import views

urlpatterns = [
    path("studies/new/", views.new_study, name="studio-new-study"),
    path("workspaces/<slug:slug>/", views.workspace, name="studio-workspace"),
    path("workspaces/<slug:slug>/studies/new/", views.new_study, name="studio-new-study-in"),
    path("studies/<str:token>/", views.overview, name="study-overview"),
    path("studies/<str:token>/settings/", views.study_settings, name="studio-settings"),
    path("studies/<str:token>/launch/", views.launch, name="studio-launch"),
    path("studies/<str:token>/status/", views.set_status, name="studio-set-status"),
]
