"""Writes: every change to studies, units, assignments and labels goes through these functions."""
