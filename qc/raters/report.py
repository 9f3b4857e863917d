"""The rater report: per annotator, gold accuracy per week with the decline rule, blind-repeat
flips, severity, Dawid-Skene confusion, timing and behaviour signals, cuts; and the pool's view.

Run by the worker after the study report (it reads that report's severity section); returns
JSON-safe dicts. Screening signals never convict: they suggest sending a sample to audit.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
from scipy import stats

from analysis import labelmodels as lm
from analysis import monitoring as mon
from annotation.models import Study
from qc.loaders import ReportConfig, Snapshot
from qc.raters.loaders import RaterData
from qc.reports.common import category_label, clean, num
from qc.reports.labels import task_labels

RULE = mon.DeclineRule()
DS_KWARGS: dict = {}  # the aggregation section's call: defaults, and iteration_cap(labels)
CONTINUOUS_FLIP = 10.0  # a 0-100 answer "changes" on a repeat / misses gold beyond 10 points
MIN_GOLD = 20  # below this many gold items the page says the accuracy is too thin to judge
MIN_REPEATS = 10
FAST_SHARE_OF_MEDIAN = 0.25  # an item under a quarter of the pool's median time is "fast"
RUN_MIN = 8
RUN_EXPECTED = 0.01
MAX_FLIPS_LISTED = 50
WEEK = 7 * 24 * 3600

PURPOSE_READINGS = {
    "production": "real judgments of production items: agreement, label models and votes",
    "gold": "hidden gold: rater accuracy; the first label also counts as a real judgment",
    "repeat": "blind repeats: self-consistency only, never in agreement or aggregation",
    "attention": "attention checks: rater screening only",
    "qualification": "qualification test: never in any aggregate",
    "calibration": "calibration session: never in any aggregate",
}

CONCERN = (
    ("decline", 4.0, "a sustained decline in gold accuracy"),
    ("gold_low", 2.0, "gold accuracy below the pool's (the rater's upper bound is under it)"),
    ("flips_high", 2.0, "flip rate above the pool's (the rater's lower bound is over it)"),
    ("severity", 1.0, "a severity offset whose interval excludes 0"),
    ("fast", 1.0, "screening: works much faster than the pool"),
    ("runs", 1.0, "screening: an improbably long run of identical answers"),
    ("left", 1.0, "screening: chooses the left side more often than chance"),
    ("ties", 1.0, "screening: far more ties than the pool"),
    ("tau", 1.0, "screening: SPA answers with P[X>Y] + P[Y>X] above tau"),
)
CONCERN_RULE = (
    "Raters are ranked by a concern score, the sum of: "
    + "; ".join(f"{w:g} for {text}" for _k, w, text in CONCERN)
    + ". Ties are broken by lower gold accuracy. Screening signals suggest an audit; they do not "
    "say the rater is wrong."
)


@dataclass(frozen=True)
class RaterReports:
    summary: dict  # the study-level view (pool, counts, rule, ranking rows)
    raters: dict  # annotator id -> that rater's page payload
    concern: dict  # annotator id -> (score, alert)


# --------------------------------------------------------------------------- answers


def answers_of(data: RaterData) -> np.ndarray:
    """Each label's answer in canonical terms (object array): a class, a score, a system or tie."""
    kind = data.task_kind
    if kind in (Study.TaskKind.CATEGORICAL, Study.TaskKind.ORDINAL):
        return data.choice.astype(object)
    if kind in (Study.TaskKind.LIKERT, Study.TaskKind.CONTINUOUS):
        return data.score.astype(object)
    if kind == Study.TaskKind.PAIRWISE:
        out = np.array([data.systems.get(int(w), str(w)) for w in data.winner.tolist()], object)
        out[data.winner == 0] = "tie"
        return out
    return np.full(data.label_id.size, None, dtype=object)


def gold_answer(kind: str, value, systems: dict):
    """The expert answer in the same terms as `answers_of` (None when it cannot be read)."""
    raw = value
    if isinstance(value, dict):
        raw = value.get("winner" if kind == Study.TaskKind.PAIRWISE else "choice")
        if raw is None:
            raw = value.get("score", value.get("choice", value.get("value")))
    if raw is None or raw == "":
        return None
    if kind in (Study.TaskKind.CATEGORICAL, Study.TaskKind.ORDINAL):
        return str(raw)
    if kind in (Study.TaskKind.LIKERT, Study.TaskKind.CONTINUOUS):
        try:
            return float(raw)
        except (TypeError, ValueError):
            return None
    if kind == Study.TaskKind.PAIRWISE:
        if raw == "tie":
            return "tie"
        if isinstance(raw, int) and raw in systems:
            return systems[raw]
        return str(raw)
    return None


