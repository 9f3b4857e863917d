"""How many EM iterations Dawid-Skene needs on small studies (why the cap is 10,000, not 100).

Seeded designs like a small categorical study: 40 items, 3 labels each from 6 raters, 35% of
items in the rare class, raters right 72% of the time. Prints the share that needs more than
100 iterations, the median / p90 / max iterations, whether all converged, and the slowest fit.
Run: .venv/bin/python bench/ds_iterations.py [n_designs]
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis import labelmodels  # noqa: E402


def design(seed: int, n_items=40, n_raters=6, overlap=3, accuracy=0.72, rare=0.35):
    rng = np.random.default_rng(seed)
    truth = (rng.random(n_items) < rare).astype(int)
    items = np.repeat(np.arange(n_items), overlap)
    raters = np.concatenate([rng.choice(n_raters, overlap, replace=False) for _ in truth])
    right = rng.random(items.size) < accuracy
    labels = np.where(right, truth[items], 1 - truth[items])
    return items, raters, labels


def main(n: int = 200) -> None:
    iterations, converged, seconds = [], [], []
    for seed in range(n):
        items, raters, labels = design(seed)
        started = time.perf_counter()
        fit = labelmodels.dawid_skene(items, raters, labels)
        seconds.append(time.perf_counter() - started)
        iterations.append(fit.n_iter)
        converged.append(fit.converged)
    it = np.array(iterations)
    print(f"designs: {n}; converged: {sum(converged)} (cap {labelmodels.DS_MAX_ITER})")
    print(f"need > 100 iterations: {(it > 100).mean():.1%}")
    print(
        f"iterations: median {np.median(it):.0f}, p90 {np.percentile(it, 90):.0f}, max {it.max()}"
    )
    print(f"slowest fit: {max(seconds) * 1000:.0f} ms; median {np.median(seconds) * 1000:.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
