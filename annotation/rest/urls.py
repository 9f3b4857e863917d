"""The annotation API's routes, mounted under /api/v1/ by concord/urls.py."""

from django.urls import path

from annotation.rest import tokens, views, work

S = "studies/<str:study>/"

urlpatterns = [
    path("tokens/", tokens.TokenList.as_view(), name="api-tokens"),
    path("tokens/<str:token_id>/", tokens.TokenDetail.as_view(), name="api-token"),
    path("workspaces/", views.WorkspaceList.as_view(), name="api-workspaces"),
    path("workspaces/<slug:workspace>/", views.WorkspaceDetail.as_view(), name="api-workspace"),
    path(
        "workspaces/<slug:workspace>/memberships/",
        views.MembershipList.as_view(),
        name="api-memberships",
    ),
    path("studies/", views.StudyList.as_view(), name="api-studies"),
    path(S, views.StudyDetail.as_view(), name="api-study"),
    path(S + "systems/", views.SystemList.as_view(), name="api-systems"),
    path(S + "prompts/", views.PromptList.as_view(), name="api-prompts"),
    path(S + "outputs/", views.OutputList.as_view(), name="api-outputs"),
    path(S + "units/", views.UnitList.as_view(), name="api-units"),
    path(S + "gold/", views.GoldAnswerList.as_view(), name="api-gold"),
    path(S + "comparisons/", views.ComparisonList.as_view(), name="api-comparisons"),
    path(S + "guide-versions/", views.GuideVersionList.as_view(), name="api-guide-versions"),
    path(S + "rulings/", views.RulingList.as_view(), name="api-rulings"),
    path(S + "enrolments/", views.EnrolmentList.as_view(), name="api-enrolments"),
    path(S + "labels/", views.LabelList.as_view(), name="api-labels"),
    path("work/", work.WorkStudyList.as_view(), name="api-work-studies"),
    path("work/<str:study>/progress/", work.WorkProgress.as_view(), name="api-work-progress"),
    path("work/<str:study>/next/", work.NextTask.as_view(), name="api-work-next-v1"),
    path(
        "work/<str:study>/tasks/<str:task>/submit/",
        work.SubmitTask.as_view(),
        name="api-work-submit-v1",
    ),
    path(
        "work/<str:study>/tasks/<str:task>/abandon/",
        work.AbandonTask.as_view(),
        name="api-work-abandon",
    ),
]
