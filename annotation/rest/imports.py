"""Content in bulk through the streaming import service (annotation.imports.services), the one
behind the upload page: all or nothing, every bad row reported with its line, field and reason.

- POST a JSON body {"rows": [...]} to .../systems/, .../prompts/, .../outputs/ or .../gold/:
  imported in the request (small batches, up to MAX_JSON_ROWS rows); 201 with the finished
  import job, or 400 with the job's errors and nothing written. Row n is line n of the errors.
- POST a file (multipart: kind, file) to .../imports/: stored and imported by a worker; 202
  with the job, to poll at .../imports/<job>/ (status, progress, errors).
"""

import io
import json
from functools import cache

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from annotation.imports import services as imports
from annotation.models import ImportJob
from annotation.rest import views
from annotation.rest.fields import DescriptionOnly, JsonObjectField, WriteSerializer
from annotation.rest.pagination import SmallPagination
from annotation.rest.permissions import LeadStudyMixin
from annotation.studio.imports import KIND_HELP

# A JSON body is read in the request; more rows than this belong in a file upload.
MAX_JSON_ROWS = 10_000


class ImportErrorSerializer(serializers.Serializer):
    line = serializers.IntegerField(
        help_text="The file's line (CSV: the header is line 1); for a JSON body, the row's "
        "position in `rows`, from 1."
    )
    field = serializers.CharField()
    reason = serializers.CharField()


class ImportJobSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    percent = serializers.IntegerField(read_only=True, help_text="Rough progress, 0-100.")
    finished = serializers.BooleanField(read_only=True)
    stalled = serializers.BooleanField(
        read_only=True, help_text="Unfinished and untouched for five minutes."
    )
    errors = ImportErrorSerializer(many=True, read_only=True)

    class Meta:
        model = ImportJob
        fields = [
            "token",
            "kind",
            "format",
            "status",
            "file_name",
            "file_size",
            "bytes_read",
            "rows_read",
            "percent",
            "finished",
            "stalled",
            "created",
            "unchanged",
            "error_count",
            "errors",
            "message",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class FailedImportSerializer(ImportJobSerializer):
    detail = serializers.CharField(source="message", read_only=True)

    class Meta(ImportJobSerializer.Meta):
        fields = ["detail", *ImportJobSerializer.Meta.fields]
        read_only_fields = fields


@cache
def rows_serializer(kind: str) -> type[WriteSerializer]:
    """The body of a JSON import of `kind`: its rows, each an object of the file's columns."""
    return type(
        f"{kind.title()}RowsSerializer",
        (WriteSerializer,),
        {
            "rows": serializers.ListField(
                child=JsonObjectField(),
                min_length=1,
                max_length=MAX_JSON_ROWS,
                help_text=f"Objects with the columns {KIND_HELP[kind]}; all or nothing.",
            ),
            "__module__": __name__,
        },
    )


def import_rows(study, kind: str, rows: list[dict], user) -> Response:
    """Import `rows` as a JSON Lines file in this request (the service's own checks throughout)."""
    body = "".join(json.dumps(row, ensure_ascii=True) + "\n" for row in rows).encode()
    job = imports.import_file(
        study, kind, io.BytesIO(body), file_name=f"api-{kind}.jsonl", fmt="jsonl", user=user
    )
    if job.status == ImportJob.Status.DONE:
        return Response(ImportJobSerializer(job).data, status=status.HTTP_201_CREATED)
    return Response(FailedImportSerializer(job).data, status=status.HTTP_400_BAD_REQUEST)


class JsonImportMixin:
    """POST {"rows": [...]} imports rows of `import_kind` (see the module docstring)."""

    import_kind: str

    def post(self, request, study):
        incoming = rows_serializer(self.import_kind)(data=request.data)
        incoming.is_valid(raise_exception=True)
        return import_rows(
            self.study, self.import_kind, incoming.validated_data["rows"], request.user
        )


def _bulk(view: type, kind: str, what: str) -> type:
    """`view` (a read list) that also takes a POST of rows of `kind`, documented as such."""

    def post(self, request, study):
        return JsonImportMixin.post(self, request, study)

    post = extend_schema(
        request=rows_serializer(kind),
        responses={201: ImportJobSerializer},
        description=f"Add {what} from JSON rows through the import service, all or nothing: "
        f"201 with the finished import job, or 400 with the failed job (`detail`, `errors`: "
        f"every bad row's line, field and reason) and nothing written. "
        f"Rows equal to existing ones count as unchanged. Larger files: POST .../imports/.",
    )(post)
    return type(
        view.__name__,
        (JsonImportMixin, view),
        {
            "import_kind": kind,
            "post": post,
            "metadata_class": DescriptionOnly,
            "__module__": __name__,
            "__doc__": view.__doc__,
        },
    )


SystemList = _bulk(views.SystemList, "systems", "systems")
PromptList = _bulk(views.PromptList, "prompts", "prompts")
OutputList = _bulk(views.OutputList, "outputs", "outputs (of known prompts and systems)")
GoldAnswerList = _bulk(
    views.GoldAnswerList, "gold", "gold and attention answers (turning built units into gold)"
)


class UploadSerializer(WriteSerializer):
    kind = serializers.ChoiceField(choices=ImportJob.Kind.choices)
    file = serializers.FileField(help_text="CSV (header first) or JSON Lines, UTF-8.")

    def validate(self, data):
        try:
            data["format"] = imports.guess_format(data["file"].name)
        except ValueError as error:
            raise serializers.ValidationError({"file": [str(error)]}) from None
        return data


class ImportJobList(LeadStudyMixin, generics.ListAPIView):
    """The study's import jobs, newest first; POST a file (multipart `kind` and `file`) to import
    it in a worker: 202 with the job to poll."""

    serializer_class = ImportJobSerializer
    pagination_class = SmallPagination
    parser_classes = [MultiPartParser]
    metadata_class = DescriptionOnly
    ordering_fields = ["created_at", "id"]
    ordering = ["-created_at", "-id"]

    def get_queryset(self):
        return ImportJob.objects.filter(study=self.study).select_related("created_by")

    @extend_schema(
        request={"multipart/form-data": UploadSerializer}, responses={202: ImportJobSerializer}
    )
    def post(self, request, study):
        incoming = UploadSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        job = imports.start_import(
            self.study,
            data["kind"],
            data["format"],
            data["file"],
            data["file"].name,
            user=request.user,
        )
        return Response(ImportJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class ImportJobDetail(LeadStudyMixin, generics.RetrieveAPIView):
    """One import job of the study: status, progress, and (when it failed) every bad row."""

    serializer_class = ImportJobSerializer
    lookup_field = "token"
    lookup_url_kwarg = "job"

    def get_queryset(self):
        return ImportJob.objects.filter(study=self.study).select_related("created_by")
