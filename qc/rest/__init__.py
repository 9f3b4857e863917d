"""qc's REST API (stored quality reports, their tables, aggregated labels), under /api/v1/.

Reads what a worker stored; no statistic is computed in a request.
"""
