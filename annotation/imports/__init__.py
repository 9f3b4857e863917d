"""Content imports: parsers, staging, whole-file checks and publish, and the worker task."""
