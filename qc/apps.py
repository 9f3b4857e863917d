from django.apps import AppConfig


class QcConfig(AppConfig):
    name = "qc"
    verbose_name = "Quality control"

    def ready(self) -> None:
        from annotation.signals import label_submitted
        from qc.receivers import on_label_submitted

        label_submitted.connect(on_label_submitted, dispatch_uid="qc.schedule_recompute")
