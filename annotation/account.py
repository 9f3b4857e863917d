"""The account page: a signed-in user's API tokens (create with a name, list, revoke).

The secret is shown once, in the answer to the creation; only its hash is kept.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from annotation import selectors
from annotation.rest.throttles import TokenCreationThrottle
from annotation.services import api_tokens


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def tokens(request):
    context = {"new_secret": None, "error": "", "name": ""}
    status = 200
    if request.method == "POST":
        name = request.POST.get("name", "")
        context["name"] = name
        throttle = TokenCreationThrottle()
        if not throttle.allow_request(request, None):
            context["error"] = "Too many tokens created recently; try again later."
            status = 429
        else:
            try:
                made = api_tokens.create_token(request.user, name)
            except api_tokens.TokenError as error:
                context["error"] = error.message
                status = 400
            else:
                context.update(new_secret=made.secret, new_token=made.token, name="")
    context["tokens"] = selectors.api_tokens_for(request.user)
    return render(request, "account/tokens.html", context, status=status)


@login_required
@require_POST
def revoke(request, token_id: int):
    if api_tokens.revoke_token(request.user, token_id):
        messages.info(request, "Token revoked: requests with it are refused from now on.")
    else:
        messages.info(request, "No such active token.")
    return redirect("account-tokens")
