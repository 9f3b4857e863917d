"""The annotation API's routes, mounted under /api/v1/ by concord/urls.py."""

from django.urls import path

from annotation.rest import exports, guides, imports, people, studies, tokens, views, work

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
    path("studies/", studies.StudyList.as_view(), name="api-studies"),
    path(S, studies.StudyDetail.as_view(), name="api-study"),
    path(S + "status/", studies.StudyStatus.as_view(), name="api-study-status"),
    path(S + "systems/", imports.SystemList.as_view(), name="api-systems"),
    path(S + "prompts/", imports.PromptList.as_view(), name="api-prompts"),
    path(S + "outputs/", imports.OutputList.as_view(), name="api-outputs"),
    path(S + "imports/", imports.ImportJobList.as_view(), name="api-imports"),
    path(S + "imports/<str:job>/", imports.ImportJobDetail.as_view(), name="api-import"),
    path(S + "units/", views.UnitList.as_view(), name="api-units"),
    path(S + "gold/", imports.GoldAnswerList.as_view(), name="api-gold"),
    path(S + "gold/<str:gold>/", guides.GoldAnswerDetail.as_view(), name="api-gold-answer"),
    path(S + "comparisons/", guides.ComparisonList.as_view(), name="api-comparisons"),
    path(S + "guide-versions/", guides.GuideVersionList.as_view(), name="api-guide-versions"),
    path(S + "rulings/", views.RulingList.as_view(), name="api-rulings"),
    path(S + "enrolments/", people.EnrolmentList.as_view(), name="api-enrolments"),
    path(
        S + "enrolments/<str:enrolment>/",
        people.EnrolmentDetail.as_view(),
        name="api-enrolment",
    ),
    path(S + "invites/", people.InviteList.as_view(), name="api-invites"),
    path(S + "invites/<str:invite>/", people.InviteDetail.as_view(), name="api-invite"),
    path(S + "labels/", views.LabelList.as_view(), name="api-labels"),
    path(S + "labels/export.<str:fmt>", exports.LabelExport.as_view(), name="api-labels-export"),
    path(S + "study-file/", exports.StudyFile.as_view(), name="api-study-file"),
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
