"""A study's quality report: snapshot arrays in, a JSON-safe payload out (NaN -> null + reason).

Every statistic comes from the `analysis` package; these modules only shape arrays and results:
`labels` picks the columns, one module per section, `assemble` runs them into one report.
"""

from qc.reports.assemble import Progress, Report, build_report
from qc.reports.common import category_label, clean, stars

__all__ = ["Progress", "Report", "build_report", "category_label", "clean", "stars"]
