"""Speed of htlib.htmp: the density against mpmath, the KS fit and the sampler; and the cost of
the HTMP chapter's training runs (one SGD epoch of LeNet and MiniAlexNet on MNIST-5k).

Run: ``python benchmarks/bench_htmp.py``.  Prints markdown tables.  Every figure is a ratio
against a baseline timed in the same run: mpmath's evaluation of the same closed form (at its
default 15 digits and at the 30 digits of the tests), and for the fit and the sampler one
dense ``eigvalsh`` of a 1000 x 1000 float64 matrix (the cost of computing one layer's ESD).
"""

from __future__ import annotations

import sys
from pathlib import Path

import mpmath as mp
import numpy as np
import scipy.linalg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_line, timeit, today  # noqa: E402

from htlib import htmp as H  # noqa: E402


def mp_pdf(x: float, kappa: float, gamma: float, dps: int) -> float:
    with mp.workdps(dps):
        k, g, x = mp.mpf(kappa), mp.mpf(gamma), mp.mpf(x)
        beta = k / (2 * g)
        t = beta * x
        d = k * (1 - g) / (2 * g)
        u = mp.hyperu(k / 2, 1 - d, -t)
        return float(beta / (mp.gamma(k / 2 + 1) * mp.gamma(k / (2 * g))) * t ** (d - 1) * mp.exp(-t) / abs(u) ** 2)


