"""Training pages: the lead's guide editor, qualification builder and results, calibration
sessions; and the annotator's steps (the test, recalibration, session work) in the workbench."""
