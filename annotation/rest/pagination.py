"""Pagination: cursors for the large lists (stable under inserts, no OFFSET scans), pages for
the small ones. A malformed page size is a 400 naming the parameter, never silently ignored."""

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import (
    CursorPagination,
    LimitOffsetPagination,
    PageNumberPagination,
)


def strict_positive_int(request, name: str, default, maximum: int, minimum: int = 1):
    """The query parameter as an int in [minimum, maximum], the default when absent, else 400."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError(
            {name: [f"must be a whole number from {minimum} to {maximum}"]}
        ) from None
    if not minimum <= value <= maximum:
        raise ValidationError({name: [f"must be a whole number from {minimum} to {maximum}"]})
    return value


class IdCursorPagination(CursorPagination):
    """Large lists (prompts, outputs, units, labels): ordered by id, `?ordering=-id` for newest
    first; the `next` link carries an opaque cursor."""

    ordering = "id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000

    def get_page_size(self, request):
        return strict_positive_int(request, "page_size", self.page_size, self.max_page_size)


class SmallPagination(PageNumberPagination):
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_number(self, request, paginator):
        # A page past the end is DRF's 404; a page that is not a number at all is a 400.
        strict_positive_int(request, "page", 1, 2**31 - 1)
        return super().get_page_number(request, paginator)

    def get_page_size(self, request):
        return strict_positive_int(request, "page_size", self.page_size, self.max_page_size)


class StrictLimitOffsetPagination(LimitOffsetPagination):
    default_limit = 500
    max_limit = 5000

    def get_limit(self, request):
        return strict_positive_int(request, "limit", self.default_limit, self.max_limit)

    def get_offset(self, request):
        return strict_positive_int(request, "offset", 0, 2**31 - 1, minimum=0)
