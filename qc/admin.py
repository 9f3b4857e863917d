"""Django admin for quality reports (read-only: workers write them), worker heartbeats, rater
reports, adjudications and audits (read-only here: they are made on the review pages)."""

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


@admin.register(m.RaterReport)
class RaterReportAdmin(admin.ModelAdmin):
    list_display = ["study", "annotator", "concern", "alert", "created_at"]
    list_filter = ["alert", "study"]
    readonly_fields = [f.name for f in m.RaterReport._meta.fields]


@admin.register(m.Adjudication)
class AdjudicationAdmin(admin.ModelAdmin):
    """Append-only: a decision is never edited or deleted; a new one supersedes it."""

    list_display = ["study", "unit", "decision", "cause", "reference", "adjudicator", "created_at"]
    list_filter = ["decision", "cause"]
    readonly_fields = [f.name for f in m.Adjudication._meta.fields]

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(m.Audit)
class AuditAdmin(admin.ModelAdmin):
    list_display = ["study", "kind", "reason", "target_annotator", "drawn_by", "created_at"]
    list_filter = ["kind"]
    readonly_fields = [f.name for f in m.Audit._meta.fields]


@admin.register(m.AuditItem)
class AuditItemAdmin(admin.ModelAdmin):
    list_display = ["audit", "label", "verdict", "checked_by", "checked_at"]
    list_filter = ["verdict"]
    readonly_fields = [f.name for f in m.AuditItem._meta.fields]
