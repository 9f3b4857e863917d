"""The People page (enrolments, pools, quotas, invites, the crowd link) and the invite link's page.

Writes go through `annotation.services.invites` and `annotation.services.people`.
"""

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from annotation import selectors
from annotation.models import Enrolment, Invite
from annotation.services import invites, people
from annotation.studio import forms
from annotation.studio import selectors as studio_selectors


def _people_context(request, study, **extra) -> dict:
    now = timezone.now()
    return {
        "study": study,
        "tab": "people",
        "rows": studio_selectors.annotator_rows(study),
        "invites": [
            {"invite": i, "state": i.state(now)}
            for i in Invite.objects.filter(study=study).select_related("used_by")[:50]
        ],
        "crowd_link": studio_selectors.crowd_entry_link(study, request.build_absolute_uri("/")),
        "add_form": extra.pop("add_form", None) or forms.AddUserForm(study=study),
        "invite_form": extra.pop("invite_form", None) or forms.InviteForm(study=study),
        **extra,
    }


def _apply_errors(form, error: ValidationError) -> None:
    for message in forms.attach_service_errors(form, error):
        form.add_error(None, message)


@require_http_methods(["GET", "POST"])
@login_required
def people_page(request, token: str):
    """Who works on the study; POST adds an existing account by username."""
    study = selectors.lead_study_or_404(request.user, token)
    if request.method == "GET":
        return render(request, "annotation/studio/people.html", _people_context(request, study))
    form = forms.AddUserForm(request.POST, study=study)
    if form.is_valid():
        try:
            enrolment = invites.add_existing_user(
                study=study,
                username=form.cleaned_data["username"],
                pool=form.cleaned_data["pool"],
                quota=form.cleaned_data["quota"],
            )
        except ValidationError as error:
            _apply_errors(form, error)
        else:
            messages.success(request, f"{enrolment.user.get_username()} was added.")
            return redirect("studio-people", token=study.token)
    return render(
        request, "annotation/studio/people.html", _people_context(request, study, add_form=form)
    )


@require_POST
@login_required
@never_cache
def invite(request, token: str):
    """Make a single-use invite link; it is shown on this response only (only its hash is kept)."""
    study = selectors.lead_study_or_404(request.user, token)
    form = forms.InviteForm(request.POST, study=study)
    new_link = ""
    if form.is_valid():
        try:
            made, secret = invites.create_invite(
                study=study,
                created_by=request.user,
                pool=form.cleaned_data["pool"],
                quota=form.cleaned_data["quota"],
                note=form.cleaned_data["note"],
                valid_for=timedelta(days=form.cleaned_data["valid_days"]),
            )
        except ValidationError as error:
            _apply_errors(form, error)
        else:
            new_link = request.build_absolute_uri(invites.invite_path(secret))
            form = None
    context = _people_context(request, study, invite_form=form, new_link=new_link)
    return render(request, "annotation/studio/people.html", context)


@require_POST
@login_required
def revoke(request, token: str, invite_id: int):
    study = selectors.lead_study_or_404(request.user, token)
    invites.revoke_invite(get_object_or_404(Invite, pk=invite_id, study=study))
    messages.success(request, "The invite was withdrawn; its link no longer works.")
    return redirect("studio-people", token=study.token)


@require_POST
@login_required
def update_enrolment(request, token: str, enrolment_id: int):
    study = selectors.lead_study_or_404(request.user, token)
    enrolment = get_object_or_404(Enrolment, pk=enrolment_id, study=study)
    form = forms.EnrolmentFields(request.POST, study=study)
    try:
        if not form.is_valid():
            raise ValidationError(form.errors)
        invites.update_enrolment(
            enrolment, pool=form.cleaned_data["pool"], quota=form.cleaned_data["quota"]
        )
    except ValidationError as error:
        for field, problems in error.message_dict.items():
            messages.error(request, f"{enrolment.user.get_username()}: {field}: {problems[0]}")
    else:
        messages.success(request, f"{enrolment.user.get_username()} updated.")
    return redirect("studio-people", token=study.token)


@require_POST
@login_required
def remove(request, token: str, enrolment_id: int):
    """Take an annotator out of the study's workspace (`people.remove_membership`), or, with
    `deactivate`, close their account (`people.deactivate_user`) when the lead may: their open
    leases are released at once, their labels stay."""
    study = selectors.lead_study_or_404(request.user, token)
    enrolment = get_object_or_404(
        Enrolment.objects.select_related("user"), pk=enrolment_id, study=study
    )
    user, name = enrolment.user, enrolment.user.get_username()
    if request.POST.get("deactivate"):
        if not studio_selectors.may_deactivate(request.user, user, study.workspace):
            messages.error(
                request, f"{name} also works elsewhere; remove them from this workspace instead."
            )
            return redirect("studio-people", token=study.token)
        people.deactivate_user(user)
        messages.success(request, f"{name}'s account was deactivated; their labels are kept.")
    else:
        people.remove_membership(study.workspace, user)
        messages.success(
            request,
            f"{name} was removed from {study.workspace.name}; their labels are kept.",
        )
    return redirect("studio-people", token=study.token)


@require_http_methods(["GET", "POST"])
@never_cache
def accept_invite(request, secret: str):
    """An invite link: choose a password, get a pseudonymous account, start annotating."""
    try:
        pending = invites.open_invite(secret)
    except invites.InviteError as error:
        return render(request, "annotation/studio/invite.html", {"error": str(error)}, status=404)
    if request.user.is_authenticated:
        return render(
            request, "annotation/studio/invite.html", {"invite": pending, "signed_in": True}
        )
    form = forms.AcceptInviteForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = invites.accept_invite(secret, password=form.cleaned_data["password"])
        except invites.InviteError as error:
            return render(
                request, "annotation/studio/invite.html", {"error": str(error)}, status=404
            )
        except ValidationError as error:
            _apply_errors(form, error)
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(
                request,
                f"Welcome! Your sign-in name is {user.get_username()}: keep it with your "
                "password to come back.",
            )
            return redirect("home")
    return render(request, "annotation/studio/invite.html", {"invite": pending, "form": form})
