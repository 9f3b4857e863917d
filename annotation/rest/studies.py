"""Writing studies through the API: create, change settings under the live-edit rules, and move
the status (going live runs the launch checklist). All of it is annotation.services.studies, the
same service as the study builder: a locked setting or a failed checklist item is a 400 that
names the field or item and says why.
"""

from dataclasses import asdict

from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors
from annotation.models import Enrolment, Study
from annotation.rest import views
from annotation.rest.fields import (
    INT_MAX,
    DescriptionOnly,
    JsonObjectField,
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    WriteSerializer,
    service_error,
)
from annotation.rest.permissions import LeadStudyMixin
from annotation.rest.serializers import StudySerializer
from annotation.services import studies

SMALL_MAX = 32767


class StudySettingsSerializer(WriteSerializer):
    """The settings a lead may write (annotation.services.studies.EDITABLE_FIELDS), typed; the
    service checks them (the label scheme by the builder's validators) and the lock rules."""

    name = StrictCharField(max_length=200)
    task_kind = serializers.ChoiceField(choices=Study.TaskKind.choices)
    label_scheme = JsonObjectField(
        help_text="The task kind's scheme (see the README); checked as the study builder does."
    )
    question = StrictCharField(allow_blank=True, max_length=10000)
    instructions = StrictCharField(allow_blank=True, max_length=100000)
    overlap = StrictIntegerField(min_value=0, max_value=SMALL_MAX)
    gold_rate = StrictFloatField()
    repeat_rate = StrictFloatField()
    repeat_min_gap_units = StrictIntegerField(min_value=0, max_value=INT_MAX)
    repeat_min_gap_minutes = StrictIntegerField(min_value=0, max_value=INT_MAX)
    attention_rate = StrictFloatField()
    lease_seconds = StrictIntegerField(min_value=0, max_value=INT_MAX)
    quota_per_annotator = StrictIntegerField(min_value=0, max_value=INT_MAX, allow_null=True)
    requires_qualification = StrictBooleanField()
    qualification_pass_score = StrictFloatField()
    spa_exposure_m = StrictIntegerField(min_value=0, max_value=SMALL_MAX)
    spa_fixed_sample = StrictBooleanField()
    spa_both_directions = StrictBooleanField()
    spa_tau = StrictFloatField(allow_null=True)
    spa_collect_likert = StrictBooleanField()
    allowed_pools = serializers.ListField(
        child=serializers.ChoiceField(choices=Enrolment.Pool.choices), max_length=10
    )
    crowd_platform = serializers.ChoiceField(choices=Study.CrowdPlatform.choices, allow_blank=True)
    crowd_completion_code = StrictCharField(allow_blank=True, max_length=64)
    crowd_completion_url = StrictCharField(allow_blank=True, max_length=200)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.required = False


class StudyCreateSerializer(StudySettingsSerializer):
    workspace = StrictCharField(max_length=50, help_text="Slug of a workspace you lead.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in ("workspace", "name", "task_kind"):
            self.fields[name].required = True


class StudyList(views.StudyList):
    """Studies you lead (staff: all); POST creates a draft study in a workspace you lead."""

    metadata_class = DescriptionOnly

    @extend_schema(request=StudyCreateSerializer, responses={201: StudySerializer})
    def post(self, request):
        incoming = StudyCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = dict(incoming.validated_data)
        slug = data.pop("workspace")
        workspace = selectors.lead_workspaces_for(request.user).filter(slug=slug).first()
        if workspace is None:  # the same answer for a foreign workspace and a missing one
            raise serializers.ValidationError({"workspace": [f"you lead no workspace {slug!r}"]})
        try:
            study = studies.create_study(workspace=workspace, created_by=request.user, **data)
        except ValidationError as error:
            raise service_error(error) from None
        return Response(StudySerializer(study).data, status=status.HTTP_201_CREATED)


class StudyDetail(views.StudyDetail):
    """One study you lead; PATCH changes settings within the live-edit rules (a locked setting
    answers 400 naming it and why; sending its current value is allowed)."""

    http_method_names = ["get", "patch", "head", "options"]

    @extend_schema(request=StudySettingsSerializer, responses={200: StudySerializer})
    def patch(self, request, study):
        target = self.get_object()
        incoming = StudySettingsSerializer(data=request.data, partial=True)
        incoming.is_valid(raise_exception=True)
        try:
            updated = studies.update_study(target, **incoming.validated_data)
        except ValidationError as error:
            raise service_error(error) from None
        return Response(StudySerializer(updated).data)


class ChecklistItemSerializer(serializers.Serializer):
    key = serializers.CharField()
    ok = serializers.BooleanField()
    title = serializers.CharField()
    detail = serializers.CharField()


class StudyStatusSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=Study.Status.choices)
    moves = serializers.ListField(
        child=serializers.CharField(), help_text="Statuses the study may move to now."
    )
    locked = serializers.DictField(
        child=serializers.CharField(), help_text="Settings that cannot change now, and why."
    )
    checklist = ChecklistItemSerializer(many=True, help_text="What going live needs.")


class StatusChangeSerializer(WriteSerializer):
    status = serializers.ChoiceField(choices=Study.Status.choices)


def _status(study: Study) -> dict:
    moves = [
        s
        for s in Study.Status.values
        if s in studies.TRANSITIONS[study.status]
        and (s != Study.Status.QUALIFYING or study.requires_qualification)
    ]
    return {
        "status": study.status,
        "moves": moves,
        "locked": studies.locked_fields(study),
        "checklist": [asdict(item) for item in studies.launch_checklist(study)],
    }


class StudyStatus(LeadStudyMixin, APIView):
    """The study's status, the moves it allows, its locked settings and the launch checklist;
    POST {"status": ...} moves it. Going live runs the checklist: a failure is a 400 with
    `status` (one message per failed item) and `checklist` (the failed items, each explained)."""

    @extend_schema(responses=StudyStatusSerializer)
    def get(self, request, study):
        return Response(_status(self.study))

    @extend_schema(request=StatusChangeSerializer, responses=StudyStatusSerializer)
    def post(self, request, study):
        incoming = StatusChangeSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        try:
            moved = studies.set_status(self.study, incoming.validated_data["status"])
        except studies.LaunchRefused as refused:
            body = {
                "status": [f"{i.title}: {i.detail}" for i in refused.items],
                "checklist": [asdict(i) for i in refused.items],
            }
            return Response(body, status=status.HTTP_400_BAD_REQUEST)
        except ValidationError as error:
            raise service_error(error) from None
        return Response(_status(moved))
