"""Django admin for quality reports (read-only: workers write them) and worker heartbeats."""

from django.contrib import admin

from qc import models as m


@admin.register(m.QualityReport)
class QualityReportAdmin(admin.ModelAdmin):
    list_display = ["study", "kind", "label_count", "compute_seconds", "created_at"]
    list_filter = ["kind", "study"]
    readonly_fields = [f.name for f in m.QualityReport._meta.fields]


@admin.register(m.WorkerHeartbeat)
class WorkerHeartbeatAdmin(admin.ModelAdmin):
    list_display = ["hostname", "seen_at"]


@admin.register(m.ReportOptions)
class ReportOptionsAdmin(admin.ModelAdmin):
    list_display = ["study", "unanimous_view", "updated_at"]
    list_filter = ["unanimous_view"]


@admin.register(m.RecomputeState)
class RecomputeStateAdmin(admin.ModelAdmin):
    list_display = ["study", "stage", "progress", "pending_since", "started_at", "finished_at"]
    list_filter = ["stage"]
    readonly_fields = [f.name for f in m.RecomputeState._meta.fields]
