"""Routes of the training pages (included from annotation.urls)."""

from django.urls import path

from annotation.training import annotator, views

urlpatterns = [
    # The lead's pages.
    path("studies/<str:token>/training/", views.training_home, name="training-home"),
    path("studies/<str:token>/guide/", views.guide_edit, name="guide-edit"),
    path(
        "studies/<str:token>/guide/versions/<int:number>/",
        views.guide_version,
        name="guide-version",
    ),
    path("studies/<str:token>/guide/flags/", views.guide_flags, name="guide-flags"),
    path(
        "studies/<str:token>/qualification/",
        views.qualification_builder,
        name="qualification-builder",
    ),
    path(
        "studies/<str:token>/qualification/results/",
        views.qualification_results,
        name="qualification-results",
    ),
    path(
        "studies/<str:token>/calibration/",
        views.calibration_sessions,
        name="calibration-sessions",
    ),
    path(
        "studies/<str:token>/calibration/<str:session>/",
        views.calibration_session,
        name="calibration-session",
    ),
    # The annotator's steps.
    path(
        "work/<str:token>/qualification/",
        annotator.qualification_start,
        name="qualification-start",
    ),
    path(
        "work/<str:token>/qualification/guide/",
        annotator.qualification_guide,
        name="qualification-guide",
    ),
    path(
        "work/<str:token>/recalibrate/",
        annotator.recalibration_start,
        name="recalibration-start",
    ),
    path(
        "work/<str:token>/calibration/<str:session>/",
        annotator.calibration_rater,
        name="calibration-rater",
    ),
    path("work/<str:token>/training/<str:batch>/", annotator.task, name="training-task"),
    path(
        "work/<str:token>/training/<str:batch>/submit/",
        annotator.submit,
        name="training-submit",
    ),
    path(
        "work/<str:token>/training/<str:batch>/result/",
        annotator.result,
        name="training-result",
    ),
]
