"""The annotator workbench: instructions, the task page, htmx submissions and the guide panel.

Views are scoped by `selectors.annotator_study_or_404`; a task renders only texts, letters and the
assignment's opaque token, with the same markup for gold, repeat, attention and production work.
"""

import json
import uuid
from datetime import datetime, timedelta

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core import signing
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from annotation import selectors
from annotation.models import Assignment, Enrolment, Output, Prompt, Study
from annotation.models.study import fill_writers, has_writer_placeholders
from annotation.schemes import AnswerError
from annotation.services import calibration, guides
from annotation.services.assignment import next_assignment, work_state
from annotation.services.submission import submit_label

# Keys the page itself uses; a label asking for one of them falls back to its number.
RESERVED_KEYS = {"g"}
MAX_MS = 7 * 24 * 3600 * 1000
RENDERED_SALT = "concord.workbench.rendered"

# What the annotator reads after a submission, per SubmitResult.status.
NOTICES = {
    "stored": "Saved.",
    "duplicate": "Already submitted: your earlier answer was kept. Here is your next task.",
    "reassigned": "That task had timed out and was handed to someone else, so it was not saved. "
    "Here is your next task.",
    "not_found": "That task is no longer available. Here is your next task.",
}
BLOCKED = {
    "paused": ("The study is paused", "Please come back later; your progress is kept."),
    "quota": ("You have reached your quota", "Thank you! There is nothing more for you here."),
    "qualification": (
        "Qualification needed",
        "You need to pass this study's qualification test before you can annotate.",
    ),
    "recalibration": (
        "The guide has changed",
        "A new version of the guide needs a short recalibration before you continue.",
    ),
    "pool": (
        "Not open to your group",
        "This study takes annotators from other pools. Thank you for your interest.",
    ),
    "closed": ("The study is closed", "Thank you for taking part."),
    "done": ("All done", "Thank you! You have completed every task available to you."),
}
CROWD_FINISHED = {"done", "quota", "closed"}
# The step that lifts a gate (annotation.training): (url name, button text).
GATE_ACTIONS = {
    "qualification": ("qualification-start", "Take the qualification test"),
    "recalibration": ("recalibration-start", "Recalibrate"),
}


