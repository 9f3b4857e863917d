"""Errors outside DRF's views (no route matched) answer JSON under /api/, like the API does."""

from django.http import JsonResponse
from django.views import defaults


def not_found(request, exception=None):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)
