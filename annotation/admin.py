"""Django admin for every annotation model. Labels are append-only, so their admin is read-only;
the engine's state (tokens, shuffle keys, open slots, seeds, walks, leases) is shown, never edited;
studies get the builder's validation and lock rules, and change status through its service."""

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import models as dj_models

from annotation import models as m
from annotation.services import studies as study_services


class MembershipInline(admin.TabularInline):
    model = m.Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(m.Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(m.Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "workspace", "role", "created_at"]
    list_filter = ["role", "workspace"]
    search_fields = ["user__username", "workspace__name"]


class ComparisonInline(admin.TabularInline):
    model = m.Comparison
    extra = 0


@admin.register(m.Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "workspace",
        "task_kind",
        "status",
        "overlap",
        "gold_rate",
        "created_at",
    ]
    list_filter = ["status", "task_kind", "workspace"]
    search_fields = ["name", "token"]
    readonly_fields = ["token", "created_at", "status"]
    inlines = [ComparisonInline]
    actions = ["go_live", "pause", "close"]
    formfield_overrides = {dj_models.URLField: {"assume_scheme": "https"}}

    def get_readonly_fields(self, request, obj=None):
        # The builder's lock rules: what a live study may no longer change (Study.clean validates
        # the rest, e.g. the label scheme, on every save here as on the pages).
        locked = list(study_services.locked_fields(obj)) if obj is not None else []
        return [*self.readonly_fields, *locked]

    def _move(self, request, queryset, status: str):
        for study in queryset:
            try:
                study_services.set_status(study, status)
            except ValidationError as error:
                for message in error.messages:
                    self.message_user(request, f"{study}: {message}", messages.ERROR)

    @admin.action(description="Go live (the launch checklist must pass)")
    def go_live(self, request, queryset):
        self._move(request, queryset, m.Study.Status.LIVE)

    @admin.action(description="Pause")
    def pause(self, request, queryset):
        self._move(request, queryset, m.Study.Status.PAUSED)

    @admin.action(description="Close (final)")
    def close(self, request, queryset):
        self._move(request, queryset, m.Study.Status.CLOSED)


@admin.register(m.Comparison)
class ComparisonAdmin(admin.ModelAdmin):
    list_display = ["study", "system_x", "system_y", "expected", "position"]
    list_filter = ["study", "expected"]


@admin.register(m.Enrolment)
class EnrolmentAdmin(admin.ModelAdmin):
    list_display = ["user", "study", "pool", "qualified_at", "calibrated_guide_version", "quota"]
    list_filter = ["pool", "study"]
    search_fields = ["user__username", "external_id"]
    readonly_fields = ["queue_seed", "positions_issued", "walk_pass", "walk_step", "walk_cursor"]


class RulingInline(admin.TabularInline):
    model = m.Ruling
    extra = 0


@admin.register(m.GuideVersion)
class GuideVersionAdmin(admin.ModelAdmin):
    list_display = ["study", "number", "requires_recalibration", "published_at"]
    list_filter = ["study", "requires_recalibration"]
    inlines = [RulingInline]


@admin.register(m.Ruling)
class RulingAdmin(admin.ModelAdmin):
    list_display = ["title", "study", "guide_version", "created_at"]
    list_filter = ["study"]
    search_fields = ["title", "text"]


@admin.register(m.System)
class SystemAdmin(admin.ModelAdmin):
    list_display = ["name", "study"]
    list_filter = ["study"]
    search_fields = ["name"]


@admin.register(m.Prompt)
class PromptAdmin(admin.ModelAdmin):
    list_display = ["external_id", "study", "language", "topic", "source"]
    list_filter = ["study", "language", "topic", "source"]
    search_fields = ["external_id", "text"]


@admin.register(m.Output)
class OutputAdmin(admin.ModelAdmin):
    list_display = ["id", "prompt", "system"]
    list_filter = ["system__study", "system"]
    search_fields = ["text", "prompt__external_id"]
    list_select_related = ["prompt", "system"]


class UnitOutputInline(admin.TabularInline):
    model = m.UnitOutput
    extra = 0
    raw_id_fields = ["output"]


@admin.register(m.Unit)
class UnitAdmin(admin.ModelAdmin):
    list_display = ["token", "study", "kind", "role", "overlap", "open_slots", "created_at"]
    list_filter = ["role", "kind", "study"]
    search_fields = ["token"]
    readonly_fields = ["token", "overlap", "open_slots", "shuffle_key"]
    raw_id_fields = ["prompt"]
    inlines = [UnitOutputInline]


@admin.register(m.GoldAnswer)
class GoldAnswerAdmin(admin.ModelAdmin):
    list_display = ["unit", "value", "guide_version", "author", "created_at"]
    list_filter = ["unit__study"]
    raw_id_fields = ["unit"]


@admin.register(m.Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    """Leases and their presentations are the engine's state: read here, changed only by it."""

    list_display = ["token", "annotator", "study", "purpose", "status", "position", "expires_at"]
    list_filter = ["purpose", "status", "study"]
    search_fields = ["token", "annotator__username"]
    raw_id_fields = ["unit", "repeat_of"]
    list_select_related = ["annotator", "study"]

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class SpaAnswerInline(admin.TabularInline):
    model = m.SpaAnswer
    extra = 0
    can_delete = False


class ReadOnlyAdmin(admin.ModelAdmin):
    """Raw labels are append-only: they can be read here, never changed or deleted."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(m.Label)
class LabelAdmin(ReadOnlyAdmin):
    list_display = ["id", "annotator", "study", "purpose", "choice", "score", "created_at"]
    list_filter = ["purpose", "study"]
    search_fields = ["annotator__username", "assignment__token"]
    list_select_related = ["annotator", "study"]
    inlines = [SpaAnswerInline]


@admin.register(m.SpaAnswer)
class SpaAnswerAdmin(ReadOnlyAdmin):
    list_display = ["label", "comparison", "reverse", "probability", "position"]
    list_filter = ["reverse", "comparison__study"]


@admin.register(m.OutputRating)
class OutputRatingAdmin(ReadOnlyAdmin):
    list_display = ["label", "output", "score"]


@admin.register(m.UnitOutput)
class UnitOutputAdmin(admin.ModelAdmin):
    list_display = ["unit", "output", "position"]
    list_filter = ["unit__study"]
    raw_id_fields = ["unit", "output"]


@admin.register(m.Invite)
class InviteAdmin(ReadOnlyAdmin):
    """Invites are made and used through the People page; the link's secret is never stored."""

    list_display = ["study", "pool", "quota", "created_by", "created_at", "expires_at", "used_at"]
    list_filter = ["pool", "study"]
    exclude = ["secret_hash"]


@admin.register(m.QualificationItem)
class QualificationItemAdmin(admin.ModelAdmin):
    list_display = ["id", "study", "difficulty", "source_unit", "created_at"]
    list_filter = ["study", "difficulty"]
    raw_id_fields = ["unit", "source_unit", "ruling"]


@admin.register(m.CalibrationSession)
class CalibrationSessionAdmin(admin.ModelAdmin):
    list_display = ["title", "study", "status", "published_version", "created_at"]
    list_filter = ["study", "status"]


@admin.register(m.CalibrationItem)
class CalibrationItemAdmin(admin.ModelAdmin):
    list_display = ["session", "position", "unit"]
    raw_id_fields = ["unit", "source_unit"]


@admin.register(m.TrainingBatch)
class TrainingBatchAdmin(admin.ModelAdmin):
    list_display = ["annotator", "study", "kind", "attempt", "score", "passed", "finished_at"]
    list_filter = ["kind", "study"]


@admin.register(m.TrainingTask)
class TrainingTaskAdmin(admin.ModelAdmin):
    list_display = ["batch", "position", "unit", "assignment"]
    raw_id_fields = ["unit", "assignment"]


@admin.register(m.ImportJob)
class ImportJobAdmin(ReadOnlyAdmin):
    list_display = ["file_name", "study", "kind", "status", "created", "unchanged", "error_count"]
    list_filter = ["kind", "status"]
    list_select_related = ["study"]


@admin.register(m.ImportRow)
class ImportRowAdmin(ReadOnlyAdmin):
    list_display = ["job_id", "line", "key"]


@admin.register(m.ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Staff see and revoke tokens; secrets are not stored, so none can be shown or made here."""

    list_display = ["name", "user", "prefix", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "user__username", "prefix"]
    readonly_fields = ["user", "name", "prefix", "digest", "created_at", "last_used_at"]

    def has_add_permission(self, request):
        return False