def _login_required(view):
    """Like `login_required`, but a POST is sent back to the task page after signing in."""

    def wrapped(request, token, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(reverse("work-task", args=[token]))
        return view(request, token, *args, **kwargs)

    wrapped.__name__ = view.__name__
    wrapped.__doc__ = view.__doc__
    return wrapped


@require_GET
@_login_required
@never_cache
def start(request, token: str):
    """Instructions before the first task; once work has begun, straight to the task."""
    study = selectors.annotator_study_or_404(request.user, token)
    state = work_state(request.user, study)
    if state.done and "instructions" not in request.GET:
        return redirect("work-task", token=study.token)
    context = {
        "study": study,
        "state": state,
        "gate_action": gate_action(study, state.blocked_reason),
        "sessions": calibration.sessions_for_rater(study, request.user),
        **_guide(study),
    }
    return render(request, "annotation/work_start.html", context)


@require_GET
@_login_required
@never_cache
def task(request, token: str):
    """The current task (resumed) or the next one, as a full page."""
    study = selectors.annotator_study_or_404(request.user, token)
    assignment = next_assignment(request.user, study)
    state = work_state(request.user, study)
    context = _work_context(request, study, assignment, state)
    if "redirect" in context:
        return redirect(context["redirect"])
    return render(request, "annotation/work_task.html", context)


@require_POST
@_login_required
@never_cache
def submit(request, token: str):
    """Store one answer (once per idempotency key) and answer with the next task."""
    study = selectors.annotator_study_or_404(request.user, token)
    assignment_token = request.POST.get("_assignment", "")
    key = _uuid_or_none(request.POST.get("_key"))
    if not assignment_token or key is None:
        return HttpResponse(
            "This form is incomplete. Reload the page to continue.",
            status=400,
            content_type="text/plain",
        )
    assignment = (
        Assignment.objects.filter(token=assignment_token, annotator=request.user, study=study)
        .only("id", "token", "presentation")
        .first()
    )
    presentation = assignment.presentation if assignment else {}
    try:
        result = submit_label(
            annotator=request.user,
            assignment_token=assignment_token,
            data=answer_fields(request.POST),
            idempotency_key=key,
            timings=_timings(request.POST, presentation),
        )
    except AnswerError as error:
        return _refused(request, study, assignment, key, error)

    notice = NOTICES.get(result.status, "") or result.message
    if not request.htmx:
        if notice:
            messages.info(request, notice)
        return redirect("work-task", token=study.token)
    following = next_assignment(request.user, study)
    state = work_state(request.user, study)
    context = _work_context(request, study, following, state)
    if "redirect" in context:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = context["redirect"]
        return response
    context["notice"] = notice
    return render(request, "annotation/partials/swap.html", context)


@require_GET
@_login_required
def guide(request, token: str):
    """The current guide: the side panel's content (htmx, fetched on each opening, so it is
    never stale), or a page of its own without JavaScript."""
    study = selectors.annotator_study_or_404(request.user, token)
    context = {"study": study, "panel": bool(request.htmx), **_guide(study)}
    if request.htmx:
        return render(request, "annotation/partials/guide.html", context)
    return render(request, "annotation/work_guide.html", context)


# --- rendering -------------------------------------------------------------------------------


def _work_context(request, study: Study, assignment: Assignment | None, state) -> dict:
    context = {"study": study, "progress": _progress(state)}
    if assignment is not None:
        context["task"] = task_context(study, assignment)
        return context
    reason = state.blocked_reason or "done"
    title, text = BLOCKED.get(reason, BLOCKED["done"])
    context["finished"] = {
        "reason": reason,
        "title": title,
        "text": text,
        "action": gate_action(study, reason),
    }
    if reason in CROWD_FINISHED and _is_crowd(request.user, study):
        if study.crowd_completion_url:
            return {"redirect": study.crowd_completion_url}
        context["finished"]["completion_code"] = study.crowd_completion_code
    return context


def _progress(state) -> dict:
    done, assigned = int(state.done), int(state.assigned)
    return {"done": done, "assigned": assigned, "max": max(done, assigned, 1)}


def _is_crowd(user, study: Study) -> bool:
    return (
        Enrolment.objects.filter(study=study, user=user, pool=Enrolment.Pool.OPEN_CROWD)
        .exclude(external_id="")
        .exists()
    )


def gate_action(study: Study, reason: str) -> dict | None:
    """The link that lifts a gate ({"url", "text"}), or None."""
    if reason not in GATE_ACTIONS:
        return None
    name, text = GATE_ACTIONS[reason]
    return {"url": reverse(name, args=[study.token]), "text": text}


def _guide(study: Study) -> dict:
    version = guides.current_version(study)
    return {
        "guide": version,
        "guide_html": guides.render_markdown(version.body) if version else "",
        "rulings": guides.rulings_in_force(study, version),
    }


def task_context(
    study: Study,
    assignment: Assignment,
    *,
    key: uuid.UUID | None = None,
    rendered: str = "",
    values: dict | None = None,
    errors: dict | None = None,
) -> dict:
    """What the task partial needs: texts, letters, controls, and the hidden submission fields.

    Nothing here depends on the assignment's purpose or the unit's role (blinding).
    """
    values = values or {}
    errors = errors or {}
    kind = study.task_kind
    presentation = assignment.presentation or {}
    ctx = {
        "kind": kind,
        "token": assignment.token,
        "key": key or uuid.uuid4(),
        "rendered": rendered or _sign_rendered(timezone.now()),
        "values": values,
        "errors": errors,
        "question": study.question,
        "template": f"annotation/partials/task_{_TEMPLATES[kind]}.html",
    }
    scheme = study.label_scheme or {}
    if kind == Study.TaskKind.SPA:
        ctx.update(_spa_content(study, presentation, values, errors))
        return ctx
    if presentation.get("kind") == "pair":
        ctx.update(_pair_content(presentation, scheme, values))
        return ctx
    output = (
        Output.objects.select_related("prompt")
        .only("text", "prompt__text")
        .get(pk=presentation["output"])
    )
    ctx["prompt"] = output.prompt.text
    ctx["output"] = output.text
    if kind == Study.TaskKind.LIKERT:
        ctx["options"] = _options(_likert_points(scheme.get("points", [])), values.get("score"))
    elif kind == Study.TaskKind.CONTINUOUS:
        ctx["scale"] = {
            "min_text": scheme.get("min_text", ""),
            "max_text": scheme.get("max_text", ""),
            "best_reference": scheme.get("best_reference", ""),
            "worst_reference": scheme.get("worst_reference", ""),
        }
    else:
        ctx["options"] = _options(_choice_labels(scheme.get("labels", [])), values.get("choice"))
    return ctx


_TEMPLATES = {
    Study.TaskKind.LIKERT: "likert",
    Study.TaskKind.CONTINUOUS: "continuous",
    Study.TaskKind.CATEGORICAL: "choice",
    Study.TaskKind.ORDINAL: "choice",
    Study.TaskKind.PAIRWISE: "pair",
    Study.TaskKind.SPA: "spa",
}


def _fmt(value) -> str:
    """A scale value as posted: 3.0 -> "3", 2.5 -> "2.5"."""
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)