def main() -> None:
    print(f"HTMP benchmarks, {today()}, {machine_line()}\n")
    xs = np.linspace(0.01, 4.0, 1000)
    sub = xs[::20]  # mpmath is timed on 50 points and scaled to 1000
    print("| kappa, gamma | htmp_pdf, 1000 pts | mpmath 15 digits (per pt) | speed-up | mpmath 30 digits (per pt) | speed-up | max rel. err. vs mpmath-30 |")
    print("|---|---|---|---|---|---|---|")
    for kappa, gamma in [(0.5, 0.3255), (5.5, 0.3255), (20.0, 0.3255), (2.0, 0.5), (100.3, 0.5)]:
        t_fast = timeit(lambda: H.htmp_pdf(xs, kappa, gamma), repeats=5)
        t15 = timeit(lambda: [mp_pdf(x, kappa, gamma, 15) for x in sub], repeats=1, warmup=0) / sub.size
        t30 = timeit(lambda: [mp_pdf(x, kappa, gamma, 30) for x in sub], repeats=1, warmup=0) / sub.size
        ref = np.array([mp_pdf(x, kappa, gamma, 30) for x in sub])
        ours = H.htmp_pdf(sub, kappa, gamma)
        ok = ref > 1e-300
        err = float(np.max(np.abs(ours[ok] / ref[ok] - 1)))
        print(f"| {kappa:g}, {gamma:g} | {t_fast * 1e3:.1f} ms | {t15 * 1e3:.2f} ms | {1000 * t15 / t_fast:.0f}x "
              f"| {t30 * 1e3:.2f} ms | {1000 * t30 / t_fast:.0f}x | {err:.1e} |")

    # large kappa (issue 16): per-point cost against mpmath-30 on bulk points where mpmath converges;
    # outside htmp.EXACT_RANGE the density refuses (mpmath: NoConvergence at kappa = 1e4), so the last row is the
    # range's corner kappa = 500, beta = kappa / (2 gamma) = 1e4
    print("\n| kappa, gamma | htmp_pdf per pt (bulk, 5 pts) | mpmath-30 per pt | speed-up | upper tail x = 5, 20 (per call) |")
    print("|---|---|---|---|---|")
    bulk = np.array([0.3, 0.7, 1.0, 1.5, 2.0])
    for kappa, gamma in [(300.3, 0.5), (600.3, 0.5), (999.7, 0.5), (999.7, 0.9), (500.0, 0.025)]:
        H._approx_cdf_grid.cache_clear()
        t_ours = timeit(lambda: H.htmp_pdf(bulk, kappa, gamma), repeats=3) / bulk.size
        t_tail = timeit(lambda: H.htmp_pdf(np.array([5.0, 20.0]), kappa, gamma), repeats=1)
        try:
            t_mp = timeit(lambda: [mp_pdf(x, kappa, gamma, 30) for x in bulk[:2]], repeats=1, warmup=0) / 2
            ratio = f"{t_mp / t_ours:.0f}x"
            t_mp_s = f"{t_mp * 1e3:.0f} ms"
        except Exception as exc:  # mpmath gives up at large kappa
            ratio, t_mp_s = "n/a", f"fails ({type(exc).__name__})"
        print(f"| {kappa:g}, {gamma:g} | {t_ours * 1e3:.2f} ms | {t_mp_s} | {ratio} | {t_tail * 1e3:.0f} ms |")

    rng = np.random.default_rng(0)
    A = rng.standard_normal((1000, 1000))
    S = A @ A.T
    t_eig = timeit(lambda: scipy.linalg.eigvalsh(S), repeats=3)
    print(f"\nbaseline: dense eigvalsh 1000 x 1000 float64 = {t_eig:.3f} s\n")
    print("| task | time | / eigvalsh(1000) |")
    print("|---|---|---|")
    for kappa in (2.0, 5.5):
        lam = H.sample_htmp(1000, kappa, 0.3255, seed=1)
        H._approx_cdf_grid.cache_clear()
        t_fit = timeit(lambda: H.fit_htmp(lam, 0.3255), repeats=3, warmup=0)
        print(f"| fit_htmp, 1000 eigenvalues (kappa = {kappa:g}) | {t_fit:.2f} s | {t_fit / t_eig:.1f} |")
    W = rng.standard_normal((3072, 1000))
    lam = np.linalg.eigvalsh(W.T @ W)
    t_fit = timeit(lambda: H.fit_htmp(lam, 1000 / 3072), repeats=3, warmup=0)
    print(f"| fit_htmp, 1000 eigenvalues (Gaussian, MP) | {t_fit:.2f} s | {t_fit / t_eig:.1f} |")
    t_l1 = timeit(lambda: H.fit_htmp_l1(lam, 1000 / 3072), repeats=3, warmup=0)
    print(f"| fit_htmp_l1 (min-shifted histogram L1), same eigenvalues | {t_l1:.2f} s | {t_l1 / t_eig:.1f} |")
    for n in (1000, 10000):
        t_s = timeit(lambda: H.sample_htmp(n, 5.5, 0.3255, seed=0), repeats=3)
        print(f"| sample_htmp n = {n} (kappa = 5.5) | {t_s:.2f} s | {t_s / t_eig:.1f} |")
    t_s = timeit(lambda: H.sample_htmp(10000, 0.5, 0.3255, seed=0), repeats=3)
    print(f"| sample_htmp n = 10000 (kappa = 0.5) | {t_s:.2f} s | {t_s / t_eig:.1f} |")
    training_costs(t_eig)


def training_costs(t_eig: float) -> None:
    """One SGD epoch over 1,000 MNIST-5k images (plus the accuracy passes over them and 500 test
    images), per architecture and batch size, with one thread, as on the chapter's workers: the unit
    of the HTMP chapter's budget.  ``bench_small_nets.py`` gives the same training as a fraction of
    the same-run convolution / GEMM rate."""
    import torch

    from htlib.small_nets import SmallNetConfig, train_small_net

    torch.set_num_threads(1)
    print(f"\ntorch {torch.__version__}, {torch.get_num_threads()} thread\n")
    print("| one epoch, 1,000 images, 500 test | time | / eigvalsh(1000) |")
    print("|---|---|---|")
    for model in ("lenet", "minialexnet"):
        for batch in (1000, 100):
            cfg = SmallNetConfig(model=model, dataset="mnist5k", batch_size=batch, epochs=1, n_train=1000, n_test=500)
            t = timeit(lambda: train_small_net(cfg), repeats=2, warmup=1)
            print(f"| {model}, batch {batch} | {t:.2f} s | {t / t_eig:.1f} |")


if __name__ == "__main__":
    main()