def same_answer(kind: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise: do two answers agree (0-100 scores: within CONTINUOUS_FLIP points)?"""
    if kind == Study.TaskKind.CONTINUOUS:
        x = np.array([np.nan if v is None else v for v in a.tolist()], float)
        y = np.array([np.nan if v is None else v for v in b.tolist()], float)
        return np.abs(x - y) <= CONTINUOUS_FLIP
    return np.array([u == v for u, v in zip(a.tolist(), b.tolist(), strict=True)], dtype=bool)


def _answer_keys(data: RaterData) -> tuple[np.ndarray, np.ndarray]:
    """(answer keys for run detection, whether the label has an answer), vectorised."""
    kind = data.task_kind
    if kind in (Study.TaskKind.LIKERT, Study.TaskKind.CONTINUOUS):
        return data.score, np.isfinite(data.score)
    if kind == Study.TaskKind.SPA:
        return data.choice, np.zeros(data.choice.size, dtype=bool)
    return data.choice.astype(str), data.choice != ""


def _show(value) -> str:
    if value is None:
        return "—"
    return category_label(value)


def _interval(k: int, n: int) -> dict:
    low, high = mon.wilson_interval(k, n)
    return {
        "k": int(k),
        "n": int(n),
        "rate": num(k / n) if n else None,
        "ci_low": num(low),
        "ci_high": num(high),
    }


def _week_start(ts: float) -> str:
    day = datetime.fromtimestamp(ts, UTC).date()
    return (day - timedelta(days=day.weekday())).isoformat()


# --------------------------------------------------------------------------- the report


def build_rater_reports(
    data: RaterData, snap: Snapshot, config: ReportConfig, summary: dict, ds=None
) -> RaterReports:
    """Every rater's page payload and the study-level view; `ds` is `dawid_skene_fit`'s result
    (computed here when not given)."""
    kind = data.task_kind
    answers = answers_of(data)
    unit_pos = np.searchsorted(data.unit_ids, data.unit)
    unit_pos = np.minimum(unit_pos, max(data.unit_ids.size - 1, 0))
    tokens = data.unit_tokens[unit_pos] if data.unit_ids.size else data.unit.astype(object)
    purpose = data.purpose
    annotators = np.unique(data.annotator)

    # --- gold (and attention) correctness
    gold_value = {u: gold_answer(kind, v, data.systems) for u, v in data.gold.items()}
    on_gold = np.isin(purpose, ["gold", "attention"]) & np.isin(
        data.unit, np.fromiter(gold_value, dtype="i8", count=len(gold_value))
    )
    expected = np.array([gold_value.get(int(u)) for u in data.unit[on_gold].tolist()], object)
    readable = np.array([v is not None for v in expected.tolist()], dtype=bool)
    correct = np.zeros(data.label_id.size, dtype=bool)
    scored = np.zeros(data.label_id.size, dtype=bool)
    idx = np.flatnonzero(on_gold)[readable]
    scored[idx] = True
    correct[idx] = same_answer(kind, answers[idx], expected[readable])
    is_gold = scored & (purpose == "gold")
    is_attention = scored & (purpose == "attention")

    # --- weeks (Monday-start, from the study's first label) and guide changes
    if data.label_id.size:
        first_day = datetime.fromtimestamp(float(data.created.min()), UTC).date()
        origin = datetime.combine(
            first_day - timedelta(days=first_day.weekday()), datetime.min.time(), UTC
        ).timestamp()
        week = ((data.created - origin) // WEEK).astype(np.int64)
        n_weeks = int(week.max()) + 1
    else:
        origin, week, n_weeks = 0.0, np.zeros(0, dtype=np.int64), 0
    week_dates = [
        datetime.fromtimestamp(origin + w * WEEK, UTC).date().isoformat() for w in range(n_weeks)
    ]
    guide_number = {gid: number for gid, number, _ in data.guides}
    guide_changes = []
    for _gid, number, published in data.guides:
        w = int((published - origin) // WEEK) if n_weeks else 0
        if number > 1 and 0 < w < n_weeks:
            guide_changes.append({"week": week_dates[w], "index": w, "label": f"guide v{number}"})
    change_weeks = [g["index"] for g in guide_changes]

    # --- blind repeats joined to their originals
    rep = np.flatnonzero((purpose == "repeat") & (data.repeat_of > 0))
    orig = _rows_of_assignments(data.assignment_id, data.repeat_of[rep])
    has_orig = orig >= 0
    rep, orig = rep[has_orig], orig[has_orig]
    flipped = ~same_answer(kind, answers[rep], answers[orig]) if rep.size else np.zeros(0, bool)

    # --- timing: active time when measured, else time on page
    seconds = np.where(np.isfinite(data.active_ms), data.active_ms, data.duration_ms) / 1000.0
    timed = np.isfinite(seconds) & (seconds > 0)
    pool_median = float(np.median(seconds[timed])) if timed.any() else None
    fast_cut = FAST_SHARE_OF_MEDIAN * pool_median if pool_median else None
    is_fast = timed & (seconds < fast_cut) if fast_cut else np.zeros(seconds.size, bool)
    pool_fast_share = float(is_fast.sum() / timed.sum()) if timed.any() else None
    pool_q = tuple(np.percentile(seconds[timed], [25, 75])) if timed.any() else (None, None)

    # --- runs of identical answers, in each rater's session order (answers they gave)
    keys, answered = _answer_keys(data)
    answered &= np.isin(purpose, ["production", "gold", "repeat", "attention"])
    runs = mon.longest_runs(data.annotator[answered], data.position[answered], keys[answered])
    run_of = {int(r): i for i, r in enumerate(runs.raters.tolist())}

    # --- pairwise sides and ties
    pairwise = kind == Study.TaskKind.PAIRWISE
    first_judgment = np.isin(purpose, ["production", "gold"])
    pool_ties = None
    if pairwise:
        pj = first_judgment & (data.choice != "")
        pool_ties = float((data.choice[pj] == "tie").mean()) if pj.any() else None

    # --- SPA tau
    tau_rows = _tau_violations(data, config)

    # --- Dawid-Skene per rater, on the aggregation's labels
    ds = _dawid_skene(ds if ds is not None else dawid_skene_fit(snap, config))

    # --- severity from the study report
    sev = (summary or {}).get("severity") or {}
    sev_rows = {r["annotator_id"]: (i, r) for i, r in enumerate(sev.get("raters") or [])}

    # --- pool-level gold and flips (the comparison for each rater)
    pool_gold = _interval(int(correct[is_gold].sum()), int(is_gold.sum()))
    pool_flips = _interval(int(flipped.sum()), int(flipped.size))

    # --- per slice value (for the cuts)
    slices = {
        "language": data.unit_language[unit_pos] if data.unit_ids.size else tokens,
        "topic": data.unit_topic[unit_pos] if data.unit_ids.size else tokens,
        "source": data.unit_source[unit_pos] if data.unit_ids.size else tokens,
    }
    guide_ids, guide_code = np.unique(data.guide_version, return_inverse=True)
    guide_of_label = np.array(
        [f"v{guide_number[g]}" if g in guide_number else "none" for g in guide_ids.tolist()],
        dtype=object,
    )[guide_code.reshape(-1)]

    counted = np.isin(purpose, ["production", "gold"])
    cuts = {
        name: _cut_table(data.annotator, values, counted, is_gold, correct)
        for name, values in {"guide version": guide_of_label, **slices}.items()
    }
    by_rater = np.argsort(data.annotator, kind="stable")
    split_at = np.searchsorted(data.annotator[by_rater], annotators[1:])
    # np.split of an empty study still gives one (empty) piece: no raters, no rows.
    pieces = np.split(by_rater, split_at) if annotators.size else []
    rows_by_rater = dict(zip(annotators.tolist(), pieces, strict=True))
    rep_by_rater = defaultdict(list)
    for r_i, label_i in enumerate(rep.tolist()):
        rep_by_rater[int(data.annotator[label_i])].append(r_i)

    pages, concern, ranking = {}, {}, []
    for a in annotators.tolist():
        rows = rows_by_rater[a]
        name = data.names.get(a, str(a))
        page: dict = {"annotator_id": a, "annotator": name, "pool": data.pools.get(a, "")}
        # counts by purpose, adding up to the total
        page["counts"] = _counts(purpose[rows])

        # gold accuracy per week and the decline rule
        g_rows = rows[is_gold[rows]]
        wk = week[g_rows]
        n_w = np.bincount(wk, minlength=n_weeks)
        c_w = np.bincount(wk, weights=correct[g_rows], minlength=n_weeks).astype(int)
        gold = _interval(int(c_w.sum()), int(n_w.sum()))
        gold["thin"] = gold["n"] < MIN_GOLD
        alerts = None
        weeks = []
        if n_weeks:
            first_w = int(wk.min()) if wk.size else 0
            span = slice(first_w, n_weeks)
            res = mon.decline_alerts(
                c_w[span], n_w[span], [w - first_w for w in change_weeks if w > first_w], RULE
            )
            lo, hi = mon.wilson_interval(c_w[span], n_w[span])
            for t in range(res.flagged.size):
                w = first_w + t
                weeks.append(
                    {
                        "week": week_dates[w],
                        "n": int(n_w[w]),
                        "correct": int(c_w[w]),
                        "accuracy": num(c_w[w] / n_w[w]) if n_w[w] else None,
                        "ci_low": num(lo[t]),
                        "ci_high": num(hi[t]),
                        "flagged": bool(res.flagged[t]),
                        "cause": str(res.cause[t]),
                    }
                )
            alerts = res
        decline = bool(alerts is not None and alerts.active)
        ever = alerts.first_flag if alerts is not None else None
        gold["weeks"] = weeks
        gold["attention"] = _interval(
            int(correct[rows[is_attention[rows]]].sum()), int(is_attention[rows].sum())
        )
        gold["alert"] = {
            "active": decline,
            "first_week": weeks[ever]["week"] if ever is not None else None,
            "cause": weeks[-1]["cause"]
            if decline
            else (weeks[ever]["cause"] if ever is not None else ""),
            "reading": _decline_reading(decline, ever, weeks, gold),
        }
        gold_low = bool(
            gold["n"] >= MIN_GOLD
            and pool_gold["rate"] is not None
            and gold["ci_high"] is not None
            and gold["ci_high"] < pool_gold["rate"]
        )
        page["gold"] = gold

        # self-consistency
        mine = np.asarray(rep_by_rater.get(a, []), dtype=int)
        page["repeats"] = _repeats(
            data, mine, rep, orig, flipped, answers, tokens, slices, guide_of_label
        )
        flips_high = bool(
            page["repeats"]["n"] >= MIN_REPEATS
            and pool_flips["rate"] is not None
            and page["repeats"]["ci_low"] is not None
            and page["repeats"]["ci_low"] > pool_flips["rate"]
        )

        # severity (position in the forest plot)
        if a in sev_rows:
            pos, row = sev_rows[a]
            page["severity"] = {**row, "rank": pos + 1, "of": len(sev_rows)}
        else:
            page["severity"] = None
        severe = bool(page["severity"] and page["severity"].get("excludes_zero"))

        page["confusion"] = ds.get(a)

        # timing and behaviour (screening)
        page["timing"] = _timing(
            seconds, timed, is_fast, rows, pool_median, fast_cut, pool_fast_share, pool_q
        )
        fast = bool(page["timing"] and page["timing"]["flag"])
        page["runs"] = _run_row(runs, run_of.get(a))
        long_run = bool(page["runs"] and page["runs"]["flag"])
        page["sides"] = _sides(data, rows, first_judgment, pool_ties) if pairwise else None
        left = bool(page["sides"] and page["sides"]["left_flag"])
        ties = bool(page["sides"] and page["sides"]["tie_flag"])
        page["tau"] = tau_rows.get(a)
        tau = bool(page["tau"] and page["tau"]["violations"])

        page["cuts"] = {name: cut[a] for name, cut in cuts.items()}

        fired = {
            "decline": decline,
            "gold_low": gold_low,
            "flips_high": flips_high,
            "severity": severe,
            "fast": fast,
            "runs": long_run,
            "left": left,
            "ties": ties,
            "tau": tau,
        }
        score = float(sum(w for k, w, _t in CONCERN if fired[k]))
        page["signals"] = [
            {"key": k, "weight": w, "fired": fired[k], "text": t} for k, w, t in CONCERN
        ]
        page["concern"] = score
        page["screening"] = any(fired[k] for k in ("fast", "runs", "left", "ties", "tau"))
        pages[a] = clean(page)
        concern[a] = (score, decline)
        ranking.append(
            {
                "annotator_id": a,
                "annotator": name,
                "pool": page["pool"],
                "concern": score,
                "alert": decline,
                "labels": page["counts"]["total"],
                "gold_accuracy": gold["rate"],
                "gold_n": gold["n"],
                "flip_rate": page["repeats"]["rate"],
                "repeats": page["repeats"]["n"],
                "offset": page["severity"]["offset"] if page["severity"] else None,
                "signals": [k for k, _w, _t in CONCERN if fired[k]],
            }
        )
    ranking.sort(
        key=lambda r: (
            -r["concern"],
            r["gold_accuracy"] if r["gold_accuracy"] is not None else 2.0,
            r["annotator"],
        )
    )
    study_summary = {
        "task_kind": kind,
        "rule": RULE.describe(),
        "concern_rule": CONCERN_RULE,
        "counts": _counts(purpose),
        "purpose_readings": PURPOSE_READINGS,
        "pool_gold": pool_gold,
        "pool_flips": pool_flips,
        "pool_timing": {
            "median_s": pool_median,
            "fast_cutoff_s": fast_cut,
            "fast_share": pool_fast_share,
            "timed": int(timed.sum()),
        },
        "pool_ties": pool_ties,
        "pools": _pool_cut(data, is_gold, correct),
        "guide_changes": guide_changes,
        "weeks": n_weeks,
        "ranking": ranking,
        "n_alerts": sum(r["alert"] for r in ranking),
        "dawid_skene": ds.get("_meta"),
    }
    return RaterReports(summary=clean(study_summary), raters=pages, concern=concern)


# --------------------------------------------------------------------------- pieces


def _counts(purposes: np.ndarray) -> dict:
    values, n = np.unique(purposes.astype(str), return_counts=True)
    found = dict(zip(values.tolist(), n.tolist(), strict=True))
    out = {p: int(found.get(p, 0)) for p in PURPOSE_READINGS}
    out["total"] = int(purposes.size)
    return out


def _decline_reading(active, ever, weeks, gold) -> str:
    if gold["n"] < MIN_GOLD:
        return f"Only {gold['n']} gold items so far: too few to judge accuracy or a decline."
    if active:
        w = weeks[-1]
        why = "since the latest guide change" if w["cause"] == "guide" else "over the last weeks"
        return (
            f"Sustained decline {why}: accuracy is significantly below this rater's own earlier "
            "rate. Check first whether the guide change was trained and the gold answers updated."
        )
    if ever is not None:
        return f"A decline was flagged in the week of {weeks[ever]['week']}; it no longer holds."
    return "No sustained decline: week-to-week changes are within what chance produces."


def _repeats(data, mine, rep, orig, flipped, answers, tokens, slices, guide_of_label) -> dict:
    k = int(flipped[mine].sum()) if mine.size else 0
    out = _interval(k, int(mine.size))
    out["thin"] = out["n"] < MIN_REPEATS
    groups = defaultdict(lambda: {"n": 0, "flipped": 0})
    items = []
    for r_i in mine.tolist():
        li, oi = int(rep[r_i]), int(orig[r_i])
        topic = slices["topic"][oi] or "(no topic)"
        key = (guide_of_label[oi], topic)
        groups[key]["n"] += 1
        if flipped[r_i]:
            groups[key]["flipped"] += 1
            items.append(
                {
                    "unit": str(tokens[li]),
                    "original": _show(answers[oi]),
                    "repeat": _show(answers[li]),
                    "guide": str(guide_of_label[oi]),
                    "topic": topic,
                }
            )
    out["items"] = items[:MAX_FLIPS_LISTED]
    out["n_items_listed"] = min(len(items), MAX_FLIPS_LISTED)
    out["groups"] = [
        {"guide": g, "topic": t, "n": v["n"], "flipped": v["flipped"]}
        for (g, t), v in sorted(groups.items(), key=lambda kv: -kv[1]["flipped"])
    ]
    return out


def _timing(seconds, timed, is_fast, rows, pool_median, fast_cut, pool_fast_share, pool_q):
    mine = rows[timed[rows]]
    if mine.size == 0 or pool_median is None:
        return None
    s = seconds[mine]
    q1, med, q3 = np.percentile(s, [25, 50, 75])
    p1, p3 = pool_q
    n_fast = int(is_fast[mine].sum())
    share = n_fast / mine.size
    flag = bool(mine.size >= 20 and (med < 0.5 * pool_median or (n_fast >= 5 and share >= 0.2)))
    return {
        "n": int(mine.size),
        "rater_median_s": num(med),
        "rater_q1_s": num(q1),
        "rater_q3_s": num(q3),
        "pool_median_s": num(pool_median),
        "pool_q1_s": num(p1),
        "pool_q3_s": num(p3),
        "fast_cutoff_s": num(fast_cut),
        "fast": n_fast,
        "fast_share": num(share),
        "pool_fast_share": num(pool_fast_share) if pool_fast_share is not None else None,
        "flag": flag,
        "reading": (
            f"Median {med:.1f} s per item against the pool's {pool_median:.1f} s; {n_fast} items "
            f"under {fast_cut:.1f} s (a quarter of the pool's median)."
        ),
    }


def _run_row(runs, i):
    if i is None:
        return None
    longest = int(runs.longest[i])
    expected = float(runs.expected_runs[i])
    answer = _show(runs.answer[i])
    flag = bool(longest >= RUN_MIN and expected < RUN_EXPECTED)
    return {
        "longest": longest,
        "answer": answer,
        "n": int(runs.n_labels[i]),
        "expected": num(expected),
        "flag": flag,
        "reading": (
            f"Longest run: {longest} identical answers ('{answer}') in a row; by chance, "
            f"given this rater's own answer shares, about {expected:.2g} such runs are expected."
            if longest >= 2
            else "No answer was given twice in a row."
        ),
    }


def _sides(data, rows, first_judgment, pool_ties):
    mine = rows[first_judgment[rows] & (data.choice[rows] != "")]
    choice = data.choice[mine]
    n = int(mine.size)
    if n == 0:
        return None
    left = int((choice == "left").sum())
    right = int((choice == "right").sum())
    ties = int((choice == "tie").sum())
    p = float(stats.binomtest(left, left + right, 0.5).pvalue) if left + right else None
    tie = _interval(ties, n)
    return {
        "n": n,
        "left": left,
        "right": right,
        "ties": ties,
        "left_share": num(left / (left + right)) if left + right else None,
        "left_p": p,
        "left_flag": bool(p is not None and left + right >= 20 and p < 0.01),
        "tie_rate": tie,
        "pool_tie_rate": pool_ties,
        "tie_flag": bool(
            n >= 20
            and pool_ties is not None
            and tie["ci_low"] is not None
            and tie["ci_low"] > max(2 * pool_ties, pool_ties + 0.1)
        ),
    }


def _tau_violations(data: RaterData, config: ReportConfig) -> dict:
    if data.spa is None or data.spa.size == 0 or not config.spa_both_directions:
        return {}
    tau = config.spa_tau if config.spa_tau is not None else 1.1
    a = data.spa
    out = {}
    fwd = a[~a["reverse"]]
    rev = a[a["reverse"]]
    back = {(int(r["label"]), int(r["comparison"])): float(r["probability"]) for r in rev}
    per = defaultdict(lambda: {"asked": 0, "violations": 0, "worst": 0.0})
    for r in fwd:
        key = (int(r["label"]), int(r["comparison"]))
        if key not in back:
            continue
        total = (float(r["probability"]) + back[key]) / 100.0
        row = per[int(r["annotator"])]
        row["asked"] += 1
        row["worst"] = max(row["worst"], total)
        if total > tau:
            row["violations"] += 1
    for annotator, row in per.items():
        out[annotator] = {**row, "tau": tau}
    return out


def _rows_of_assignments(assignment_id: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Row of each wanted assignment id among `assignment_id` (one label per assignment), or -1
    when it is not there."""
    if assignment_id.size == 0 or wanted.size == 0:
        return np.full(wanted.size, -1, dtype=np.intp)
    order = np.argsort(assignment_id, kind="stable")
    pos = np.minimum(np.searchsorted(assignment_id[order], wanted), assignment_id.size - 1)
    return np.where(assignment_id[order][pos] == wanted, order[pos], -1)


def dawid_skene_fit(snap: Snapshot, config: ReportConfig):
    """(labels, Dawid-Skene fit) on the aggregation section's labels with its call, or None for
    a task without classes. Shared by the rater pages and the triage queue."""
    if config.task_kind not in (
        Study.TaskKind.CATEGORICAL,
        Study.TaskKind.ORDINAL,
        Study.TaskKind.LIKERT,
        Study.TaskKind.PAIRWISE,
    ):
        return False
    t = task_labels(snap, config)
    if t is None or t.labels.size == 0:
        return False
    cap = lm.iteration_cap(t.labels.size)
    return t, lm.dawid_skene(t.items, t.raters, t.labels, max_iter=cap, **DS_KWARGS)


def _dawid_skene(found) -> dict:
    """Per rater: the DS confusion matrix and per-class sensitivity/specificity."""
    if not found:
        return {}
    t, fit = found
    sens, spec = mon.dawid_skene_rater_rates(fit.error_rates, fit.priors)
    classes = [category_label(c) for c in fit.classes.tolist()]
    n_per = np.bincount(np.searchsorted(fit.raters, t.raters), minlength=fit.raters.size)
    out: dict = {
        "_meta": {
            "classes": classes,
            "priors": [num(p) for p in fit.priors],
            "converged": bool(fit.converged),
            "iterations": int(fit.n_iter),
            "reason": fit.reason,
        }
    }
    for j, r in enumerate(fit.raters.tolist()):
        rates = fit.error_rates[j]
        out[int(r)] = {
            "classes": classes,
            "n": int(n_per[j]),
            "cells": [
                {"true": classes[x], "given": classes[y], "rate": num(rates[x, y])}
                for x in range(len(classes))
                for y in range(len(classes))
            ],
            "per_class": [
                {
                    "class": classes[c],
                    "sensitivity": num(sens[j, c]),
                    "specificity": num(spec[j, c]),
                }
                for c in range(len(classes))
            ],
            "converged": bool(fit.converged),
            "reason": fit.reason,
        }
    return out


def _cut_table(annotator, values, counted, is_gold, correct) -> dict:
    """Per rater, one row per value of a cut (slice or guide version): labels counted (production
    and gold), gold items and accuracy with its Wilson interval. Vectorised over raters."""
    raters, r_code = np.unique(annotator, return_inverse=True)
    vals, v_code = np.unique(values.astype(str), return_inverse=True)
    key = r_code * vals.size + v_code
    size = raters.size * vals.size
    labels = np.bincount(key, weights=counted, minlength=size).astype(int)
    gold_n = np.bincount(key, weights=is_gold, minlength=size).astype(int)
    gold_k = np.bincount(key, weights=is_gold & correct, minlength=size).astype(int)
    seen = np.bincount(key, minlength=size) > 0
    low, high = mon.wilson_interval(gold_k, gold_n)
    out: dict = {int(r): [] for r in raters.tolist()}
    for flat in np.flatnonzero(seen).tolist():
        r, v = divmod(flat, vals.size)
        n = int(gold_n[flat])
        out[int(raters[r])].append(
            {
                "value": str(vals[v]) or "(none)",
                "labels": int(labels[flat]),
                "gold_k": int(gold_k[flat]),
                "gold_n": n,
                "gold_rate": num(gold_k[flat] / n) if n else None,
                "gold_ci_low": num(low[flat]),
                "gold_ci_high": num(high[flat]),
            }
        )
    return out


def _pool_cut(data: RaterData, is_gold, correct) -> list[dict]:
    raters, rater_code = np.unique(data.annotator, return_inverse=True)
    pools = np.array([data.pools.get(a, "") for a in raters.tolist()], dtype=object)
    pools = pools[rater_code.reshape(-1)]
    out = []
    for p in sorted(set(pools.tolist())):
        sel = is_gold & (pools == p)
        raters = np.unique(data.annotator[pools == p]).size
        out.append(
            {
                "pool": p or "(none)",
                "raters": int(raters),
                **_interval(int(correct[sel].sum()), int(sel.sum())),
            }
        )
    return out