def _likert_points(points: list[dict]) -> list[dict]:
    out = []
    for i, point in enumerate(points):
        value, text = _fmt(point["value"]), str(point.get("text", ""))
        # A point labelled only by its number shows the number once.
        keys = [str(i + 1)] if i < 9 else []
        out.append({"value": value, "text": "" if text == value else text, "keys": keys})
    return out


def _choice_labels(labels: list[dict]) -> list[dict]:
    """Each label with its keyboard key: the scheme's own if usable, else its number."""
    wanted = [str(label.get("key", "")).lower() for label in labels]
    used: set[str] = set()
    out = []
    for i, label in enumerate(labels):
        key = wanted[i]
        if len(key) != 1 or not key.isalnum() or key in RESERVED_KEYS or key in used:
            key = next(
                (
                    d
                    for d in [str(i + 1), *"123456789"]
                    if d not in used and d not in wanted and d not in RESERVED_KEYS
                ),
                "",
            )
        used.add(key)
        out.append(
            {"value": str(label["value"]), "text": str(label.get("text", "")), "keys": [key]}
        )
    return out


def _options(options: list[dict], chosen) -> list[dict]:
    chosen = "" if chosen is None else str(chosen)
    for option in options:
        option["checked"] = option["value"] == chosen
        option["keys"] = [k for k in option["keys"] if k]
        option["data_keys"] = " ".join(option["keys"])
    return options


def _pair_content(presentation: dict, scheme: dict, values: dict) -> dict:
    left_id, right_id = presentation["left"], presentation["right"]
    by_id = {
        o.pk: o
        for o in Output.objects.select_related("prompt")
        .only("text", "prompt__text")
        .filter(pk__in=[left_id, right_id])
    }
    left, right = by_id[left_id], by_id[right_id]
    options = [
        {"value": "left", "text": "A is better", "keys": ["a", "ArrowLeft"], "shown": "a / ←"},
        {"value": "right", "text": "B is better", "keys": ["b", "ArrowRight"], "shown": "b / →"},
    ]
    if scheme.get("tie_allowed", True):
        options.append(
            {"value": "tie", "text": "Tie", "keys": ["t", "ArrowDown"], "shown": "t / ↓"}
        )
    return {
        "prompt": left.prompt.text,
        "sides": [{"letter": "A", "text": left.text}, {"letter": "B", "text": right.text}],
        "options": _options(options, values.get("choice")),
    }


SPA_QUESTION = "What is the percent chance that Writer {x} is a better writer than Writer {y}?"
SPA_HEADING = "Read the stories, then judge the writers"


def _spa_content(study: Study, presentation: dict, values: dict, errors: dict) -> dict:
    """Prompts in reading order, each with its writers' outputs, then the questions in order.

    The study's question is the wording of every question, its {x} and {y} filled with the two
    writers' letters (the paper's wording when the study has none); the heading never shows a
    placeholder. Counts of answered ratings and questions seed the page's progress line.
    """
    letters = presentation.get("letters", {})
    shown = [int(o) for o in presentation.get("outputs", [])]
    index = {oid: j for j, oid in enumerate(shown)}
    outputs = {
        (o.prompt_id, o.system_id): o
        for o in Output.objects.filter(pk__in=shown).only("id", "prompt_id", "system_id", "text")
    }
    prompt_ids = [int(p) for p in presentation.get("prompts", [])]
    prompt_texts = dict(Prompt.objects.filter(pk__in=prompt_ids).values_list("id", "text"))
    points = (
        _likert_points(study.label_scheme.get("likert_points", []))
        if study.spa_collect_likert
        else []
    )
    blocks = []
    for number, prompt_id in enumerate(prompt_ids, 1):
        writers = []
        for letter in presentation.get("writers", []):
            output = outputs.get((prompt_id, letters.get(letter)))
            if output is None:
                continue
            j = index[output.pk]
            name = f"likert_{j}"
            writers.append(
                {
                    "letter": letter,
                    "text": output.text,
                    "index": j,
                    "name": name,
                    "error": errors.get(name, ""),
                    "rated": bool(values.get(name)),
                    "options": _options([dict(p) for p in points], values.get(name)),
                }
            )
        blocks.append(
            {
                "number": number,
                "prompt": prompt_texts.get(prompt_id, ""),
                "writers": writers,
                "rated": sum(w["rated"] for w in writers),
                "has_error": any(w["error"] for w in writers),
            }
        )
    wording = study.question if has_writer_placeholders(study.question) else SPA_QUESTION
    questions = [
        {
            "name": f"p_{i}",
            "number": i + 1,
            "x": q["x"],
            "y": q["y"],
            "text": fill_writers(wording, q["x"], q["y"]),
            "value": values.get(f"p_{i}", ""),
            "error": errors.get(f"p_{i}", ""),
        }
        for i, q in enumerate(presentation.get("questions", []))
    ]
    n_outputs = sum(len(b["writers"]) for b in blocks)
    return {
        "blocks": blocks,
        "questions": questions,
        "likert": bool(points),
        # a question with placeholders is asked per pair below; the heading says what to do
        "question": SPA_HEADING if has_writer_placeholders(study.question) else study.question,
        "n_outputs": n_outputs,
        "n_rated": sum(b["rated"] for b in blocks),
        "n_answered": sum(bool(q["value"]) for q in questions),
    }


