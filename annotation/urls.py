from django.urls import include, path

from annotation import account, api, crowd, views, workbench

urlpatterns = [
    # The work loop first (the API, then the workbench): URLs are tried in order, and these
    # are the ones asked most.
    path("api/work/<str:token>/next", api.next_task, name="api-work-next"),
    path(
        "api/work/<str:token>/submit/<str:assignment_token>",
        api.submit,
        name="api-work-submit",
    ),
    path("work/<str:token>/", workbench.start, name="work-start"),
    path("work/<str:token>/task/", workbench.task, name="work-task"),
    path("work/<str:token>/submit/", workbench.submit, name="work-submit"),
    path("work/<str:token>/guide/", workbench.guide, name="work-guide"),
    path("", views.home, name="home"),
    path("", include("annotation.studio.urls")),
    path("c/<str:token>/", crowd.entry, name="crowd-entry"),
    path("account/tokens/", account.tokens, name="account-tokens"),
    path("account/tokens/<int:token_id>/revoke/", account.revoke, name="account-token-revoke"),
    path("", include("annotation.training.urls")),
    path("", include("annotation.studio.import_urls")),
]
