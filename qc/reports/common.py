"""What every report section shares: JSON safety, category labels, significance stars, stat rows.

Values leave a section JSON-safe: NaN and infinities become None, with a reason beside them.
"""

from __future__ import annotations

import math

import numpy as np

# Significance marks of the paper's Table 1, on Holm-adjusted p.
STARS = ((0.01, "***"), (0.05, "**"), (0.10, "*"))


# Values clean() passes through as they are (checked by exact type: a numpy scalar is not one).
_PLAIN = frozenset({str, int, bool, type(None)})


def clean(value):
    """Numpy and float values made JSON-safe: NaN and infinities become None."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        # the per-item columns are long lists of plain numbers: no call per element for those
        return [
            v
            if type(v) in _PLAIN
            else (v if v - v == 0.0 else None)
            if type(v) is float
            else clean(v)
            for v in value
        ]
    if isinstance(value, np.ndarray):
        return clean(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def num(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def category_label(value) -> str:
    """A category as tables and charts show it: integral scores without ".0" (3.0 -> "3").

    The raw value stays in the payload beside it (`value`), so JSON exports keep the number.
    """
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def display_label(value, texts) -> str:
    """A category as the page shows it: the scheme's display text ("Medium", not "mid"; "3
    (Fair)" for a Likert point), else `category_label`. `texts`: (value, text) pairs or a dict."""
    lookup = dict(texts) if not isinstance(texts, dict) else texts
    if isinstance(value, np.generic):
        value = value.item()
    return lookup.get(value, category_label(value))


def stars(p) -> str:
    if p is None or not math.isfinite(p):
        return ""
    for cut, mark in STARS:
        if p < cut:
            return mark
    return ""


def stat_row(key: str, label: str, result, boot=None) -> dict:
    """One statistic row: value, CI (bootstrap or the statistic's own), reason and counts."""
    ci_low = getattr(boot, "ci_low", getattr(result, "ci_low", float("nan")))
    ci_high = getattr(boot, "ci_high", getattr(result, "ci_high", float("nan")))
    return {
        "key": key,
        "label": label,
        "value": num(result.value),
        "ci_low": num(ci_low),
        "ci_high": num(ci_high),
        "reason": result.reason or (boot.reason if boot is not None else None) or "",
        "n_items": int(getattr(result, "n_items", 0)),
        "n_raters": int(getattr(result, "n_raters", 0)),
        "n_labels": int(getattr(result, "n_labels", 0)),
        "n_boot": int(boot.n_boot) if boot is not None else 0,
    }


def missing_row(key: str, label: str, reason: str) -> dict:
    return {
        "key": key,
        "label": label,
        "value": None,
        "ci_low": None,
        "ci_high": None,
        "reason": reason,
        "n_items": 0,
        "n_raters": 0,
        "n_labels": 0,
        "n_boot": 0,
    }