# --- submission --------------------------------------------------------------------------------


def answer_fields(post) -> dict:
    """The posted answer fields (annotation.schemes names them), without CSRF and page fields."""
    return {
        name: post.get(name)
        for name in post
        if not name.startswith("_") and not name.startswith("csrf")
    }


def _refused(request, study: Study, assignment: Assignment | None, key, error: AnswerError):
    """The same task again, with the answer as typed and the message next to the field."""
    if assignment is None:
        return HttpResponse(error.message, status=422, content_type="text/plain")
    field = error.field
    values = {k: v for k, v in request.POST.items() if not k.startswith(("_", "csrf"))}
    rendered = request.POST.get("_rendered", "")
    if _unsign_rendered(rendered) is None:
        rendered = ""
    context = {
        "study": study,
        "task": task_context(
            study,
            assignment,
            key=key,
            rendered=rendered,
            values=values,
            errors={field: error.message},
        ),
    }
    if request.htmx:
        return render(request, "annotation/partials/task_frame.html", context)
    context["progress"] = _progress(work_state(request.user, study))
    return render(request, "annotation/work_task.html", context, status=422)


def _uuid_or_none(raw) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(raw))
    except ValueError:
        return None


def _sign_rendered(when: datetime) -> str:
    return signing.Signer(salt=RENDERED_SALT).sign(when.isoformat())


def _unsign_rendered(raw) -> datetime | None:
    try:
        return datetime.fromisoformat(signing.Signer(salt=RENDERED_SALT).unsign(str(raw or "")))
    except (signing.BadSignature, ValueError):
        return None


def _ms(raw, high: int) -> int | None:
    try:
        value = float(str(raw))
    except ValueError:
        return None
    if value != value or value < 0:  # NaN or negative
        return None
    return int(min(value, high))


def _timings(post, presentation: dict) -> dict:
    """Render time (signed by the server), duration and active time (from the page), exposure."""
    rendered = _unsign_rendered(post.get("_rendered"))
    timings: dict = {}
    duration = _ms(post.get("_duration_ms"), MAX_MS)
    if rendered is not None:
        timings["rendered_at"] = rendered.isoformat()
        since = timezone.now() - rendered
        if duration is None and timedelta(0) <= since:
            duration = int(min(since.total_seconds() * 1000, MAX_MS))
    if duration is not None:
        timings["duration_ms"] = duration
        active = _ms(post.get("_active_ms"), duration)
        if active is not None:
            timings["active_ms"] = active
    if presentation.get("kind") == "spa_batch":
        timings["exposure"] = _exposure(post.get("_exposure"), presentation)
    return timings


def _exposure(raw, presentation: dict) -> dict:
    """The page's per-output record ({index: {ms, seen}}) keyed back to output ids."""
    shown = presentation.get("outputs", [])
    try:
        measured = json.loads(raw) if raw and len(raw) < 20_000 else None
    except ValueError:
        measured = None
    if not isinstance(measured, dict) or not isinstance(measured.get("outputs"), dict):
        return {
            "measured": False,
            "outputs": [{"output": o, "position": j} for j, o in enumerate(shown)],
        }
    items = measured["outputs"]
    outputs = []
    for j, output_id in enumerate(shown):
        item = items.get(str(j))
        item = item if isinstance(item, dict) else {}
        outputs.append(
            {
                "output": output_id,
                "position": j,
                "visible_ms": _ms(item.get("ms", 0), MAX_MS) or 0,
                "seen": item.get("seen") is True,
            }
        )
    return {"measured": True, "outputs": outputs}
