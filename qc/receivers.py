"""Signal receivers: a committed label schedules (debounced) a recomputation of its study.

Connected in QcConfig.ready(); annotation sends the signal and never imports qc.
"""

import logging
from functools import partial

from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)


def on_label_submitted(sender, study_id: int, **kwargs) -> None:
    from qc.services import label_committed

    if not settings.CONCORD_QC_AUTO_RECOMPUTE:
        return
    # robust: a failing schedule (broker down, eager error) must not fail the label's request.
    transaction.on_commit(partial(label_committed, study_id), robust=True)
