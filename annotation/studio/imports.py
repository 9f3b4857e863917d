"""The lead's import pages: upload a file, watch it being imported, read its errors, preview and
build the units. Views stay thin: annotation.imports does the work in a worker."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import selectors
from annotation.imports import services
from annotation.imports.preview import preview_units
from annotation.models import ImportJob
from annotation.services import setup

KIND_HELP = {
    "systems": "name, description",
    "prompts": "id, text, language, topic, source, metadata (a JSON object)",
    "outputs": "id, prompt_id, system, text",
    "comparisons": "system_x, system_y, expected (x, y, indifferent or empty)",
    "gold": "unit (a unit of one output has the output's id), value, rationale, source, role",
    "labels": (
        "id, annotator, unit, value, purpose, repeat_of, left, right, system_x, system_y,"
        " direction, created_at, rendered_at, duration_ms, active_ms, guide_version, pool"
    ),
}


class UploadForm(forms.Form):
    kind = forms.ChoiceField(choices=ImportJob.Kind.choices, label="What the file holds")
    file = forms.FileField(label="CSV or JSON Lines file (UTF-8)")

    def clean(self):
        data = super().clean()
        upload = data.get("file")
        if upload is not None:
            try:
                data["format"] = services.guess_format(upload.name)
            except ValueError as error:
                self.add_error("file", str(error))
        return data


def _context(study, form):
    return {
        "study": study,
        "form": form,
        "kind_help": KIND_HELP,
        "jobs": study.imports.select_related("created_by")[:20],
        "preview": preview_units(study),
    }


@require_http_methods(["GET", "POST"])
@login_required
def import_page(request, token: str):
    study = selectors.lead_study_or_404(request.user, token)
    if request.method == "POST":
        form = UploadForm(request.POST, request.FILES)
        if form.is_valid():
            job = services.start_import(
                study,
                form.cleaned_data["kind"],
                form.cleaned_data["format"],
                form.cleaned_data["file"],
                form.cleaned_data["file"].name,
                user=request.user,
            )
            return redirect("studio-import-job", study.token, job.token)
        return render(request, "annotation/studio/imports.html", _context(study, form), status=400)
    return render(request, "annotation/studio/imports.html", _context(study, UploadForm()))


def _job(request, token: str, job_token: str):
    study = selectors.lead_study_or_404(request.user, token)
    return study, get_object_or_404(ImportJob, study=study, token=job_token)


@require_GET
@login_required
def job_page(request, token: str, job_token: str):
    study, job = _job(request, token, job_token)
    return render(request, "annotation/studio/import_job.html", {"study": study, "job": job})


@require_GET
@login_required
def job_progress(request, token: str, job_token: str):
    """The progress partial that the job page polls (htmx) until the job has finished."""
    study, job = _job(request, token, job_token)
    response = render(
        request, "annotation/studio/partials/import_progress.html", {"study": study, "job": job}
    )
    if job.finished and request.headers.get("HX-Request"):
        # Load the whole page once, so the errors table or the next steps appear.
        response["HX-Refresh"] = "true"
    return response


@require_POST
@login_required
def build_units(request, token: str):
    study = selectors.lead_study_or_404(request.user, token)
    made = setup.build_units(study)
    messages.success(request, f"{made:,} units built.")
    return redirect("studio-imports", study.token)
