"""API authentication: a per-user token in `Authorization: Bearer <token>`, beside the session.

Token requests carry no cookie, so they need no CSRF token; session requests keep DRF's CSRF
check on every unsafe method. A request without credentials answers 401 with a Bearer challenge.

A wrong token counts as a failed sign-in of no account from the caller's address (django-axes,
the password form's limits); a paused address gets 429 for every token, right ones included,
until the cool-off ends by itself.
"""

from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_cool_off
from django.contrib.auth.signals import user_login_failed
from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from annotation.services.api_tokens import user_for_secret

# What axes is told about a token attempt: no account name, and a mark that makes it count per
# address only (concord.middleware.lockout_parameters), so guesses do not pause anyone's account.
TOKEN_CREDENTIALS = {"username": None, "api_token": True}


class TokenLockedOut(exceptions.Throttled):
    def __init__(self, cool_off):
        minutes = max(1, round(cool_off.total_seconds() / 60))
        super().__init__(
            wait=cool_off.total_seconds(),
            detail=f"Too many failed token attempts from this address: token sign-in is paused "
            f"for {minutes} minutes and then resumes by itself.",
        )


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(_("Invalid Authorization header."))
        # Axes reads and marks the Django request, not DRF's wrapper.
        django_request = request._request
        if not AxesProxyHandler.is_allowed(django_request, TOKEN_CREDENTIALS):
            raise TokenLockedOut(get_cool_off(django_request))
        try:
            secret = header[1].decode()
        except UnicodeError:
            secret = None
        found = user_for_secret(secret) if secret is not None else None
        if found is None:
            user_login_failed.send(
                sender=__name__, credentials=dict(TOKEN_CREDENTIALS), request=django_request
            )
            if getattr(django_request, "axes_locked_out", False):
                # This failure reached the limit: answer in the API's JSON rather than letting
                # axes' middleware swap in the sign-in form's HTML page.
                django_request.axes_locked_out = False
                raise TokenLockedOut(get_cool_off(django_request))
            raise exceptions.AuthenticationFailed(_("Invalid or revoked token."))
        return found

    def authenticate_header(self, request):
        return f'{self.keyword} realm="api"'


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """How the OpenAPI schema describes the token: an HTTP bearer scheme."""

    target_class = "annotation.rest.authentication.BearerTokenAuthentication"
    name = "bearerToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A personal API token from the account page (`concord_...`).",
        }
