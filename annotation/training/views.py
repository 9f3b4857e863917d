"""The lead's training pages: guide editor with versions, diffs and flagged gold; the
qualification builder and its results; calibration sessions. Thin: rules live in services."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotation import selectors
from annotation.models import (
    CalibrationItem,
    CalibrationSession,
    GoldAnswer,
    QualificationItem,
    Unit,
)
from annotation.services import calibration, guides, qualification
from annotation.services.training_items import (
    TrainingError,
    answer_options,
    answer_text,
    item_texts,
    resolve_items,
)
from annotation.training import forms

N_RULING_FORMS = 3


def _error(form, error: TrainingError):
    """Show a service's refusal next to its field (or above the form)."""
    name = error.field if error.field in form.fields else None
    form.add_error(name, error.message)


@login_required
@require_GET
def training_home(request, token: str):
    study = selectors.lead_study_or_404(request.user, token)
    context = {
        "study": study,
        "guide": guides.current_version(study),
        "n_versions": study.guide_versions.count(),
        "n_flagged": guides.flagged_gold(study).count(),
        "n_items": study.qualification_items.count(),
        "sessions": study.calibration_sessions.all()[:5],
        "tab": "home",
    }
    return render(request, "annotation/training/home.html", context)


# --- guide ----------------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def guide_edit(request, token: str):
    """The current guide, its versions, and the form that publishes the next version."""
    study = selectors.lead_study_or_404(request.user, token)
    current = guides.current_version(study)
    drafts = list(guides.draft_rulings(study))
    prefixes = [f"r{i}" for i in range(1, N_RULING_FORMS + 1)]
    if request.method == "POST":
        form = forms.PublishForm(request.POST)
        ruling_forms = [forms.RulingForm(request.POST, prefix=p) for p in prefixes]
        if form.is_valid() and all(f.is_valid() for f in ruling_forms):
            try:
                version = _publish(study, form, ruling_forms, drafts, request.user)
            except TrainingError as error:
                _error(form, error)
            else:
                messages.success(request, f"Guide version {version.number} is published.")
                return redirect("guide-version", token=token, number=version.number)
    else:
        form = forms.PublishForm(initial={"body": current.body if current else ""})
        ruling_forms = [forms.RulingForm(prefix=p) for p in prefixes]
    context = {
        "study": study,
        "current": current,
        "current_html": guides.render_markdown(current.body) if current else "",
        "versions": study.guide_versions.order_by("-number"),
        "rulings": guides.rulings_in_force(study),
        "drafts": drafts,
        "form": form,
        "ruling_forms": ruling_forms,
        "n_flagged": guides.flagged_gold(study).count(),
        "tab": "guide",
    }
    return render(request, "annotation/training/guide_edit.html", context)


def _publish(study, form, ruling_forms, drafts, author):
    new = []
    for i, rf in enumerate(ruling_forms, 1):
        data = rf.cleaned_data
        if not (data["title"] or data["text"] or data["examples"]):
            continue
        examples = resolve_items(study, data["examples"], field=f"ruling_{i}")
        new.append(guides.NewRuling(data["title"], data["text"], examples=tuple(examples)))
    picked = None
    if form.cleaned_data["recalibration_items"].strip():
        picked = resolve_items(
            study, form.cleaned_data["recalibration_items"], field="recalibration_items"
        )
    return guides.publish_version(
        study,
        body=form.cleaned_data["body"],
        changes=form.cleaned_data["changes"],
        rulings=new,
        include_drafts=drafts,
        requires_recalibration=form.cleaned_data["requires_recalibration"],
        recalibration_units=picked,
        author=author,
    )


