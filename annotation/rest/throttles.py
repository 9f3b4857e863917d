"""Throttles for the API: every unsafe call per user, and token creation more tightly.

Rates come from settings.CONCORD_API_THROTTLE_RATES at request time; counters live in the
default cache (Redis when CACHE_URL is set, shared by every web process).
"""

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


class _ConfiguredRate(SimpleRateThrottle):
    def get_rate(self):
        return settings.CONCORD_API_THROTTLE_RATES[self.scope]

    def get_cache_key(self, request, view):
        user = getattr(request, "user", None)
        ident = user.pk if user is not None and user.is_authenticated else self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}


class WriteThrottle(_ConfiguredRate):
    """Unsafe methods (POST, PATCH, PUT, DELETE) per user; reads are not counted."""

    scope = "writes"

    def allow_request(self, request, view):
        if request.method in SAFE_METHODS:
            return True
        return super().allow_request(request, view)


class TokenCreationThrottle(_ConfiguredRate):
    """Creating API tokens, per user, from the API or the account page."""

    scope = "tokens"

    def allow_request(self, request, view):
        if request.method != "POST":
            return True
        return super().allow_request(request, view)
