"""A lean JSON pair for the work loop: the next task, and the answer to it.

    GET  /api/work/<study token>/next
         -> 200 {"token", "position", "task", "blocked"}; token/position/task are null and
            "blocked" names the reason ("done", "quota", ...) when there is nothing to do
    POST /api/work/<study token>/submit/<assignment token>
         JSON object or form body with the fields of annotation.schemes, an `Idempotency-Key`
         header (a UUID made when the task was rendered; or an "idempotency_key" field), and
         optionally "timings": {"rendered_at", "duration_ms", "active_ms", "exposure"}
         -> 200 stored or duplicate, 409 reassigned, 404 not found, 400 invalid (with "field")

Blinding: the task carries texts (and SPA writer letters) only; every response has the same keys
whatever the unit's role, and the only identifier is the presentation's random token.
Authentication is the Django session; without one the answer is 401 JSON, never a login page.
CSRF stays enforced on the POST (session cookies ride along on cross-site requests): clients
send the `csrftoken` cookie's value in an `X-CSRFToken` header, as the workbench's htmx does.
The hot path avoids serializers and model instances beyond the engine's own.
"""

import json

from django.db import connection
from django.http import Http404, JsonResponse
from django.views.decorators.http import require_GET, require_POST

from annotation.models import Study
from annotation.presentation import output_ids, task_view
from annotation.schemes import AnswerError
from annotation.services import assignment as engine
from annotation.services.submission import submit_label

SUBMIT_HTTP_STATUS = {"stored": 200, "duplicate": 200, "reassigned": 409, "not_found": 404}


_STUDY_SQL = (
    "SELECT s.* FROM annotation_study s JOIN annotation_enrolment e ON e.study_id = s.id"
    " WHERE s.token = %s AND e.user_id = %s"
)


def annotator_study_or_404(user, token: str) -> Study:
    """The rule of selectors.annotator_study_or_404 (studies the user is enrolled in), as one
    raw statement: on the hot path the ORM's query compilation costs more than the query."""
    found = list(Study.objects.raw(_STUDY_SQL, [token, user.id]))
    if not found:
        raise Http404("No such study.")
    return found[0]


def _unauthenticated() -> JsonResponse:
    return JsonResponse({"error": "authentication required"}, status=401)


def task_texts(presentation: dict) -> dict[int, tuple[int, str, str, int]]:
    """Output id -> (prompt id, prompt text, output text, system id), in one query."""
    ids = output_ids(presentation)
    marks = ", ".join(["%s"] * len(ids))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT o.id, o.prompt_id, p.text, o.text, o.system_id FROM annotation_output o"
            f" JOIN annotation_prompt p ON p.id = o.prompt_id WHERE o.id IN ({marks})",
            ids,
        )
        return {row[0]: row[1:] for row in cursor.fetchall()}


def task_payload(assignment) -> dict:
    return task_view(assignment.presentation, task_texts(assignment.presentation))


@require_GET
def next_task(request, token: str):
    if not request.user.is_authenticated:
        return _unauthenticated()
    study = annotator_study_or_404(request.user, token)
    assignment = engine.next_assignment(request.user, study)
    if assignment is None:
        state = engine.work_state(request.user, study)
        return JsonResponse(
            {"token": None, "position": None, "task": None, "blocked": state.blocked_reason}
        )
    return JsonResponse(
        {
            "token": assignment.token,
            "position": assignment.position,
            "task": task_payload(assignment),
            "blocked": "",
        }
    )


def _body(request) -> tuple[dict, dict | None]:
    """The posted fields as strings (what annotation.schemes expects), and the timings."""
    if request.content_type == "application/json":
        try:
            raw = json.loads(request.body or b"{}")
        except ValueError:
            raise AnswerError("body", "is not valid JSON") from None
        if not isinstance(raw, dict):
            raise AnswerError("body", "must be a JSON object")
        timings = raw.pop("timings", None)
        data = {k: v if isinstance(v, str) else json.dumps(v) for k, v in raw.items()}
        return data, timings if isinstance(timings, dict) else None
    data = {k: request.POST.get(k) for k in request.POST}
    return data, None


@require_POST
def submit(request, token: str, assignment_token: str):
    if not request.user.is_authenticated:
        return _unauthenticated()
    study = annotator_study_or_404(request.user, token)
    try:
        data, timings = _body(request)
        key = request.headers.get("Idempotency-Key") or data.pop("idempotency_key", None)
        result = submit_label(
            annotator=request.user,
            assignment_token=assignment_token,
            data=data,
            idempotency_key=key,
            timings=timings,
            study=study,
        )
    except AnswerError as err:
        return JsonResponse(
            {"status": "invalid", "field": err.field, "message": err.message}, status=400
        )
    return JsonResponse(
        {"status": result.status, "message": result.message},
        status=SUBMIT_HTTP_STATUS[result.status],
    )
