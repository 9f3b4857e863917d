"""Downloads through the API, as the export page serves them: every raw label streamed (CSV with
formula-like cells escaped, or JSON Lines; memory stays flat), and the study file."""

from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.utils.text import slugify
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.views import APIView

from annotation.exports import study_file as files
from annotation.exports.labels import label_text
from annotation.rest.permissions import LeadStudyMixin

FORMATS = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8"}


def _attachment(response, study, suffix: str):
    response["Content-Disposition"] = (
        f'attachment; filename="{slugify(study.name) or "study"}-{suffix}"'
    )
    response["X-Content-Type-Options"] = "nosniff"
    return response


class LabelExport(LeadStudyMixin, APIView):
    """Every raw label of the study with its context, one row per label (per question for SPA),
    streamed: `csv` or `jsonl`. Columns: the export page's (label_id, annotator, pool, purpose,
    unit, ..., duration_ms, active_ms)."""

    @extend_schema(
        responses={
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="CSV, header first."),
            (200, "application/x-ndjson"): OpenApiResponse(
                OpenApiTypes.STR, description="One JSON object per line."
            ),
        }
    )
    def get(self, request, study, fmt):
        if fmt not in FORMATS:
            raise Http404("No such format: csv or jsonl.")
        response = StreamingHttpResponse(label_text(self.study, fmt), content_type=FORMATS[fmt])
        return _attachment(response, self.study, f"labels.{fmt}")


class StudyFile(LeadStudyMixin, APIView):
    """The study file (settings, scheme, comparisons, guide): what the export page downloads and
    the study-file import reads."""

    @extend_schema(responses={(200, "application/json"): OpenApiTypes.OBJECT})
    def get(self, request, study):
        response = HttpResponse(files.dumps(self.study), content_type="application/json")
        return _attachment(response, self.study, "study.json")
