"""The annotator loop for custom front ends: your studies, next task, submit, abandon.

It calls the engine and the submission service the workbench calls, with the same gates (live
study, enrolment, qualification, recalibration, quota). Blinding as in `annotation.api`: a task
carries texts and letters only, and the response has the same keys whatever the unit's role.
"""

import uuid

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors
from annotation.api import SUBMIT_HTTP_STATUS, task_payload
from annotation.models import Assignment
from annotation.rest.pagination import SmallPagination
from annotation.rest.permissions import AnnotatorStudyMixin
from annotation.schemes import AnswerError
from annotation.services import assignment as engine
from annotation.services.submission import submit_label


class WorkStudySerializer(serializers.Serializer):
    token = serializers.CharField(read_only=True)
    name = serializers.CharField(read_only=True)
    task_kind = serializers.CharField(read_only=True)
    question = serializers.CharField(read_only=True)
    instructions = serializers.CharField(read_only=True)
    status = serializers.CharField(read_only=True)


class NextTaskSerializer(serializers.Serializer):
    token = serializers.CharField(allow_null=True, help_text="The presentation's opaque token.")
    position = serializers.IntegerField(allow_null=True)
    task = serializers.JSONField(
        allow_null=True,
        help_text="Texts and writer letters by unit kind (output, pair, spa_batch); see README.",
    )
    blocked = serializers.CharField(
        allow_blank=True,
        help_text="Why there is no task: done, quota, paused, closed, qualification, "
        "recalibration ('' when a task is given).",
    )


class WorkStateSerializer(serializers.Serializer):
    done = serializers.IntegerField()
    assigned = serializers.IntegerField(help_text="Estimate of your total (a lower bound).")
    blocked = serializers.CharField(allow_blank=True)


@extend_schema_field({"oneOf": [{"type": "string", "maxLength": 10000}, {"type": "number"}]})
class AnswerValueField(serializers.Field):
    """A form value: a string, or a number (sent on as its text, like a form field)."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, str | int | float):
            raise serializers.ValidationError("must be a string or a number")
        if isinstance(data, str) and len(data) > 10000:
            raise serializers.ValidationError("must be at most 10000 characters")
        return data if isinstance(data, str) else str(data)

    def to_representation(self, value):
        return value


class TimingsSerializer(serializers.Serializer):
    rendered_at = serializers.DateTimeField(required=False)
    duration_ms = serializers.IntegerField(required=False, min_value=0, max_value=2**31 - 1)
    active_ms = serializers.IntegerField(required=False, min_value=0, max_value=2**31 - 1)
    exposure = serializers.DictField(required=False, help_text="SPA: what was shown, how long.")


class SubmitSerializer(serializers.Serializer):
    idempotency_key = serializers.UUIDField(
        required=False,
        help_text="Made when the task was shown; or send it as the Idempotency-Key header.",
    )
    answer = serializers.DictField(
        child=AnswerValueField(),
        help_text="The fields of the task kind: choice or score; SPA p_<i> (and likert_<j>).",
    )
    timings = TimingsSerializer(required=False)


class SubmitResultSerializer(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=[
            "stored",
            "duplicate",
            "reassigned",
            "conflict",
            "paused",
            "closed",
            "not_found",
            "invalid",
        ]
    )
    message = serializers.CharField(allow_blank=True)
    field = serializers.CharField(required=False, help_text="The offending field (invalid).")


class AbandonResultSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["abandoned"])


IDEMPOTENCY_HEADER = OpenApiParameter(
    "Idempotency-Key",
    OpenApiTypes.UUID,
    OpenApiParameter.HEADER,
    required=False,
    description="Alternative to the body's idempotency_key.",
)


class WorkStudyList(generics.ListAPIView):
    """Studies you are enrolled in as an annotator."""

    serializer_class = WorkStudySerializer
    pagination_class = SmallPagination
    ordering_fields = ["name"]
    ordering = ["name"]

    def get_queryset(self):
        return selectors.annotator_studies_for(self.request.user)


class WorkProgress(AnnotatorStudyMixin, APIView):
    @extend_schema(responses=WorkStateSerializer)
    def get(self, request, study):
        state = engine.work_state(request.user, self.study)
        return Response(
            {"done": state.done, "assigned": state.assigned, "blocked": state.blocked_reason}
        )


class NextTask(AnnotatorStudyMixin, APIView):
    """Your open task in this study, else a new one (a lease), else why there is none.

    POST because it leases: repeating it returns the same open task until it is submitted,
    abandoned or expires."""

    @extend_schema(request=None, responses=NextTaskSerializer)
    def post(self, request, study):
        assignment = engine.next_assignment(request.user, self.study)
        if assignment is None:
            state = engine.work_state(request.user, self.study)
            body = {"token": None, "position": None, "task": None, "blocked": state.blocked_reason}
            return Response(body)
        return Response(
            {
                "token": assignment.token,
                "position": assignment.position,
                "task": task_payload(assignment),
                "blocked": "",
            }
        )


class SubmitTask(AnnotatorStudyMixin, APIView):
    """Store your answer to a task (once per idempotency key); 409 if it timed out and was
    handed to someone else, 404 if it is not yours. An answer outside the study's scheme is
    400 with {"status": "invalid", "field", "message"}."""

    @extend_schema(
        request=SubmitSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={200: SubmitResultSerializer, 409: SubmitResultSerializer},
    )
    def post(self, request, study, task):
        # Scope before the body: a study you are not in, or a task that is not yours, is 404
        # whatever was posted (a 400 would tell an outsider the route took them in).
        if not Assignment.objects.filter(
            token=task, annotator=request.user, study=self.study
        ).exists():
            return Response(
                {"status": "not_found", "message": "This task does not exist."},
                status=status.HTTP_404_NOT_FOUND,
            )
        incoming = SubmitSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        key = data.get("idempotency_key") or _uuid(request.headers.get("Idempotency-Key"))
        if key is None:
            return _invalid("idempotency_key", "send a UUID made when the task was shown")
        timings = dict(data["timings"]) if "timings" in data else None
        if timings and "rendered_at" in timings:
            timings["rendered_at"] = timings["rendered_at"].isoformat()
        try:
            result = submit_label(
                annotator=request.user,
                assignment_token=task,
                data=dict(data["answer"]),
                idempotency_key=key,
                timings=timings,
                study=self.study,
            )
        except AnswerError as err:
            return _invalid(err.field, err.message)
        return Response(
            {"status": result.status, "message": result.message},
            status=SUBMIT_HTTP_STATUS[result.status],
        )


class AbandonTask(AnnotatorStudyMixin, APIView):
    """Give an open task back (skip it): its slot returns to the pool. 404 if it is not your
    open task."""

    @extend_schema(request=None, responses={200: AbandonResultSerializer})
    def post(self, request, study, task):
        assignment = get_object_or_404(
            Assignment.objects.only("id", "unit_id", "purpose", "status"),
            token=task,
            annotator=request.user,
            study=self.study,
            status=Assignment.Status.LEASED,
        )
        engine.abandon(assignment)
        if assignment.status != Assignment.Status.ABANDONED:
            return Response({"detail": "Not found."}, status=status.HTTP_404_NOT_FOUND)
        return Response({"status": "abandoned"})


def _uuid(raw):
    try:
        return uuid.UUID(str(raw)) if raw else None
    except ValueError:
        return None


def _invalid(field: str, message: str) -> Response:
    return Response(
        {"status": "invalid", "field": field, "message": message},
        status=status.HTTP_400_BAD_REQUEST,
    )
