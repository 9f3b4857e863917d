"""Signals the annotation side sends; other apps (qc) listen, so annotation never imports them.

`label_submitted` is sent inside the transaction that stores a label (kwargs: label, study_id);
receivers that enqueue work must do it with `transaction.on_commit`.
"""

from django.dispatch import Signal

label_submitted = Signal()
