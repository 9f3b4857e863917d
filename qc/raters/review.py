"""Worker-side sections of expert review: audit results (the pool-wide error rate from random
audits only) and the triage queue (split votes and Dawid-Skene-versus-majority items).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from analysis import labelmodels as lm
from analysis import monitoring as mon
from annotation.models import Label
from qc.models import Audit, AuditItem
from qc.reports.common import category_label, num

MAX_QUEUE = 300
CONTINUOUS_SPREAD = 20.0  # a 0-100 item is in triage when its ratings span more than this


def _rate(k: int, n: int) -> dict:
    low, high = mon.wilson_interval(k, n)
    return {
        "wrong": int(k),
        "checked": int(n),
        "rate": num(k / n) if n else None,
        "ci_low": num(low),
        "ci_high": num(high),
    }


def audit_section(study) -> dict:
    """Per audit its progress and error rate; the pool-wide error rate from random audits only."""
    items = list(
        AuditItem.objects.filter(audit__study=study).values_list(
            "audit_id", "audit__kind", "verdict", "label__unit_id", "label__annotator_id"
        )
    )
    units = {u for *_x, u, _a in items}
    votes: dict[int, Counter] = {}
    for unit_id, choice, score, winner in Label.objects.filter(
        unit_id__in=units, purpose__in=["production", "gold"]
    ).values_list("unit_id", "choice", "score", "winner_id"):
        votes.setdefault(unit_id, Counter())[(choice, score, winner)] += 1
    unanimous = {u for u, c in votes.items() if sum(c.values()) >= 2 and len(c) == 1}

    per_audit: dict[int, Counter] = {}
    totals = {Audit.Kind.RANDOM: Counter(), Audit.Kind.TARGETED: Counter()}
    for audit_id, kind, verdict, unit_id, _annotator in items:
        c = per_audit.setdefault(audit_id, Counter())
        c["size"] += 1
        if verdict:
            c["checked"] += 1
            c["wrong"] += verdict == AuditItem.Verdict.WRONG
            totals[kind]["checked"] += 1
            totals[kind]["wrong"] += verdict == AuditItem.Verdict.WRONG
            if unit_id in unanimous:
                totals[kind]["unanimous_checked"] += 1
                totals[kind]["unanimous_wrong"] += verdict == AuditItem.Verdict.WRONG
        totals[kind]["size"] += 1
    audits = []
    for audit in Audit.objects.filter(study=study).select_related("target_annotator", "drawn_by"):
        c = per_audit.get(audit.id, Counter())
        audits.append(
            {
                "id": audit.id,
                "kind": audit.kind,
                "reason": audit.reason,
                "target": audit.target_annotator.get_username() if audit.target_annotator else "",
                "drawn_by": audit.drawn_by.get_username() if audit.drawn_by else "",
                "created_at": audit.created_at.isoformat(),
                "size": c["size"],
                **_rate(c["wrong"], c["checked"]),
            }
        )
    random_ = totals[Audit.Kind.RANDOM]
    targeted = totals[Audit.Kind.TARGETED]
    return {
        "audits": audits,
        "pool_error": {
            **_rate(random_["wrong"], random_["checked"]),
            "size": random_["size"],
            "unanimous_checked": random_["unanimous_checked"],
            "unanimous_wrong": random_["unanimous_wrong"],
            "reading": (
                "Estimated from random audits only: targeted audits pick unusual work, so their "
                "error rate says nothing about the pool."
            ),
        },
        "targeted": {**_rate(targeted["wrong"], targeted["checked"]), "size": targeted["size"]},
    }


def triage_section(snap, config, ds) -> dict:
    """The disagreement queue: items whose labels split, Dawid-Skene-versus-majority items first,
    then the most split; at most MAX_QUEUE, with how many there are in all."""
    if ds:
        t, fit = ds
        soft = lm.soft_labels(t.items, t.raters, t.labels)
        mv = lm.majority_vote(t.items, t.raters, t.labels, tie_break="lowest")
        n_i = soft.counts.sum(axis=1)
        top = soft.counts.max(axis=1)
        split = (n_i >= 2) & (top < n_i)
        ds_labels = fit.item_labels
        differs = mv.item_labels != ds_labels
        listed = split | differs
        share = np.where(n_i > 0, top / np.maximum(n_i, 1), 1.0)
        order = np.lexsort((share, ~differs))  # DS-vs-majority first, then the most split
        order = order[listed[order]]
        names = [category_label(c) for c in soft.classes.tolist()]
        tokens = _tokens(snap, soft.items)
        rows = [
            {
                "unit_id": int(soft.items[i]),
                "unit": str(tokens[i]),
                "labels": int(n_i[i]),
                "votes": [
                    {"label": c, "count": int(n)}
                    for c, n in zip(names, soft.counts[i], strict=True)
                    if n
                ],
                "majority": category_label(mv.item_labels[i]),
                "majority_tied": bool(mv.tied[i]),
                "dawid_skene": category_label(ds_labels[i]),
                "dawid_skene_posterior": num(fit.posteriors[i].max()),
                "why": "Dawid-Skene differs from the majority" if differs[i] else "split vote",
            }
            for i in order[:MAX_QUEUE].tolist()
        ]
        return {
            "classes": names,
            "n_items": int(soft.items.size),
            "n_split": int(split.sum()),
            "n_ds_differs": int(differs.sum()),
            "n_listed": int(listed.sum()),
            "rows": rows,
        }
    if config.task_kind == "continuous":
        keep = np.isfinite(snap.score)
        items, scores = snap.unit[keep], snap.score[keep]
        if items.size == 0:
            return {"reason": "no labels yet"}
        uniq, inv = np.unique(items, return_inverse=True)
        hi = np.full(uniq.size, -np.inf)
        lo = np.full(uniq.size, np.inf)
        np.maximum.at(hi, inv, scores)
        np.minimum.at(lo, inv, scores)
        n_i = np.bincount(inv)
        spread = hi - lo
        listed = (n_i >= 2) & (spread > CONTINUOUS_SPREAD)
        order = np.argsort(-spread, kind="stable")
        order = order[listed[order]]
        tokens = _tokens(snap, uniq)
        return {
            "classes": [],
            "n_items": int(uniq.size),
            "n_split": int(listed.sum()),
            "n_ds_differs": 0,
            "n_listed": int(listed.sum()),
            "rows": [
                {
                    "unit_id": int(uniq[i]),
                    "unit": str(tokens[i]),
                    "labels": int(n_i[i]),
                    "votes": [],
                    "spread": num(spread[i]),
                    "why": f"ratings span {spread[i]:.0f} points",
                }
                for i in order[:MAX_QUEUE].tolist()
            ],
        }
    return {"reason": "this task kind has no per-item disagreement queue"}


def _tokens(snap, units: np.ndarray) -> np.ndarray:
    if snap.unit_ids.size == 0:
        return np.full(units.size, "", dtype=object)
    pos = np.minimum(np.searchsorted(snap.unit_ids, units), snap.unit_ids.size - 1)
    return np.where(snap.unit_ids[pos] == units, snap.unit_tokens[pos], "")
