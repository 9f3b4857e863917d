"""Scoping for nested routes: the parent study is looked up through the scoping selectors first,
so a study the caller may not reach answers 404 before any child is read."""

from django.shortcuts import get_object_or_404

from annotation import selectors


class LeadStudyMixin:
    """For routes under /studies/<study>/: `self.study` is the study if the caller leads it
    (staff: any), else 404. Children are always filtered by `self.study`."""

    study_url_kwarg = "study"

    @property
    def study(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no request data
            return None
        if not hasattr(self, "_study"):
            self._study = get_object_or_404(
                selectors.lead_studies_for(self.request.user).select_related("workspace"),
                token=self.kwargs[self.study_url_kwarg],
            )
        return self._study

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        # Resolve (and 404) the parent before anything else, whatever the method.
        _ = self.study


class AnnotatorStudyMixin:
    """For the annotator loop: `self.study` is a study the caller is enrolled in, else 404."""

    study_url_kwarg = "study"

    @property
    def study(self):
        if getattr(self, "swagger_fake_view", False):
            return None
        if not hasattr(self, "_study"):
            self._study = get_object_or_404(
                selectors.annotator_studies_for(self.request.user),
                token=self.kwargs[self.study_url_kwarg],
            )
        return self._study
