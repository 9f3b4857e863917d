"""Benchmark analysis.agreement on seeded synthetic long-format data against reference libraries.

Run: .venv/bin/python bench/agreement.py [--full] [--items N]; --full runs slow baselines full size.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis import agreement as ag  # noqa: E402

MIB = 1024 * 1024
ROWS: list[tuple[str, str, float, float, str]] = []


def make_labels(n_items, n_raters=1000, per_item=5, n_cats=5, seed=0):
    """Items 0..I-1 (grouped), `per_item` distinct raters each, labels = truth with 30% noise."""
    rng = np.random.default_rng(seed)
    items = np.repeat(np.arange(n_items, dtype=np.int64), per_item)
    gaps = rng.integers(1, n_raters // per_item, size=(n_items, per_item))
    gaps[:, 0] = rng.integers(0, n_raters, size=n_items)
    raters = (np.cumsum(gaps, axis=1) % n_raters).ravel().astype(np.int64)  # distinct per item
    truth = np.repeat(rng.integers(0, n_cats, size=n_items), per_item)
    noise = rng.random(items.size) < 0.3
    labels = np.where(noise, rng.integers(0, n_cats, size=items.size), truth).astype(np.int64)
    return items, raters, labels


def make_scores(n_items, n_raters=5, seed=1):
    rng = np.random.default_rng(seed)
    items = np.repeat(np.arange(n_items, dtype=np.int64), n_raters)
    raters = np.tile(np.arange(n_raters, dtype=np.int64), n_items)
    bias = rng.normal(0, 0.5, n_raters)
    scores = np.repeat(rng.normal(5, 2, n_items), n_raters) + bias[raters]
    scores += rng.normal(0, 1, items.size)
    return items, raters, scores


def measure(fn, repeat=1):
    """(result, best wall time in s, tracemalloc peak MiB of the allocations during one call)."""
    best = float("inf")
    result = None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    del result
    gc.collect()
    tracemalloc.start()
    result = fn()
    peak = tracemalloc.get_traced_memory()[1] / MIB
    tracemalloc.stop()
    return result, best, peak


def report(dataset, name, seconds, peak, note=""):
    ROWS.append((dataset, name, seconds, peak, note))
    print(f"{dataset:<6} {name:<44} {seconds:9.3f} s {peak:9.1f} MiB  {note}", flush=True)


def check(ours, theirs, what):
    diff = abs(float(ours) - float(theirs))
    ok = diff <= 1e-9 or (np.isnan(ours) and np.isnan(theirs))
    return f"{what}: |diff|={diff:.1e} {'OK' if ok else 'MISMATCH'}"


def value_counts(items, labels, n_items, n_cats):
    return np.bincount(items * n_cats + labels, minlength=n_items * n_cats).reshape(n_items, n_cats)


def run_ours(tag, items, raters, labels, repeat):
    out = {}
    for name, fn in [
        ("percent_agreement", lambda: ag.percent_agreement(items, raters, labels)),
        ("fleiss_kappa", lambda: ag.fleiss_kappa(items, raters, labels)),
        *[
            (f"krippendorff_alpha[{lvl}]", lambda lvl=lvl: ag.krippendorff_alpha(
                items, raters, labels, level=lvl))
            for lvl in ag.LEVELS
        ],
        ("specific_agreement", lambda: ag.specific_agreement(items, raters, labels)),
        ("preference_agreement", lambda: ag.preference_agreement(items, raters, labels)),
        ("label_distribution", lambda: ag.label_distribution(items, raters, labels)),
        ("pairwise_kappas (all rater pairs)", lambda: ag.pairwise_kappas(items, raters, labels)),
    ]:  # fmt: skip
        res, sec, peak = measure(fn, repeat)
        out[name] = res
        extra = f"value={res.value:.6f}"
        if name.startswith("pairwise"):
            extra += f" pairs={res.kappa.size}"
        report(tag, "concord " + name, sec, peak, extra)
    return out


def ratio_note(ours_value, theirs_value, their_sec, our_sec, what="vs concord"):
    return f"{check(ours_value, theirs_value, what)}; concord {their_sec / our_sec:.1f}x faster"


def our_time(tag, suffix):
    return next(r[2] for r in ROWS if r[0] == tag and r[1].endswith(suffix))


def bench_krippendorff(tag, items, raters, labels, n, ours, full, ratios):
    """The krippendorff package: value-counts path at full size, raters x items call scaled."""
    import krippendorff

    counts = value_counts(items, labels, n, 5)
    for lvl in ag.LEVELS:
        mine_sec = our_time(tag, f"[{lvl}]")

        def call(lvl=lvl, counts=counts):
            return krippendorff.alpha(
                value_counts=counts, value_domain=np.arange(5), level_of_measurement=lvl
            )

        val, sec, peak = measure(call, 3)
        mine = ours[f"krippendorff_alpha[{lvl}]"].value
        report(tag, f"krippendorff value_counts [{lvl}]", sec, peak,
               ratio_note(mine, val, sec, mine_sec))  # fmt: skip
        ratios.append((tag, f"alpha[{lvl}] vs krippendorff value_counts", sec / mine_sec))
    del counts

    sub = n if (full or n <= 10_000) else n // 10
    keep = items < sub
    si, sr, sl = items[keep], raters[keep], labels[keep]
    matrix = np.full((1000, sub), np.nan)
    matrix[sr, si] = sl
    scale = n / sub
    for lvl in ("nominal", "interval") if sub < n else ag.LEVELS:
        mine = ag.krippendorff_alpha(si, sr, sl, level=lvl)

        def call(lvl=lvl, matrix=matrix):
            return krippendorff.alpha(reliability_data=matrix, level_of_measurement=lvl)

        val, sec, peak = measure(call)
        mine_full = our_time(tag, f"[{lvl}]")
        note = check(mine.value, val, "vs concord (same subset)")
        if scale > 1:
            note += (
                f"; x{scale:.0f} extrapolated: {sec * scale:.1f} s {peak * scale / 1024:.1f} GiB"
            )
        note += f"; concord {sec * scale / mine_full:.0f}x faster"
        report(tag, f"krippendorff raters x items [{lvl}] {sub} items", sec, peak, note)
        ratios.append(
            (tag, f"alpha[{lvl}] vs krippendorff raters x items", sec * scale / mine_full)
        )


def bench_statsmodels(tag, labels, n, ours, ratios):
    """statsmodels: aggregate_raters on the items x 5 label table, then fleiss_kappa."""
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    wide = labels.reshape(n, 5)
    val, sec, peak = measure(lambda: fleiss_kappa(aggregate_raters(wide)[0]), 3)
    mine_sec = our_time(tag, "concord fleiss_kappa")
    report(tag, "statsmodels aggregate_raters+fleiss_kappa", sec, peak,
           ratio_note(ours["fleiss_kappa"].value, val, sec, mine_sec))  # fmt: skip
    ratios.append((tag, "fleiss_kappa vs statsmodels", sec / mine_sec))


def bench_sklearn_pairs(tag, items, raters, labels, ours, ratios):
    """scikit-learn cohen_kappa_score on a sample of rater pairs, extrapolated to all pairs."""
    import pandas as pd
    from sklearn.metrics import cohen_kappa_score

    res = ours["pairwise_kappas (all rater pairs)"]
    n_sample = min(res.kappa.size, 300)
    sample = np.random.default_rng(7).choice(res.kappa.size, size=n_sample, replace=False)
    frame = pd.DataFrame({"i": items, "r": raters, "l": labels})
    groups = {r: g.set_index("i")["l"] for r, g in frame.groupby("r")}
    worst = 0.0
    t0 = time.perf_counter()
    for p in sample:
        a, b = groups[res.rater_a[p]], groups[res.rater_b[p]]
        shared = a.index.intersection(b.index)
        k = cohen_kappa_score(a.loc[shared].to_numpy(), b.loc[shared].to_numpy())
        if np.isfinite(k) or np.isfinite(res.kappa[p]):
            worst = max(worst, abs(k - res.kappa[p]))
    sec = time.perf_counter() - t0
    full = sec * res.kappa.size / n_sample
    mine_sec = our_time(tag, "(all rater pairs)")
    note = (
        f"max |diff| vs concord {worst:.1e}; all {res.kappa.size} pairs extrapolated "
        f"{full:.0f} s; concord {full / mine_sec:.0f}x faster"
    )
    report(tag, f"sklearn cohen_kappa_score {n_sample} pairs", sec, float("nan"), note)
    ratios.append((tag, "pairwise_kappas vs sklearn (extrapolated)", full / mine_sec))


def bench_cohen(n_items, ratios):
    """Two raters over n_items items: Concord vs scikit-learn, unweighted and quadratic."""
    from sklearn.metrics import cohen_kappa_score

    tag = f"{2 * n_items / 1e6:g}M"
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 5, n_items)
    y1 = np.where(rng.random(n_items) < 0.3, rng.integers(0, 5, n_items), truth)
    y2 = np.where(rng.random(n_items) < 0.3, rng.integers(0, 5, n_items), truth)
    items = np.concatenate([np.arange(n_items), np.arange(n_items)])
    raters = np.repeat([0, 1], n_items)
    labels = np.concatenate([y1, y2])
    for weights in (None, "quadratic"):
        res, sec, peak = measure(
            lambda w=weights: ag.cohen_kappa(items, raters, labels, weights=w), 3
        )
        report(tag, f"concord cohen_kappa weights={weights}", sec, peak, f"value={res.value:.6f}")
        val, sec2, peak2 = measure(lambda w=weights: cohen_kappa_score(y1, y2, weights=w))
        report(tag, f"sklearn cohen_kappa_score weights={weights}", sec2, peak2,
               ratio_note(res.value, val, sec2, sec))  # fmt: skip
        ratios.append((tag, f"cohen_kappa[{weights}] vs sklearn", sec2 / sec))


def bench_icc(n_items, ratios):
    """ICC on n_items items x 5 raters: Concord's six forms vs one pingouin call (all forms)."""
    import pandas as pd
    import pingouin

    tag = f"{5 * n_items / 1e6:g}M"
    items, raters, scores = make_scores(n_items)
    mine = {}
    for form in ag.ICC_FORMS:
        res, sec, peak = measure(lambda f=form: ag.icc(items, raters, scores, form=f), 3)
        mine[form] = (res, sec)
        report(tag, f"concord icc {form}", sec, peak, f"value={res.value:.6f}")
    frame = pd.DataFrame({"t": items, "r": raters, "s": scores})
    pingouin.options["round.column.CI95"] = None
    table, sec, peak = measure(lambda: pingouin.intraclass_corr(frame, "t", "r", "s"))
    table = table.set_index("Type")
    names = ["ICC(1,1)", "ICC(A,1)", "ICC(C,1)", "ICC(1,k)", "ICC(A,k)", "ICC(C,k)"]
    worst = max(
        abs(mine[f][0].value - table.loc[name, "ICC"])
        for f, name in zip(ag.ICC_FORMS, names, strict=True)
    )
    all_six = sum(s for _, s in mine.values())
    note = f"max |diff| vs concord {worst:.1e}; concord {sec / all_six:.0f}x faster (six calls)"
    report(tag, "pingouin intraclass_corr (all six forms)", sec, peak, note)
    ratios.append((tag, "icc (six forms) vs pingouin", sec / all_six))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="run every baseline at full size")
    parser.add_argument("--items", type=int, default=1_000_000)
    args = parser.parse_args()
    n_items = args.items
    warnings.filterwarnings("ignore")  # scikit-learn warns on every undefined pairwise kappa
    print(f"numpy {np.__version__}; peak = tracemalloc peak of allocations during the call (MiB)")
    print(f"{'data':<6} {'function':<44} {'time':>11} {'peak':>13}")
    ratios = []
    for tag, n in [("50k", 10_000), (f"{5 * n_items / 1e6:g}M", n_items)]:
        items, raters, labels = make_labels(n)
        ours = run_ours(tag, items, raters, labels, 5 if n <= 10_000 else 3)
        bench_krippendorff(tag, items, raters, labels, n, ours, args.full, ratios)
        bench_statsmodels(tag, labels, n, ours, ratios)
        bench_sklearn_pairs(tag, items, raters, labels, ours, ratios)
        del ours
    bench_cohen(n_items, ratios)
    bench_icc(n_items, ratios)

    items, raters, labels = make_labels(10_000)
    res, sec, peak = measure(
        lambda: ag.bootstrap(ag.krippendorff_alpha, items, raters, labels, n_boot=1000)
    )
    report("50k", "concord bootstrap alpha, 1000 replicates", sec, peak,
           f"alpha={res.value:.4f} [{res.ci_low:.4f}, {res.ci_high:.4f}]")  # fmt: skip

    print("\nSide-by-side speed-ups (reference time / concord time):")
    for tag, what, ratio in ratios:
        print(f"  {tag:<4} {what:<50} {ratio:10.1f}x")


if __name__ == "__main__":
    main()
