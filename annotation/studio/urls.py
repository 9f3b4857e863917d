"""Routes of the lead's pages (included by annotation.urls before the study overview's)."""

from django.urls import path

from annotation.studio import people, views

urlpatterns = [
    path("studies/new/", views.new_study, name="studio-new-study"),
    path("workspaces/<slug:slug>/", views.workspace, name="studio-workspace"),
    path("workspaces/<slug:slug>/studies/new/", views.new_study, name="studio-new-study-in"),
    path("studies/<str:token>/", views.overview, name="study-overview"),
    path("studies/<str:token>/settings/", views.study_settings, name="studio-settings"),
    path("studies/<str:token>/launch/", views.launch, name="studio-launch"),
    path("studies/<str:token>/status/", views.set_status, name="studio-set-status"),
    path("studies/<str:token>/people/", people.people_page, name="studio-people"),
    path("studies/<str:token>/people/invite/", people.invite, name="studio-invite"),
    path(
        "studies/<str:token>/people/invites/<int:invite_id>/withdraw/",
        people.revoke,
        name="studio-revoke-invite",
    ),
    path(
        "studies/<str:token>/people/<int:enrolment_id>/",
        people.update_enrolment,
        name="studio-enrolment",
    ),
    path(
        "studies/<str:token>/people/<int:enrolment_id>/remove/",
        people.remove,
        name="studio-remove",
    ),
    path("invite/<str:secret>/", people.accept_invite, name="invite-accept"),
]
