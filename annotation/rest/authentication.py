"""API authentication: a per-user token in `Authorization: Bearer <token>`, beside the session.

Token requests carry no cookie, so they need no CSRF token; session requests keep DRF's CSRF
check on every unsafe method. A request without credentials answers 401 with a Bearer challenge.
"""

from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from annotation.services.api_tokens import user_for_secret


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(_("Invalid Authorization header."))
        try:
            secret = header[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed(_("Invalid token.")) from None
        found = user_for_secret(secret)
        if found is None:
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
