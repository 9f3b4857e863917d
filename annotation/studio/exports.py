"""The lead's export pages: raw labels (CSV, JSON Lines, streamed), the study file, and applying
a study file to this study (a diff first) or recreating it as a new study. Views stay thin."""

import json

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_POST

from annotation import selectors
from annotation.exports import study_file as files
from annotation.exports.labels import COLUMNS, label_text


class StudyFileForm(forms.Form):
    file = forms.FileField(label="Study file (.json)")
    # "preview" shows the diff; "apply" writes it; "new" creates a new study from the file.
    action = forms.ChoiceField(choices=[("preview", "preview"), ("apply", "apply"), ("new", "new")])
    document = forms.CharField(required=False, widget=forms.HiddenInput)


def _name(study, suffix: str) -> str:
    return f"{slugify(study.name) or 'study'}-{suffix}"


@require_GET
@login_required
def export_page(request, token: str):
    study = selectors.lead_study_or_404(request.user, token)
    return render(
        request,
        "annotation/studio/exports.html",
        {"study": study, "n_labels": study.labels.count(), "columns": COLUMNS},
    )


@require_GET
@login_required
def labels_download(request, token: str, fmt: str):
    study = selectors.lead_study_or_404(request.user, token)
    content_type = {"csv": "text/csv", "jsonl": "application/x-ndjson"}.get(fmt)
    if content_type is None:
        raise Http404("No such format.")
    response = StreamingHttpResponse(
        label_text(study, fmt), content_type=f"{content_type}; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{_name(study, "labels")}.{fmt}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


@require_GET
@login_required
def study_file(request, token: str):
    study = selectors.lead_study_or_404(request.user, token)
    response = HttpResponse(files.dumps(study), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{_name(study, "study")}.json"'
    return response


@require_POST
@login_required
def study_file_import(request, token: str):
    """Preview (diff), apply, or recreate as a new study: the diff is always shown first."""
    study = selectors.lead_study_or_404(request.user, token)
    raw = request.POST.get("document", "").encode()
    if not raw and "file" in request.FILES:
        upload = request.FILES["file"]
        if upload.size > 5 << 20:
            messages.error(request, "A study file is at most 5 MB.")
            return redirect("studio-exports", study.token)
        raw = upload.read()
    action = request.POST.get("action", "preview")
    try:
        document = files.read_study_file(raw)
    except files.StudyFileError as error:
        return render(
            request,
            "annotation/studio/study_file.html",
            {"study": study, "problems": error.problems},
            status=400,
        )
    if action == "apply":
        files.apply_study_file(study, document)
        messages.success(request, "The study file was applied.")
        return redirect("studio-exports", study.token)
    if action == "new":
        made = files.create_study_from_file(study.workspace, document, user=request.user)
        messages.success(request, f"Study “{made.name}” was created from the file.")
        return redirect("studio-exports", made.token)
    return render(
        request,
        "annotation/studio/study_file.html",
        {
            "study": study,
            "changes": files.diff_study(study, document),
            "document": json.dumps(document),
            "new_name": document["study"]["name"],
        },
    )
