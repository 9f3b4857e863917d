"""Writing a study's design through the API: its comparisons (annotation.services.studies.
set_comparisons), guide versions with their rulings (annotation.services.guides.publish_version,
as the guide editor publishes), and gold answers under review (guides.resolve_flag, as the
flagged-gold page confirms or replaces them). New gold answers come in through the import
service (POST .../gold/, annotation.rest.imports).
"""

from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response

from annotation.models import Comparison, GoldAnswer
from annotation.rest import views
from annotation.rest.fields import (
    DescriptionOnly,
    StrictBooleanField,
    StrictCharField,
    WriteSerializer,
    id_or_404,
    service_error,
)
from annotation.rest.permissions import LeadStudyMixin
from annotation.rest.serializers import (
    ComparisonSerializer,
    GoldAnswerSerializer,
    GuideVersionSerializer,
)
from annotation.services import guides, studies
from annotation.services.training_items import TrainingError, resolve_items

MAX_COMPARISONS = 200
MAX_RULINGS = 50
ITEMS_HELP = "Items by prompt id, comma separated: p3 (every unit of prompt p3) or p3:alpha."


class ComparisonRowSerializer(WriteSerializer):
    system_x = StrictCharField(max_length=200, help_text="System name.")
    system_y = StrictCharField(max_length=200, help_text="System name.")
    expected = serializers.ChoiceField(
        choices=Comparison.Expected.choices, allow_blank=True, required=False, default=""
    )


class ComparisonsWriteSerializer(WriteSerializer):
    comparisons = ComparisonRowSerializer(many=True, max_length=MAX_COMPARISONS)


class ComparisonsSerializer(serializers.Serializer):
    comparisons = ComparisonSerializer(many=True)


class ComparisonList(views.ComparisonList):
    """The study's comparisons (systems X vs Y, in order); PUT replaces them (draft studies)."""

    metadata_class = DescriptionOnly

    @extend_schema(request=ComparisonsWriteSerializer, responses={200: ComparisonsSerializer})
    def put(self, request, study):
        incoming = ComparisonsWriteSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        rows = incoming.validated_data["comparisons"]
        triples = [(r["system_x"], r["system_y"], r.get("expected", "")) for r in rows]
        try:
            made = studies.set_comparisons(self.study, triples)
        except ValidationError as error:
            raise service_error(error) from None
        return Response(ComparisonsSerializer({"comparisons": made}).data)


class NewRulingSerializer(WriteSerializer):
    title = StrictCharField(max_length=200)
    text = StrictCharField(max_length=20000)
    example = StrictCharField(max_length=20000, allow_blank=True, required=False, default="")
    examples = StrictCharField(
        max_length=5000, allow_blank=True, required=False, default="", help_text=ITEMS_HELP
    )


class PublishSerializer(WriteSerializer):
    body = StrictCharField(max_length=200000, help_text="The whole guide, in Markdown.")
    changes = StrictCharField(max_length=20000, allow_blank=True, required=False, default="")
    rulings = NewRulingSerializer(many=True, required=False, max_length=MAX_RULINGS)
    requires_recalibration = StrictBooleanField(required=False, default=False)
    recalibration_items = StrictCharField(
        max_length=5000,
        allow_blank=True,
        required=False,
        default="",
        help_text=f"{ITEMS_HELP} Empty: drawn from the items the rulings cite.",
    )


class GuideVersionList(views.GuideVersionList):
    """The guide's versions, newest first; POST publishes the next version with its new rulings
    (and the study's draft rulings from calibration), as the guide editor does."""

    metadata_class = DescriptionOnly

    @extend_schema(request=PublishSerializer, responses={201: GuideVersionSerializer})
    def post(self, request, study):
        incoming = PublishSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        try:
            new = [
                guides.NewRuling(
                    r["title"],
                    r["text"],
                    example=r["example"],
                    examples=tuple(resolve_items(self.study, r["examples"], f"rulings[{i}]")),
                )
                for i, r in enumerate(data.get("rulings", []))
            ]
            picked = None
            if data["recalibration_items"].strip():
                picked = resolve_items(
                    self.study, data["recalibration_items"], "recalibration_items"
                )
            version = guides.publish_version(
                self.study,
                body=data["body"],
                changes=data["changes"],
                rulings=new,
                include_drafts=guides.draft_rulings(self.study),
                requires_recalibration=data["requires_recalibration"],
                recalibration_units=picked,
                author=request.user,
            )
        except TrainingError as error:
            raise service_error(error) from None
        return Response(GuideVersionSerializer(version).data, status=status.HTTP_201_CREATED)


class GoldReviewSerializer(WriteSerializer):
    answer = StrictCharField(
        max_length=200,
        allow_null=True,
        required=False,
        help_text="The new expert answer (a value the workbench offers: a label value, a "
        "Likert point, first/second/tie); null or absent confirms the current one.",
    )


class GoldAnswerDetail(LeadStudyMixin, generics.RetrieveAPIView):
    """One gold answer of the study; PATCH confirms it (no `answer`) or replaces its answer,
    under the current guide version, and clears a ruling's flag (the flagged-gold review)."""

    serializer_class = GoldAnswerSerializer
    lookup_url_kwarg = "gold"
    http_method_names = ["get", "patch", "head", "options"]

    def get_queryset(self):
        return GoldAnswer.objects.filter(unit__study=self.study).select_related(
            "unit", "guide_version", "author"
        )

    def get_object(self):
        return get_object_or_404(self.get_queryset(), pk=id_or_404(self.kwargs["gold"]))

    @extend_schema(request=GoldReviewSerializer, responses={200: GoldAnswerSerializer})
    def patch(self, request, study, gold):
        target = self.get_object()
        incoming = GoldReviewSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        try:
            updated = guides.resolve_flag(
                target, answer=incoming.validated_data.get("answer"), author=request.user
            )
        except TrainingError as error:
            raise service_error(error) from None
        return Response(GoldAnswerSerializer(updated).data)
