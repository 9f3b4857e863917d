"""The lead's pages: new study, workspace, settings (scheme editors), launch checklist, overview.

Thin views: every page is scoped by a `for_user` selector (a foreign token or slug is a 404), and
every write goes through `annotation.services.studies`.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import diagnostics, selectors
from annotation.services import studies
from annotation.studio import forms
from annotation.studio import selectors as studio_selectors


@require_http_methods(["GET", "POST"])
@login_required
def new_study(request, slug: str | None = None):
    """Name, workspace and task kind; the kind's own settings come on the next page."""
    workspaces = studio_selectors.lead_workspaces_for(request.user)
    if slug is not None:
        workspaces = workspaces.filter(slug=slug)
    if not workspaces.exists():
        raise Http404("No workspace you lead.")
    form = forms.NewStudyForm(
        request.POST or None, workspaces=workspaces, initial={"workspace": workspaces.first()}
    )
    if request.method == "POST" and form.is_valid():
        try:
            study = studies.create_study(
                workspace=form.cleaned_data["workspace"],
                created_by=request.user,
                name=form.cleaned_data["name"],
                task_kind=form.cleaned_data["task_kind"],
            )
        except ValidationError as error:
            for message in forms.attach_service_errors(form, error):
                form.add_error(None, message)
        else:
            messages.success(request, "Study created as a draft. Now set it up.")
            return redirect("studio-settings", token=study.token)
    return render(request, "annotation/studio/new_study.html", {"form": form})


@require_GET
@login_required
def workspace(request, slug: str):
    ws = studio_selectors.lead_workspace_or_404(request.user, slug)
    context = {
        "workspace": ws,
        "studies": ws.studies.all(),
        "members": ws.memberships.select_related("user").order_by("role", "user__username"),
    }
    return render(request, "annotation/studio/workspace.html", context)


@require_GET
@login_required
def overview(request, token: str):
    """Where the study stands: units per state, per annotator, labels needed at the pace."""
    study = selectors.lead_study_or_404(request.user, token)
    context = {
        "study": study,
        "progress": studio_selectors.study_progress(study),
        "annotators": studio_selectors.annotator_rows(study),
        "systems": study.systems.all(),
        "guide": study.current_guide(),
        "skips": diagnostics.skips(study),
        "gold": diagnostics.gold_supply(study),
        "checklist_failed": [i for i in studies.launch_checklist(study) if not i.ok]
        if study.status == study.Status.DRAFT
        else [],
        "tab": "overview",
    }
    return render(request, "annotation/studio/overview.html", context)


@require_http_methods(["GET", "POST"])
@login_required
def study_settings(request, token: str):
    """Every setting the study's kind uses, its scheme as fields, and the lock rules shown."""
    study = selectors.lead_study_or_404(request.user, token)
    locked = studies.locked_fields(study)
    data = request.POST if request.method == "POST" else None
    form = forms.StudySettingsForm(data, instance=_fresh(study), locked=locked)
    collect_likert = study.spa_collect_likert
    if (
        data is not None
        and "spa_collect_likert" in form.fields
        and "spa_collect_likert" not in locked
    ):
        collect_likert = data.get("spa_collect_likert") in ("on", "true", "1")
    editor = forms.SchemeEditor(study, data, collect_likert=collect_likert)
    comparisons = forms.comparison_formset(study, data) if study.is_spa else None
    page_errors: dict[str, list[str]] = {}
    if data is not None:
        page_errors = _save_settings(study, form, editor, comparisons, locked)
        if page_errors is None:
            messages.success(request, "Settings saved.")
            return redirect("studio-settings", token=study.token)
    context = {
        "study": study,
        "form": form,
        "editor": editor,
        "scheme_locked": locked.get("label_scheme", ""),
        "comparisons": comparisons,
        "comparisons_locked": study.status != study.Status.DRAFT,
        "comparison_errors": page_errors.get("comparisons", []),
        "other_errors": page_errors.get("other", []),
        "has_systems": study.systems.exists(),
        "locked": locked,
        "live_notes": studies.LIVE_EDIT_NOTES if study.status != study.Status.DRAFT else {},
        "tab": "settings",
    }
    return render(request, "annotation/studio/settings.html", context)


def _fresh(study):
    # A ModelForm writes into its instance while validating; keep the view's study untouched.
    return type(study).objects.get(pk=study.pk)


def _save_settings(study, form, editor, comparisons, locked) -> dict | None:
    """Validate every part, then save all of it in one transaction (None), or nothing (the
    errors no field of the form shows, by section)."""
    draft = study.status == study.Status.DRAFT
    form_ok = form.is_valid()
    scheme_ok = "label_scheme" in locked or editor.is_valid()
    comparisons_ok = comparisons is None or not draft or comparisons.is_valid()
    if not (form_ok and scheme_ok and comparisons_ok):
        return {}
    changes = form.changes()
    if "label_scheme" not in locked:
        changes["label_scheme"] = editor.scheme()
    try:
        with transaction.atomic():
            studies.update_study(study, **changes)
            if comparisons is not None and draft:
                studies.set_comparisons(study, forms.comparison_triples(comparisons))
    except ValidationError as error:
        details = dict(error.message_dict)
        editor.attach_errors(details.pop("label_scheme", []))
        comparison_errors = details.pop("comparisons", [])
        leftover = forms.attach_service_errors(form, ValidationError(details)) if details else []
        return {"comparisons": comparison_errors, "other": leftover}
    return None


@require_GET
@login_required
def launch(request, token: str):
    """The checklist that must pass before live, and the moves the study's status allows."""
    study = selectors.lead_study_or_404(request.user, token)
    checklist = studies.launch_checklist(study)
    context = {
        "study": study,
        "checklist": checklist,
        "ready": all(item.ok for item in checklist),
        "moves": _moves(study),
        "tab": "launch",
    }
    return render(request, "annotation/studio/launch.html", context)


MOVE_LABELS = {
    "qualifying": "Open qualification",
    "live": "Go live",
    "paused": "Pause",
    "closed": "Close the study",
}


def _moves(study) -> list[dict]:
    moves = []
    for status in ("qualifying", "live", "paused", "closed"):
        if status not in studies.TRANSITIONS[study.status]:
            continue
        if status == "qualifying" and not study.requires_qualification:
            continue
        label = MOVE_LABELS[status]
        if status == "live" and study.status == study.Status.PAUSED:
            label = "Resume"
        moves.append({"status": status, "label": label})
    return moves


@require_POST
@login_required
def set_status(request, token: str):
    study = selectors.lead_study_or_404(request.user, token)
    target = request.POST.get("status", "")
    try:
        studies.set_status(study, target)
    except ValidationError as error:
        for message in error.message_dict.get("status", error.messages):
            messages.error(request, message)
    else:
        study.refresh_from_db(fields=["status"])
        messages.success(request, f"The study is now {study.get_status_display().lower()}.")
    return redirect("studio-launch", token=study.token)
