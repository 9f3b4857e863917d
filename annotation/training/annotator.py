"""The annotator's training steps: the qualification test, the recalibration batch after a guide
change, and calibration-session work, each in the workbench's own task UI with its own progress.

Views are thin: the rules live in annotation.services.qualification and .calibration.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import selectors, workbench
from annotation.models import Assignment, CalibrationSession, TrainingBatch
from annotation.schemes import AnswerError
from annotation.services import batches, calibration, guides, qualification
from annotation.services.submission import submit_label
from annotation.services.training_items import TrainingError

TITLES = {
    TrainingBatch.Kind.QUALIFICATION: "Qualification test",
    TrainingBatch.Kind.RECALIBRATION: "Recalibration",
    TrainingBatch.Kind.CALIBRATION: "Calibration session",
}


def _guide_context(study) -> dict:
    version = guides.current_version(study)
    return {
        "guide": version,
        "guide_html": guides.render_markdown(version.body) if version else "",
        "rulings": guides.rulings_in_force(study, version),
    }


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def qualification_start(request, token: str):
    """What the test is and where the annotator stands; POST starts (or resumes) an attempt."""
    study = selectors.annotator_study_or_404(request.user, token)
    if request.method == "POST":
        try:
            batch = qualification.start_attempt(study, request.user)
        except TrainingError as error:
            messages.error(request, error.message)
            return redirect("qualification-start", token=token)
        return redirect("training-task", token=token, batch=batch.token)
    status = qualification.status(study, request.user)
    context = {
        "study": study,
        "status": status,
        "refusal": qualification.REFUSALS.get(status.reason, ""),
        "n_items": study.qualification_items.count(),
        "show_guide": not study.qualification_before_guide,
        **_guide_context(study),
    }
    return render(request, "annotation/training/qualification_start.html", context)


@login_required
@never_cache
@require_GET
def qualification_guide(request, token: str):
    """The guide, read again after a failed attempt (which is what a retry may require)."""
    study = selectors.annotator_study_or_404(request.user, token)
    qualification.mark_guide_reread(study, request.user)
    return render(
        request,
        "annotation/training/guide_reread.html",
        {"study": study, **_guide_context(study)},
    )


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def recalibration_start(request, token: str):
    """What changed in the guide, and the short batch to label before production resumes."""
    study = selectors.annotator_study_or_404(request.user, token)
    due = calibration.recalibration_due(study, request.user)
    if request.method == "POST":
        try:
            batch = calibration.start_recalibration(study, request.user)
        except TrainingError as error:
            messages.info(request, error.message)
            return redirect("work-start", token=token)
        return redirect("training-task", token=token, batch=batch.token)
    rulings = [r for r in guides.rulings_in_force(study) if due and r.version == due.number]
    context = {
        "study": study,
        "due": due,
        "n_items": due.recalibration_units.count() if due else 0,
        "new_rulings": rulings,
        **_guide_context(study),
    }
    return render(request, "annotation/training/recalibration_start.html", context)


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def calibration_rater(request, token: str, session: str):
    """A rater's view of a session: their batch first; once all of it is submitted, the
    distribution of labels per item (counts only), most disputed first."""
    study = selectors.annotator_study_or_404(request.user, token)
    found = get_object_or_404(CalibrationSession, study=study, token=session)
    if not calibration.is_rater(found, request.user):
        raise Http404("No such session.")
    if request.method == "POST":
        batch = calibration.start_session_batch(found, request.user)
        return redirect("training-task", token=token, batch=batch.token)
    finished = calibration.rater_finished(found, request.user)
    context = {
        "study": study,
        "session": found,
        "finished": finished,
        "n_items": found.items.count(),
        "splits": calibration.distribution(found) if finished else [],
    }
    return render(request, "annotation/training/calibration_rater.html", context)


def _batch_or_404(request, token: str, batch: str):
    study = selectors.annotator_study_or_404(request.user, token)
    found = get_object_or_404(TrainingBatch, study=study, annotator=request.user, token=batch)
    return study, found


def _task_page_context(study, batch, assignment) -> dict:
    done, total = batches.progress(batch)
    return {
        "study": study,
        "progress": {"done": done, "assigned": total, "max": max(total, 1)},
        "task": workbench.task_context(study, assignment),
        "submit_url": reverse("training-submit", args=[study.token, batch.token]),
        "training_title": TITLES[batch.kind],
        "hide_guide": batch.kind == TrainingBatch.Kind.QUALIFICATION
        and study.qualification_before_guide,
    }


def _finish(batch):
    if batch.kind == TrainingBatch.Kind.QUALIFICATION:
        return qualification.finish_attempt(batch)
    if batch.kind == TrainingBatch.Kind.RECALIBRATION:
        return calibration.finish_recalibration(batch)
    return batch


@login_required
@never_cache
@require_GET
def task(request, token: str, batch: str):
    """The batch's current task in the workbench's task UI; the result page when all is done."""
    study, found = _batch_or_404(request, token, batch)
    assignment = None if found.finished_at else batches.next_task(found)
    if assignment is None:
        _finish(found)
        return redirect("training-result", token=token, batch=found.token)
    return render(
        request, "annotation/work_task.html", _task_page_context(study, found, assignment)
    )


@login_required
@never_cache
@require_POST
def submit(request, token: str, batch: str):
    """Store one answer of the batch (the workbench's submission rules) and show the next."""
    study, found = _batch_or_404(request, token, batch)
    assignment_token = request.POST.get("_assignment", "")
    key = workbench._uuid_or_none(request.POST.get("_key"))
    in_batch = found.tasks.filter(assignment__token=assignment_token).exists()
    if not in_batch or key is None:
        return HttpResponse(
            "This form is incomplete. Reload the page to continue.",
            status=400,
            content_type="text/plain",
        )
    assignment = Assignment.objects.get(token=assignment_token)
    try:
        submit_label(
            annotator=request.user,
            assignment_token=assignment_token,
            data=workbench.answer_fields(request.POST),
            idempotency_key=key,
            timings=workbench._timings(request.POST, assignment.presentation),
            study=study,
        )
    except AnswerError as error:
        context = _task_page_context(study, found, assignment)
        context["task"] = workbench.task_context(
            study,
            assignment,
            key=key,
            values=workbench.answer_fields(request.POST),
            errors={error.field: error.message},
        )
        template = "annotation/partials/task_frame.html" if request.htmx else None
        return render(request, template or "annotation/work_task.html", context, status=422)
    following = batches.next_task(found)
    if following is None:
        _finish(found)
        url = reverse("training-result", args=[token, found.token])
        if request.htmx:
            response = HttpResponse(status=204)
            response["HX-Redirect"] = url
            return response
        return redirect(url)
    if not request.htmx:
        return redirect("training-task", token=token, batch=found.token)
    context = _task_page_context(study, found, following)
    context["notice"] = "Saved."
    return render(request, "annotation/partials/swap.html", context)


@login_required
@never_cache
@require_GET
def result(request, token: str, batch: str):
    """After the batch: the test's verdict with missed items and their rulings; the rulings of
    a recalibration; the session's distribution."""
    study, found = _batch_or_404(request, token, batch)
    found = _finish(found)
    if found.finished_at is None and not batches.is_complete(found):
        return redirect("training-task", token=token, batch=found.token)
    context = {"study": study, "batch": found, "title": TITLES[found.kind]}
    if found.kind == TrainingBatch.Kind.QUALIFICATION:
        context["missed"] = qualification.missed_items(found)
        context["status"] = qualification.status(study, request.user)
    elif found.kind == TrainingBatch.Kind.RECALIBRATION:
        context["rulings"] = [
            r
            for r in guides.rulings_in_force(study)
            if found.guide_version and r.version == found.guide_version.number
        ]
    else:
        return redirect("calibration-rater", token=token, session=found.session.token)
    return render(request, "annotation/training/result.html", context)
