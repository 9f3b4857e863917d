"""Benchmark: majority vote, Dawid-Skene and rater severity on up to 5M labels, vs crowd-kit.

Run: .venv/bin/python bench/labelmodels.py [--sizes 50000 500000 5000000] [--ck-iters 5]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis import labelmodels, severity  # noqa: E402

N_RATERS, N_CLASSES, PER_ITEM = 1000, 5, 5
DS_MAX_ITER = 5000  # 500k labels needs ~1,200 EM iterations (see the DS iterations section)


def generate(n_labels: int, seed: int = 0):
    """Seeded integer-coded design: n_labels / 5 items, 5 random raters each (repeats allowed),
    rows shuffled; raters with accuracy U(0.55, 0.95), 5% spammers; errors uniform over the
    other classes. Also scores for the severity model (offsets SD 0.3, item SD 1, noise SD 1)."""
    rng = np.random.default_rng(seed)
    n_items = n_labels // PER_ITEM
    n = n_items * PER_ITEM
    items = rng.permutation(np.repeat(np.arange(n_items), PER_ITEM))
    raters = rng.integers(0, N_RATERS, n)
    priors = np.array([0.35, 0.25, 0.2, 0.12, 0.08])
    truth = rng.choice(N_CLASSES, n_items, p=priors)
    accuracy = rng.uniform(0.55, 0.95, N_RATERS)
    accuracy[: N_RATERS // 20] = 1 / N_CLASSES
    t = truth[items]
    correct = rng.random(n) < accuracy[raters]
    labels = np.where(correct, t, (t + rng.integers(1, N_CLASSES, n)) % N_CLASSES)
    offsets = rng.normal(0, 0.3, N_RATERS)
    scores = 3 + rng.normal(0, 1, n_items)[items] + offsets[raters] + rng.normal(0, 1, n)
    return items, raters, labels, scores, truth


def timed(fn, repeat=1):
    """Median wall time over `repeat` calls (after the first, which is also timed) and result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times[0], result


