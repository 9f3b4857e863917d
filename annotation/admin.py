"""Django admin for every annotation model. Labels are append-only, so their admin is read-only."""

from django.contrib import admin

from annotation import models as m


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
    readonly_fields = ["token", "created_at"]
    inlines = [ComparisonInline]


@admin.register(m.Comparison)
class ComparisonAdmin(admin.ModelAdmin):
    list_display = ["study", "system_x", "system_y", "expected", "position"]
    list_filter = ["study", "expected"]


@admin.register(m.Enrolment)
class EnrolmentAdmin(admin.ModelAdmin):
    list_display = ["user", "study", "pool", "qualified_at", "calibrated_guide_version", "quota"]
    list_filter = ["pool", "study"]
    search_fields = ["user__username", "external_id"]


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
    readonly_fields = ["token"]
    raw_id_fields = ["prompt"]
    inlines = [UnitOutputInline]


@admin.register(m.GoldAnswer)
class GoldAnswerAdmin(admin.ModelAdmin):
    list_display = ["unit", "value", "guide_version", "author", "created_at"]
    list_filter = ["unit__study"]
    raw_id_fields = ["unit"]


@admin.register(m.Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["token", "annotator", "study", "purpose", "status", "position", "expires_at"]
    list_filter = ["purpose", "status", "study"]
    search_fields = ["token", "annotator__username"]
    raw_id_fields = ["unit", "repeat_of"]
    list_select_related = ["annotator", "study"]


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
