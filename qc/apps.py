from django.apps import AppConfig


class QcConfig(AppConfig):
    name = "qc"
    verbose_name = "Quality control"
