"""Read endpoints of the annotation API: workspaces, studies and everything under a study.

Every queryset starts from a scoping selector (`lead_workspaces_for`, `lead_studies_for`); a
nested route first finds its parent study through `lead_studies_for` (404 if out of reach) and
reads only that study's rows.
"""

from django.db.models import Prefetch
from django.shortcuts import get_object_or_404
from rest_framework import generics

from annotation import selectors
from annotation.models import (
    Comparison,
    Enrolment,
    GoldAnswer,
    GuideVersion,
    Label,
    Membership,
    Output,
    Prompt,
    Ruling,
    System,
    Unit,
    UnitOutput,
)
from annotation.rest import filters, serializers
from annotation.rest.pagination import IdCursorPagination, SmallPagination
from annotation.rest.permissions import LeadStudyMixin


class WorkspaceList(generics.ListAPIView):
    """Workspaces you lead (staff: all)."""

    serializer_class = serializers.WorkspaceSerializer
    pagination_class = SmallPagination
    ordering_fields = ["name", "created_at"]
    ordering = ["name"]

    def get_queryset(self):
        return selectors.lead_workspaces_for(self.request.user)


class WorkspaceDetail(generics.RetrieveAPIView):
    serializer_class = serializers.WorkspaceSerializer
    lookup_field = "slug"
    lookup_url_kwarg = "workspace"

    def get_queryset(self):
        return selectors.lead_workspaces_for(self.request.user)


class MembershipList(generics.ListAPIView):
    """Members of a workspace you lead, with their role."""

    serializer_class = serializers.MembershipSerializer
    pagination_class = SmallPagination
    filterset_class = filters.MembershipFilter
    ordering_fields = ["created_at", "role"]
    ordering = ["id"]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Membership.objects.none()
        workspace = get_object_or_404(
            selectors.lead_workspaces_for(self.request.user), slug=self.kwargs["workspace"]
        )
        return Membership.objects.filter(workspace=workspace).select_related("user")


class StudyList(generics.ListAPIView):
    """Studies you lead (staff: all)."""

    serializer_class = serializers.StudySerializer
    pagination_class = SmallPagination
    filterset_class = filters.StudyFilter
    ordering_fields = ["name", "created_at"]
    ordering = ["-created_at"]

    def get_queryset(self):
        return selectors.lead_studies_for(self.request.user).select_related(
            "workspace", "created_by"
        )


class StudyDetail(generics.RetrieveAPIView):
    serializer_class = serializers.StudySerializer
    lookup_field = "token"
    lookup_url_kwarg = "study"

    def get_queryset(self):
        return selectors.lead_studies_for(self.request.user).select_related(
            "workspace", "created_by"
        )


class _StudyChildList(LeadStudyMixin, generics.ListAPIView):
    pagination_class = SmallPagination


class SystemList(_StudyChildList):
    serializer_class = serializers.SystemSerializer
    ordering_fields = ["name", "id"]
    ordering = ["name"]

    def get_queryset(self):
        return System.objects.filter(study=self.study)


class PromptList(_StudyChildList):
    serializer_class = serializers.PromptSerializer
    pagination_class = IdCursorPagination
    filterset_class = filters.PromptFilter
    ordering_fields = ["id"]

    def get_queryset(self):
        return Prompt.objects.filter(study=self.study)


class OutputList(_StudyChildList):
    serializer_class = serializers.OutputSerializer
    pagination_class = IdCursorPagination
    filterset_class = filters.OutputFilter
    ordering_fields = ["id"]

    def get_queryset(self):
        return Output.objects.filter(prompt__study=self.study).select_related("prompt", "system")


class UnitList(_StudyChildList):
    serializer_class = serializers.UnitSerializer
    pagination_class = IdCursorPagination
    filterset_class = filters.UnitFilter
    ordering_fields = ["id"]

    def get_queryset(self):
        members = UnitOutput.objects.only("unit_id", "output_id", "position").order_by("position")
        return (
            Unit.objects.filter(study=self.study)
            .select_related("prompt")
            .prefetch_related(Prefetch("members", queryset=members))
        )


class GoldAnswerList(_StudyChildList):
    """Expert answers of the study's gold and attention units."""

    serializer_class = serializers.GoldAnswerSerializer
    pagination_class = IdCursorPagination
    ordering_fields = ["id"]

    def get_queryset(self):
        return GoldAnswer.objects.filter(unit__study=self.study).select_related(
            "unit", "guide_version", "author"
        )


class ComparisonList(_StudyChildList):
    serializer_class = serializers.ComparisonSerializer
    ordering_fields = ["position", "id"]
    ordering = ["position", "id"]

    def get_queryset(self):
        return Comparison.objects.filter(study=self.study).select_related("system_x", "system_y")


class GuideVersionList(_StudyChildList):
    serializer_class = serializers.GuideVersionSerializer
    ordering_fields = ["number"]
    ordering = ["-number"]

    def get_queryset(self):
        return GuideVersion.objects.filter(study=self.study).select_related("author")


class RulingList(_StudyChildList):
    serializer_class = serializers.RulingSerializer
    ordering_fields = ["id", "created_at"]
    ordering = ["id"]

    def get_queryset(self):
        return Ruling.objects.filter(study=self.study, guide_version__isnull=False).select_related(
            "guide_version"
        )


class EnrolmentList(_StudyChildList):
    serializer_class = serializers.EnrolmentSerializer
    filterset_class = filters.EnrolmentFilter
    ordering_fields = ["id", "created_at"]
    ordering = ["id"]

    def get_queryset(self):
        return Enrolment.objects.filter(study=self.study).select_related(
            "user", "calibrated_guide_version"
        )


class LabelList(_StudyChildList):
    """Raw labels, append-only, oldest first (`?ordering=-id` for newest first); filter by
    purpose, annotator, unit, guide version and time."""

    serializer_class = serializers.LabelSerializer
    pagination_class = IdCursorPagination
    filterset_class = filters.LabelFilter
    ordering_fields = ["id"]

    def get_queryset(self):
        return (
            Label.objects.filter(study=self.study)
            .select_related("assignment", "unit", "annotator", "winner", "guide_version")
            .prefetch_related("spa_answers", "output_ratings")
        )
