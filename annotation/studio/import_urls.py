"""URLs of the lead's import and export pages (included from annotation.urls)."""

from django.urls import path

from annotation.studio import exports, imports

urlpatterns = [
    path("studies/<str:token>/import/", imports.import_page, name="studio-imports"),
    path(
        "studies/<str:token>/import/<str:job_token>/",
        imports.job_page,
        name="studio-import-job",
    ),
    path(
        "studies/<str:token>/import/<str:job_token>/progress/",
        imports.job_progress,
        name="studio-import-progress",
    ),
    path("studies/<str:token>/units/build/", imports.build_units, name="studio-build-units"),
    path("studies/<str:token>/export/", exports.export_page, name="studio-exports"),
    path(
        "studies/<str:token>/export/labels.<str:fmt>",
        exports.labels_download,
        name="studio-export-labels",
    ),
    path("studies/<str:token>/export/study.json", exports.study_file, name="studio-study-file"),
    path(
        "studies/<str:token>/study-file/",
        exports.study_file_import,
        name="studio-study-file-import",
    ),
]
