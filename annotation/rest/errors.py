"""Errors outside DRF's views (no route matched) answer JSON under /api/, like the API does."""

from django.http import JsonResponse
from django.views import defaults


def not_found(request, exception=None):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def bad_request(request, exception=None):
    """Django refuses a request before any view (e.g. a body over DATA_UPLOAD_MAX_MEMORY_SIZE)."""
    if request.path.startswith("/api/"):
        from django.conf import settings

        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        detail = "Bad request."
        if exception is not None and type(exception).__name__ == "RequestDataTooBig":
            detail = (
                f"The request body is larger than {limit:,} bytes: send fewer rows, or upload "
                "a file to the study's imports/."
            )
        return JsonResponse({"detail": detail}, status=400)
    return defaults.bad_request(request, exception)
