"""Concord's data model for studies, their content, the work handed out and the labels returned."""

from .api_tokens import ApiToken
from .content import Output, Prompt, System
from .imports import ImportJob, ImportRow
from .study import Comparison, Enrolment, GuideVersion, Ruling, Study
from .units import GoldAnswer, Unit, UnitOutput
from .work import Assignment, Label, OutputRating, SpaAnswer
from .workspace import Membership, Workspace

__all__ = [
    "ApiToken",
    "Assignment",
    "Comparison",
    "Enrolment",
    "GoldAnswer",
    "GuideVersion",
    "ImportJob",
    "ImportRow",
    "Label",
    "Membership",
    "Output",
    "OutputRating",
    "Prompt",
    "Ruling",
    "SpaAnswer",
    "Study",
    "System",
    "Unit",
    "UnitOutput",
    "Workspace",
]
