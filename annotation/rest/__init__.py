"""Concord's REST API (Django REST framework) for the annotation side, mounted at /api/v1/.

Named `rest` so it does not clash with `annotation.api`, the lean JSON work loop.
"""
