"""Reports and aggregated labels of a study you lead; the parent study is found through
`annotation.selectors.lead_studies_for` (404 when out of reach)."""

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.rest.pagination import StrictLimitOffsetPagination
from annotation.rest.permissions import LeadStudyMixin
from qc import exports, selectors, services


class RecomputeStateSerializer(serializers.Serializer):
    pending_since = serializers.DateTimeField(allow_null=True)
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    running = serializers.BooleanField()
    stage = serializers.CharField(allow_blank=True)
    progress = serializers.IntegerField()
    last_error = serializers.CharField(allow_blank=True)


class ReportSerializer(serializers.Serializer):
    study = serializers.CharField()
    report = serializers.JSONField(allow_null=True, help_text="The stored summary (null: none).")
    fingerprint = serializers.CharField(allow_null=True)
    label_count = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField(allow_null=True)
    compute_seconds = serializers.FloatField(allow_null=True)
    recompute = RecomputeStateSerializer(allow_null=True)


class RecomputeQueuedSerializer(serializers.Serializer):
    queued = serializers.BooleanField(help_text="False when one is already pending.")


class TableListSerializer(serializers.Serializer):
    tables = serializers.ListField(child=serializers.CharField())


class TableSerializer(serializers.Serializer):
    table = serializers.CharField()
    fingerprint = serializers.CharField()
    columns = serializers.ListField(child=serializers.CharField())
    rows = serializers.ListField(child=serializers.ListField(child=serializers.JSONField()))


class AggregatedLabelSerializer(serializers.Serializer):
    unit = serializers.CharField(help_text="Unit token.")
    labels = serializers.IntegerField(help_text="Labels that entered aggregation.")
    majority = serializers.JSONField(help_text="Majority-vote label (raw value).")
    majority_tied = serializers.BooleanField()
    dawid_skene = serializers.JSONField(help_text="Dawid-Skene label (raw value).")
    dawid_skene_posterior = serializers.FloatField(allow_null=True)
    soft = serializers.DictField(
        child=serializers.FloatField(), help_text="Share of labels per class."
    )


def _state(study) -> dict | None:
    state = selectors.recompute_state(study)
    if state is None:
        return None
    return {
        "pending_since": state.pending_since,
        "started_at": state.started_at,
        "finished_at": state.finished_at,
        "running": state.running,
        "stage": state.stage,
        "progress": state.progress,
        "last_error": state.last_error,
    }


class Report(LeadStudyMixin, APIView):
    """The latest stored quality report (null until a worker has computed one) and where the
    next recomputation stands; poll this after labels arrive."""

    @extend_schema(responses=ReportSerializer)
    def get(self, request, study):
        report = selectors.latest_report(self.study)
        body = {
            "study": self.study.token,
            "report": report.payload if report else None,
            "fingerprint": report.fingerprint if report else None,
            "label_count": report.label_count if report else None,
            "created_at": report.created_at if report else None,
            "compute_seconds": report.compute_seconds if report else None,
            "recompute": _state(self.study),
        }
        return Response(ReportSerializer(body).data)


class Recompute(LeadStudyMixin, APIView):
    """Ask a worker to recompute the report now (debounced: one pending at a time)."""

    @extend_schema(request=None, responses={202: RecomputeQueuedSerializer})
    def post(self, request, study):
        queued = services.request_recompute(self.study, request.user)
        return Response({"queued": bool(queued)}, status=status.HTTP_202_ACCEPTED)


class TableList(LeadStudyMixin, APIView):
    """The names of the report's tables (the dashboard's CSV downloads, here as JSON)."""

    @extend_schema(responses=TableListSerializer, operation_id="studies_report_tables_list")
    def get(self, request, study):
        return Response({"tables": list(exports.TABLES)})


class Table(LeadStudyMixin, APIView):
    """One table of the latest report as columns and rows (e.g. `spa-unfiltered`, the SPA
    table). 404 while there is no report."""

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "table", OpenApiTypes.STR, OpenApiParameter.PATH, enum=list(exports.TABLES)
            )
        ],
        responses=TableSerializer,
    )
    def get(self, request, study, table):
        if table not in exports.TABLES:
            raise Http404("No such table.")
        report = selectors.latest_report(self.study)
        if report is None:
            raise Http404("No report yet.")
        items = adjudications = None
        if exports.needs_items(table):
            found = selectors.latest_items(self.study, report.fingerprint)
            items = found.payload if found else {}
            adjudications = selectors.adjudications_by_unit(self.study)
        rows = exports.rows(table, report.payload, items, adjudications)
        columns = next(rows)
        return Response(
            {
                "table": table,
                "fingerprint": report.fingerprint,
                "columns": [str(c) for c in columns],
                "rows": [[None if cell == "" else cell for cell in row] for row in rows],
            }
        )


class _ItemRows:
    """The items payload's columns read as rows, lazily (a page reads only its slice)."""

    def __init__(self, items: dict):
        self.items = items
        self.units = items.get("unit", [])
        self.classes = items.get("classes", [])

    def __len__(self) -> int:
        return len(self.units)

    def __getitem__(self, window: slice) -> list[dict]:
        items = self.items
        return [
            {
                "unit": self.units[i],
                "labels": items["labels"][i],
                "majority": items["majority"][i],
                "majority_tied": items["majority_tied"][i],
                "dawid_skene": items["dawid_skene"][i],
                "dawid_skene_posterior": items["dawid_skene_posterior"][i],
                "soft": dict(zip(self.classes, items["soft"][i], strict=False)),
            }
            for i in range(len(self))[window]
        ]


class AggregatedLabels(LeadStudyMixin, generics.ListAPIView):
    """Per unit: majority vote, Dawid-Skene label and posterior, soft labels, from the latest
    report (empty until one is computed)."""

    serializer_class = AggregatedLabelSerializer
    pagination_class = StrictLimitOffsetPagination
    filter_backends = []

    def get_queryset(self):
        report = selectors.latest_report(self.study)
        found = selectors.latest_items(self.study, report.fingerprint) if report else None
        return _ItemRows(found.payload if found else {})
