"""Speed of htlib.spectra: the power-law fit against ``powerlaw.Fit``, and ``esd`` against ``svdvals``.

Run: ``python benchmarks/bench_spectra.py [--quick]``; prints a markdown table.  Every figure is a
ratio against a baseline timed in the same run:

- ``fit_power_law`` (the vectorized WWFit scan over every candidate ``xmin``) against
  ``powerlaw.Fit`` (one refit per unique candidate) with ``parameter_ranges={"alpha": [1, 1e9]}``
  so that it computes the same plain MLE (powerlaw 2.0 clips alpha to [0, 3] by default), and
  against the candidate-by-candidate NumPy loop of REFERENCE §B.  At N = 16384 powerlaw is timed
  on a block of 200 candidates around the median (tails of about N/2 points, the mean tail length
  of a full scan) and the time is extrapolated to all N - 1 candidates.
- ``esd`` (float64 Gram + symmetric eigensolver) as a fraction of one float32
  ``torch.linalg.svdvals`` call on the same matrix, the floor for any ESD.

WeightWatcher is not installed in this environment, so its own fitter is not timed.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_line, timeit, today  # noqa: E402

from htlib import spectra as S  # noqa: E402


def wwfit_loop(x: np.ndarray) -> float:
    x = np.sort(x[x > 1e-5])
    n = x.size
    best_d, best_a = math.inf, math.nan
    for i in range(n - 1):
        m = n - i
        r = x[i:] / x[i]
        s = float(np.sum(np.log(r)))
        a = 1.0 + m / s if s > 0 else math.inf
        d = 1.0 if (not math.isfinite(a) or a <= 1) else float(np.max(np.abs(1 - r ** (1 - a) - np.arange(m) / m)))
        if d < best_d:
            best_d, best_a = d, a
    return best_a


def powerlaw_fit(x: np.ndarray, **kw):
    import powerlaw

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return powerlaw.Fit(x, verbose=False, parameter_ranges={"alpha": [1.0, 1e9]}, **kw)


def bench_power_law(ns: list[int], full_powerlaw_max: int) -> list[str]:
    rows = ["| N | fit_power_law (s) | powerlaw.Fit (s) | speed-up | NumPy loop (s) | speed-up | alpha rel. diff |",
            "|---:|---:|---:|---:|---:|---:|---:|"]
    for n in ns:
        rng = np.random.default_rng(n)
        W = (rng.pareto(2.0, (n * 3 // 2, n)) + 1.0) * rng.choice([-1.0, 1.0], (n * 3 // 2, n)) if n <= 4096 else None
        x = S.esd(W) if W is not None else rng.pareto(1.5, n) + 1.0  # heavy-tailed Wishart ESD, or Pareto at 16384
        ours = timeit(lambda: S.fit_power_law(x), repeats=3)
        fit = S.fit_power_law(x)
        if n <= full_powerlaw_max:
            t0 = time.perf_counter()
            ref = powerlaw_fit(x)
            t_pl = time.perf_counter() - t0
            diff = f"{abs(ref.power_law.alpha - fit.alpha) / fit.alpha:.1e}"
            note = ""
        else:
            xs = np.sort(x)
            lo, hi = xs[n // 2 - 100], xs[n // 2 + 100]
            t0 = time.perf_counter()
            powerlaw_fit(x, xmin=(lo, hi))
            t_pl = (time.perf_counter() - t0) / 200 * (n - 1)
            diff = "n/a"
            note = " (extrap.)"
        if n <= 4096:
            t0 = time.perf_counter()
            a_loop = wwfit_loop(x)
            t_loop = time.perf_counter() - t0
            assert abs(a_loop - fit.alpha) <= 1e-10 * fit.alpha
            loop = f"{t_loop:.3g} | {t_loop / ours:.0f}x"
        else:
            loop = "- | -"
        rows.append(f"| {n} | {ours:.3g} | {t_pl:.3g}{note} | {t_pl / ours:.0f}x | {loop} | {diff} |")
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


def bench_esd(shapes: list[tuple[int, int]]) -> list[str]:
    rows = ["| shape (float32) | esd (s) | torch.linalg.svdvals (s) | esd / svdvals | max rel. diff |",
            "|---|---:|---:|---:|---:|"]
    for h, d in shapes:
        W = torch.randn(h, d, generator=torch.Generator().manual_seed(h + d))
        t_esd = timeit(lambda: S.esd(W), repeats=3)
        t_svd = timeit(lambda: torch.linalg.svdvals(W), repeats=3)
        ref = np.sort(torch.linalg.svdvals(W.double()).numpy() ** 2)
        err = float(np.max(np.abs(S.esd(W) - ref)) / ref[-1])
        rows.append(f"| {h} x {d} | {t_esd:.3g} | {t_svd:.3g} | {t_esd / t_svd:.2f} | {err:.1e} |")
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


def bench_report(shapes: list[tuple[int, int]]) -> list[str]:
    """Cost of the one spectrum report against its parts: ``analyze_spectrum`` is one ``fit_power_law`` plus
    one ``fit_mp`` plus O(N) bookkeeping, so its time should be within a few percent of their sum."""
    from htlib import random_matrices as R

    rows = ["| shape | family | analyze_spectrum (s) | fit_power_law + fit_mp (s) | ratio |", "|---|---|---:|---:|---:|"]
    for h, d in shapes:
        for name in ("gaussian", "t3", "rank60"):
            x = S.esd(R.labelled_matrix(name, h, d, seed=0))
            t_rep = timeit(lambda: S.analyze_spectrum(x, d / h), repeats=5)
            t_parts = timeit(lambda: (S.fit_power_law(x), S.fit_mp(x, d / h)), repeats=5)
            rows.append(f"| {h} x {d} | {name} | {t_rep:.3g} | {t_parts:.3g} | {t_rep / t_parts:.2f} |")
            print(rows[-1], file=sys.stderr, flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N = 1000 and the small ESD only")
    args = ap.parse_args()
    ns = [1000] if args.quick else [1000, 4096, 16384]
    shapes = [(1500, 1000)] if args.quick else [(1500, 1000), (4096, 4096)]
    print(f"Spectra benchmark, {today()}, {machine_line()}\n")
    print("\n".join(bench_power_law(ns, full_powerlaw_max=4096)))
    print()
    print("\n".join(bench_esd(shapes)))
    print()
    print("\n".join(bench_report([(1500, 1000)] if args.quick else [(1500, 1000), (4096, 4096)])))


if __name__ == "__main__":
    main()
