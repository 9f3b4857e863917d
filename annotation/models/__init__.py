"""Concord's data model for studies, their content, the work handed out and the labels returned."""

from .api_tokens import ApiToken
from .content import Output, Prompt, System
from .imports import ImportJob, ImportRow
from .invites import Invite
from .study import Comparison, Enrolment, GuideVersion, Ruling, Study
from .training import (
    CalibrationItem,
    CalibrationSession,
    QualificationItem,
    TrainingBatch,
    TrainingTask,
)
from .units import GoldAnswer, Unit, UnitOutput
from .work import Assignment, Label, OutputRating, SpaAnswer
from .workspace import Membership, Workspace

__all__ = [
    "ApiToken",
    "Assignment",
    "CalibrationItem",
    "CalibrationSession",
    "Comparison",
    "Enrolment",
    "GoldAnswer",
    "GuideVersion",
    "Invite",
    "ImportJob",
    "ImportRow",
    "Label",
    "Membership",
    "Output",
    "OutputRating",
    "Prompt",
    "QualificationItem",
    "Ruling",
    "SpaAnswer",
    "Study",
    "System",
    "TrainingBatch",
    "TrainingTask",
    "Unit",
    "UnitOutput",
    "Workspace",
]
