"""Top-level URLs: accounts, the annotation side, the quality-control side, the admin."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from annotation.rest.schema import docs as api_docs

urlpatterns = [
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("annotation.rest.urls")),
    path("api/v1/", include("qc.rest.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", api_docs, name="api-docs"),
    path("", include("annotation.urls")),
    path("", include("qc.urls")),
]

handler400 = "annotation.rest.errors.bad_request"
handler404 = "annotation.rest.errors.not_found"
