"""Exports: raw labels with their context (CSV, JSON Lines) and the study as one versioned file."""