def peak_mib(fn) -> float:
    """Peak of traced allocations during fn (numpy/scipy buffers included), inputs excluded."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def _one_size(n, items, raters, labels, scores, truth):
    mv_t, mv_first, mv = timed(lambda: labelmodels.majority_vote(items, raters, labels), 3)
    ds_t, ds_first, ds = timed(
        lambda: labelmodels.dawid_skene(items, raters, labels, max_iter=DS_MAX_ITER), 3
    )
    sv_t, sv_first, _ = timed(lambda: severity.rater_offsets(items, raters, scores), 3)
    print(
        f"{n:>10,} {mv_t:>7.3f} ({mv_first:.3f}) {ds_t:>9.2f} ({ds_first:.2f}) "
        f"{ds.n_iter:>6} {'yes' if ds.converged else 'NO':>5} {ds_t / ds.n_iter:>7.4f} "
        f"{sv_t:>7.3f} ({sv_first:.3f}) "
        f"{np.mean(ds.item_labels == truth):>7.4f} {np.mean(mv.item_labels == truth):>7.4f}"
    )
    return mv_t, ds_t, ds.n_iter, sv_t, _slow_em(items, raters, labels, ds)


def _slow_em(items, raters, labels, ds) -> str:
    """Why EM took as long as it did: the parameter still moving most at the stop, its value,
    and the iterations a small smoothing (an interior MLE) needs."""
    # one more EM step from the final posteriors: its M-step reproduces ds.error_rates exactly
    step = labelmodels.dawid_skene(items, raters, labels, init=ds.posteriors, max_iter=1, tol=0.0)
    moved = np.abs(np.nan_to_num(step.error_rates) - np.nan_to_num(ds.error_rates))
    j, k, given = np.unravel_index(np.argmax(moved), moved.shape)
    value = ds.error_rates[j, k, given]
    n_j = int(np.count_nonzero(raters == ds.raters[j]))
    gain = ds.log_likelihood_trace[-1] - ds.log_likelihood_trace[max(0, ds.n_iter - 101)]
    smooth = labelmodels.dawid_skene(items, raters, labels, max_iter=DS_MAX_ITER, smoothing=0.01)
    return (
        f"{ds.n_iter} iterations{'' if ds.converged else ' (NOT converged)'}; log-likelihood "
        f"gain over the last 100: {gain:.1e}; slowest: rater {ds.raters[j]} true "
        f"{ds.classes[k]} -> {ds.classes[given]}, rate {value:.1e} moving "
        f"{moved[j, k, given]:.1e} per iteration ({n_j} labels); "
        f"smoothing=0.01: {smooth.n_iter} iterations"
    )


def ours(sizes):
    print("## Concord (analysis.*), median of 3 runs (first run in parentheses);")
    print("## DS from eq. 3.1 to convergence: max |change| of priors and error rates < 1e-6")
    print(
        f"{'labels':>10} {'MV s':>14} {'DS s (tol 1e-6)':>18} {'iters':>6} {'conv':>5} "
        f"{'s/iter':>7} {'severity s':>14} {'DS acc':>7} {'MV acc':>7}"
    )
    rows = {}
    for n in sizes:
        data = generate(n)
        rows[n] = _one_size(n, *data)
    big = max(sizes)
    items, raters, labels, scores, _ = generate(big)
    mv_mib = peak_mib(lambda: labelmodels.majority_vote(items, raters, labels))
    ds_mib = peak_mib(lambda: labelmodels.dawid_skene(items, raters, labels))
    sv_mib = peak_mib(lambda: severity.rater_offsets(items, raters, scores))
    print(
        "\n## DS iterations: EM is slow where an error rate's MLE is 0 but some label still "
        "carries posterior\n## mass there (a property of the data, not of the stopping rule)"
    )
    for n in sizes:
        print(f"{n:>10,}: {rows[n][4]}")
    print(f"\n## Peak traced memory at {big:,} labels (inputs excluded)")
    print(
        f"majority_vote {mv_mib:.0f} MiB; dawid_skene {ds_mib:.0f} MiB; "
        f"rater_offsets {sv_mib:.0f} MiB"
    )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process max RSS so far (data + all runs, before crowd-kit): {rss:.0f} MiB")
    small, large = min(sizes), big
    if small != large:
        f = large / small
        print(f"\n## Growth {small:,} -> {large:,} labels (x{f:.0f})")
        for name, k in (("majority_vote", 0), ("dawid_skene", 1), ("rater_offsets", 3)):
            print(f"{name}: x{rows[large][k] / rows[small][k]:.1f} time")
        per_iter = (rows[large][1] / rows[large][2]) / (rows[small][1] / rows[small][2])
        print(f"dawid_skene per iteration: x{per_iter:.1f}")
    return rows


def crowdkit(n, n_iter, rows):
    import pandas as pd
    from crowdkit.aggregation import DawidSkene, MajorityVote

    items, raters, labels, _, _ = generate(n)
    frame = pd.DataFrame({"task": items, "worker": raters, "label": labels})
    print(f"\n## crowd-kit 1.4.2 at {n:,} labels (fit only; DataFrame built outside the timer)")
    ck_mv_t, _, _ = timed(lambda: MajorityVote().fit(frame), 1)
    mv_t = (
        rows[n][0]
        if n in rows
        else timed(lambda: labelmodels.majority_vote(items, raters, labels), 3)[0]
    )
    print(f"MajorityVote {ck_mv_t:.2f} s vs ours {mv_t:.3f} s: x{ck_mv_t / mv_t:.0f}")

    start = time.perf_counter()
    ck = DawidSkene(n_iter=n_iter, tol=-np.inf).fit(frame)
    ck_t = time.perf_counter() - start
    our_t, _, ds = timed(
        lambda: labelmodels.dawid_skene(items, raters, labels, tol=0.0, max_iter=n_iter), 3
    )
    probas = ck.probas_.loc[ds.items, ds.classes].to_numpy()
    diff = np.abs(probas - ds.posteriors).max()
    print(f"DawidSkene, {n_iter} EM iterations each, same init (eq. 3.1 = MajorityVote probas):")
    print(
        f"  crowd-kit {ck_t:.1f} s vs ours {our_t:.3f} s: x{ck_t / our_t:.0f}; "
        f"max |posterior difference| = {diff:.2e}"
    )
    if n in rows:
        _, ds_conv, iters, _, _ = rows[n]
        per_iter_ck = ck_t / n_iter
        print(
            f"  ours to convergence (tol 1e-6): {ds_conv:.2f} s, {iters} iterations; crowd-kit "
            f"for {iters} iterations extrapolated from its per-iteration time: "
            f"~{per_iter_ck * iters:.0f} s (x{per_iter_ck * iters / ds_conv:.0f})"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[50_000, 500_000, 5_000_000])
    parser.add_argument("--ck-iters", type=int, default=5, help="crowd-kit DS iterations")
    parser.add_argument("--ck-size", type=int, default=None, help="labels for crowd-kit runs")
    parser.add_argument("--skip-crowdkit", action="store_true")
    args = parser.parse_args()
    print(
        f"{N_RATERS} raters, {N_CLASSES} classes, {PER_ITEM} labels per item; numpy "
        f"{np.__version__}"
    )
    rows = ours(sorted(args.sizes))
    if not args.skip_crowdkit:
        crowdkit(args.ck_size or max(args.sizes), args.ck_iters, rows)


if __name__ == "__main__":
    main()
