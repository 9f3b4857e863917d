"""The annotator workbench: where an enrolled annotator starts and works through a study.

Every view here is scoped by `selectors.annotator_study_or_404`: a study the user is not
enrolled in answers 404.
"""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from annotation import selectors


@login_required
def start(request, token: str):
    study = selectors.annotator_study_or_404(request.user, token)
    return render(request, "annotation/work_start.html", {"study": study})