@login_required
@require_GET
def guide_version(request, token: str, number: int):
    """One version as annotators read it, and its diff against another (default: the one
    before)."""
    study = selectors.lead_study_or_404(request.user, token)
    version = get_object_or_404(study.guide_versions, number=number)
    against = request.GET.get("against", "")
    other = None
    if against.isdigit():
        other = study.guide_versions.filter(number=int(against)).first()
    elif number > 1:
        other = study.guide_versions.filter(number__lt=number).order_by("-number").first()
    diff = None
    if other is not None:
        old, new = sorted([other, version], key=lambda v: v.number)
        diff = guides.diff_versions(old, new)
    context = {
        "study": study,
        "version": version,
        "version_html": guides.render_markdown(version.body),
        "rulings": [r for r in guides.rulings_in_force(study, version) if r.version == number],
        "recalibration": item_texts(version.recalibration_units.all()).values(),
        "diff": diff,
        "other": other,
        "versions": study.guide_versions.order_by("-number"),
        "tab": "guide",
    }
    return render(request, "annotation/training/guide_version.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def guide_flags(request, token: str):
    """Gold answers whose items a new ruling cites: confirm them or give the new answer."""
    study = selectors.lead_study_or_404(request.user, token)
    if request.method == "POST":
        form = forms.FlagForm(request.POST)
        if form.is_valid():
            gold = get_object_or_404(GoldAnswer, pk=form.cleaned_data["gold"], unit__study=study)
            answer = form.cleaned_data["answer"] or None
            try:
                guides.resolve_flag(gold, answer=answer, author=request.user)
            except TrainingError as error:
                messages.error(request, error.message)
            else:
                messages.success(request, "Updated." if answer else "Confirmed.")
        return redirect("guide-flags", token=token)
    flags = list(guides.flagged_gold(study))
    texts = item_texts([g.unit_id for g in flags])
    rows = [
        {
            "gold": g,
            "text": texts.get(g.unit_id),
            "answer": answer_text(study, g.value),
            "is_test_item": g.unit.role == Unit.Role.QUALIFICATION,
        }
        for g in flags
    ]
    context = {
        "study": study,
        "rows": rows,
        "options": answer_options(study),
        "tab": "guide",
    }
    return render(request, "annotation/training/guide_flags.html", context)


# --- qualification ------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def qualification_builder(request, token: str):
    """The test: its rules, its items (easy / boundary), and items proposed from real splits."""
    study = selectors.lead_study_or_404(request.user, token)
    settings_form = forms.SettingsForm(
        initial={
            "requires_qualification": study.requires_qualification,
            "pass_score": study.qualification_pass_score,
            "attempts": study.qualification_attempts,
            "retry_after_guide": study.qualification_retry_after_guide,
            "before_guide": study.qualification_before_guide,
            "allowed_pools": study.allowed_pools,
        }
    )
    add_error = ""
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "settings":
            settings_form = forms.SettingsForm(request.POST)
            if settings_form.is_valid():
                data = settings_form.cleaned_data
                try:
                    qualification.update_settings(
                        study,
                        requires_qualification=data["requires_qualification"],
                        pass_score=data["pass_score"],
                        attempts=data["attempts"],
                        retry_after_guide=data["retry_after_guide"],
                        before_guide=data["before_guide"],
                        allowed_pools=data["allowed_pools"],
                    )
                except TrainingError as error:
                    _error(settings_form, error)
                else:
                    messages.success(request, "Saved the test's rules.")
                    return redirect("qualification-builder", token=token)
        elif action == "add":
            form = forms.AddItemForm(request.POST)
            if form.is_valid():
                unit = get_object_or_404(Unit, pk=form.cleaned_data["unit"], study=study)
                found = {c.unit.pk: c for c in qualification.candidates(study, limit=500)}
                found |= {
                    c.unit.pk: c for c in qualification.candidates(study, split=False, limit=500)
                }
                candidate = found.get(unit.pk)
                try:
                    qualification.add_item(
                        study,
                        unit,
                        answer=form.cleaned_data["answer"],
                        difficulty=form.cleaned_data["difficulty"],
                        split=dict(candidate.split) if candidate else {},
                        author=request.user,
                    )
                except TrainingError as error:
                    add_error = error.message
                else:
                    messages.success(request, "Added to the test.")
                    return redirect("qualification-builder", token=token)
            else:
                add_error = "Choose the expert answer and whether the item is easy or boundary."
        elif action == "remove":
            item = get_object_or_404(
                QualificationItem, pk=request.POST.get("item") or 0, study=study
            )
            try:
                qualification.remove_item(item)
            except TrainingError as error:
                messages.error(request, error.message)
            else:
                messages.success(request, "Removed from the test.")
            return redirect("qualification-builder", token=token)
    items = list(study.qualification_items.select_related("unit__gold_answer"))
    texts = item_texts([i.unit_id for i in items])
    boundary = qualification.candidates(study, limit=20)
    easy = qualification.candidates(study, split=False, limit=10)
    candidate_texts = item_texts([c.unit.pk for c in boundary + easy])
    context = {
        "study": study,
        "settings_form": settings_form,
        "items": [
            {
                "item": i,
                "text": texts.get(i.unit_id),
                "answer": answer_text(study, i.unit.gold_answer.value),
            }
            for i in items
        ],
        "boundary": [{"c": c, "text": candidate_texts.get(c.unit.pk)} for c in boundary],
        "easy": [{"c": c, "text": candidate_texts.get(c.unit.pk)} for c in easy],
        "options": answer_options(study),
        "add_error": add_error,
        "tab": "qualification",
    }
    return render(request, "annotation/training/qualification_builder.html", context)


@login_required
@require_GET
def qualification_results(request, token: str):
    study = selectors.lead_study_or_404(request.user, token)
    context = {
        "study": study,
        "results": qualification.results(study),
        "trap_rate": qualification.EASY_TRAP_PASS_RATE,
        "tab": "results",
    }
    return render(request, "annotation/training/qualification_results.html", context)


# --- calibration --------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def calibration_sessions(request, token: str):
    """The study's sessions, and the form that opens one on a small batch for chosen raters."""
    study = selectors.lead_study_or_404(request.user, token)
    raters = [e.user for e in study.enrolments.select_related("user").order_by("user__username")]
    disputed = qualification.candidates(study, limit=30, exclude_test=False)
    disputed_texts = item_texts([c.unit.pk for c in disputed])
    choices = [
        (
            str(c.unit.pk),
            f"{disputed_texts[c.unit.pk].reference} — " + ", ".join(f"{t} {n}" for t, n in c.split),
        )
        for c in disputed
        if c.unit.pk in disputed_texts
    ]
    form = forms.SessionForm(request.POST or None, raters=raters, items=choices)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            units = list(Unit.objects.filter(study=study, pk__in=[int(x) for x in data["items"]]))
            if data["more_items"].strip():
                units += resolve_items(study, data["more_items"], field="more_items")
            chosen = [u for u in raters if str(u.pk) in data["raters"]]
            session = calibration.open_session(
                study, title=data["title"], raters=chosen, units=units, author=request.user
            )
        except TrainingError as error:
            _error(form, error)
        else:
            messages.success(request, "The session is open: its raters see it on their study page.")
            return redirect("calibration-session", token=token, session=session.token)
    context = {
        "study": study,
        "form": form,
        "sessions": study.calibration_sessions.all(),
        "tab": "calibration",
    }
    return render(request, "annotation/training/calibration_sessions.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def calibration_session(request, token: str, session: str):
    """Progress per rater, the distribution per item (most disputed first), rulings recorded
    against items, and publishing them as the next guide version."""
    study = selectors.lead_study_or_404(request.user, token)
    found = get_object_or_404(CalibrationSession, study=study, token=session)
    current = guides.current_version(study)
    publish_form = forms.PublishForm(
        initial={"body": current.body if current else "", "requires_recalibration": True}
    )
    ruling_error = ""
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "ruling":
            form = forms.SessionRulingForm(request.POST)
            if form.is_valid():
                item = CalibrationItem.objects.filter(
                    session=found, pk=form.cleaned_data["item"]
                ).first()
                if item is None:
                    raise Http404("No such item.")
                try:
                    calibration.record_ruling(
                        found,
                        item,
                        title=form.cleaned_data["title"],
                        text=form.cleaned_data["text"],
                    )
                except TrainingError as error:
                    ruling_error = error.message
                else:
                    messages.success(request, "Ruling recorded (a draft until you publish).")
                    return redirect("calibration-session", token=token, session=session)
            else:
                ruling_error = "A ruling needs a title and its reason."
        elif action == "publish":
            publish_form = forms.PublishForm(request.POST)
            if publish_form.is_valid():
                data = publish_form.cleaned_data
                try:
                    picked = None
                    if data["recalibration_items"].strip():
                        picked = resolve_items(
                            study, data["recalibration_items"], field="recalibration_items"
                        )
                    version = calibration.publish_session(
                        found,
                        body=data["body"],
                        changes=data["changes"],
                        requires_recalibration=data["requires_recalibration"],
                        recalibration_units=picked,
                        author=request.user,
                    )
                except TrainingError as error:
                    _error(publish_form, error)
                else:
                    messages.success(request, f"Guide version {version.number} is published.")
                    return redirect("guide-version", token=token, number=version.number)
    context = {
        "study": study,
        "session": found,
        "progress": calibration.progress(found),
        "splits": calibration.distribution(found),
        "drafts": list(guides.draft_rulings(study, found)),
        "publish_form": publish_form,
        "ruling_error": ruling_error,
        "tab": "calibration",
    }
    return render(request, "annotation/training/calibration_session.html", context)
