from django.urls import path

from annotation import views, workbench

urlpatterns = [
    path("", views.home, name="home"),
    path("studies/<str:token>/", views.study_overview, name="study-overview"),
    path("work/<str:token>/", workbench.start, name="work-start"),
]
