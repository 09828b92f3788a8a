"""Linear-network Hessians: the exact GGN route against LOBPCG on Hessian-vector products.

Networks (balanced weights, labels ``Y = f(X)``, so the loss is zero and the Hessian equals the GGN):

* ``digits``: 4-layer width-64 linear MLP on whitened digits (n=1797, d0=64, dL=10; 12,928 parameters);
  ``M`` is 640 x 640; on the row space of X (rank 61) ``ggn_spectrum`` diagonalizes a 610 x 610 matrix densely.
* ``mnist5k``: the same net on whitened MNIST-5k (n=5000, d0=784; 59,008 parameters); ``M`` is
  7840 x 7840; ``ggn_spectrum`` runs Lanczos on the row space of X (rank 653: 6530 x 6530), matrix-free,
  with products through ``W1`` (``O(d1 r dL)`` each).  It is timed from ``X`` (one ``X^T X`` and one
  ``eigh``, most of its time) and from a precomputed ``htlib.linear.FeatureGram`` (reused across calls).

For each: the top-10 by ``htlib.linear.ggn_spectrum`` (the exact route) and by
``scipy.sparse.linalg.lobpcg`` on autograd Hessian-vector products of the full-data loss (the route
PyHessian-style tools take; tol 1e-8), each as the median of ``--repeats`` (default 5) timed calls after
one warm-up, with one BLAS/torch thread and again with two.  The error of each method against the dense
reference is printed next to its time, and the 1-minute load average is printed next to every figure:
a ratio measured on a loaded machine is not a record.  Optionally (``--power``) PyHessian-style power
iteration on the sufficient-statistics HVP against LOBPCG on the same HVP.  With ``--chapter``: the wall
time of ``book/linear_hessian.ipynb`` at default parameters with an empty result cache (papermill).

With ``--train``: the wall and CPU time of ``htlib.linear.train_gd`` for the chapter's two linear shapes on
whitened MNIST-5k (4-layer width-64 and 2-layer width-256, 2,000 epochs, one thread), i.e. the cost of one epoch
of the sufficient-statistics trainer on the row space (rank 653 of 784 pixels).

Run: ``python benchmarks/bench_linear.py [--repeats 5] [--cases digits,mnist5k] [--power] [--train] [--chapter]``;
prints markdown tables.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(__file__))
from _common import machine_line, today  # noqa: E402

from htlib import linear as lin  # noqa: E402
from htlib.experiments import linear_hessian as lh  # noqa: E402


def setup(case: str):
    n = {"digits": 1797, "mnist5k": 5000}[case]
    X, _, _ = lh.prepare_data(case, n, None)
    dims = [X.shape[1], 64, 64, 64, 10]
    s = np.random.default_rng(0).uniform(0.2, 1.0, 10)
    Ws = lin.balanced_weights(dims, s, seed=1)
    Y = X
    for W in Ws:
        Y = Y @ W.T
    return X, Y, Ws


def relerr(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / abs(b[0]))


def load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def median_time(fn, repeats: int) -> tuple[float, object, str]:
    """Median wall time over ``repeats`` calls after one warm-up; the last result; the load average."""
    out = fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out, load()


def bench_case(case: str, threads: int, repeats: int, rows: list, ratios: list) -> None:
    X, Y, Ws = setup(case)
    Xt, Yt = torch.as_tensor(X), torch.as_tensor(Y)
    params = [torch.as_tensor(W) for W in Ws]
    reference = lin.ggn_spectrum(Ws, X, method="dense")[:10] if X.shape[1] * 10 <= 2500 else None
    t_ex, exact, l_ex = median_time(lambda: lin.ggn_spectrum(Ws, X, k=10), repeats)
    ref = exact if reference is None else reference
    full_loss = lambda *w: lin.half_mse_loss(w, Xt, Yt)  # noqa: E731

    def lob():
        out = lin.hessian_eigensolve(full_loss, params, 10, method="lobpcg", tol=1e-8, maxiter=1000)
        return out.values, out.hvps

    gram = lin.feature_gram(X)
    t_gram, exact_g, l_g = median_time(lambda: lin.ggn_spectrum(Ws, gram, k=10), repeats)
    t_lob, (vals, count), l_lob = median_time(lob, repeats)
    rows.append((case, threads, "exact ggn_spectrum top-10", t_ex, "-", relerr(exact, ref), l_ex))
    rows.append((case, threads, "exact ggn_spectrum top-10, FeatureGram precomputed", t_gram, "-", relerr(exact_g, ref), l_g))
    rows.append((case, threads, "LOBPCG top-10, full-data HVP", t_lob, count, relerr(vals, ref), l_lob))
    ratios.append((case, threads, t_lob / t_ex, l_lob))


def _counted(loss_fn, params, k, **options) -> tuple[np.ndarray, int]:
    out = lin.hessian_eigensolve(loss_fn, params, k, **options)
    return out.values, out.hvps


def bench_power(repeats: int) -> list:
    X, Y, Ws = setup("digits")
    params = [torch.as_tensor(W) for W in Ws]
    Xt, Yt = torch.as_tensor(X), torch.as_tensor(Y)
    n = X.shape[0]
    stats = (Xt.T @ Xt / n, Xt.T @ Yt / n, float((Yt * Yt).sum()) / n)
    gram = lambda *w: lin.gram_loss(w, *stats)  # noqa: E731
    exact = lin.ggn_spectrum(Ws, X, k=10)
    out = []
    for k, pmax in ((1, 3000), (10, 400)):
        t_l, (v_l, c_l), ld = median_time(lambda: _counted(
            gram, params, k, method="lobpcg", tol=1e-8, maxiter=1000), repeats)
        t_p, (v_p, c_p), ld2 = median_time(lambda: _counted(
            gram, params, k, method="power", tol=1e-10, maxiter=pmax), repeats)
        out.append((k, t_l, c_l, relerr(v_l, exact[:k]), t_p, c_p, relerr(v_p, exact[:k]), ld, ld2))
    return out


def bench_train(repeats: int) -> list:
    X, _, _ = lh.prepare_data("mnist5k", 5000, None)
    Y = lin.one_hot(np.arange(5000) % 10, 10)
    out = []
    for dims, lr in (([784, 64, 64, 64, 10], 1e-2), ([784, 256, 10], 1e-3)):
        W0 = lin.kaiming_uniform_weights(dims, seed=0)
        times, cpus = [], []
        for _ in range(repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            lin.train_gd(W0, X, Y, lr=lr, epochs=2000)
            times.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        out.append(("-".join(map(str, dims)), statistics.median(times), statistics.median(cpus), load()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cases", default="digits,mnist5k")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--power", action="store_true")
    ap.add_argument("--chapter", action="store_true")
    ap.add_argument("--train", action="store_true")
    args = ap.parse_args()
    rows: list = []
    ratios: list = []
    for threads in [int(t) for t in args.threads.split(",")]:
        torch.set_num_threads(threads)
        with threadpool_limits(threads):
            for case in args.cases.split(","):
                bench_case(case, threads, args.repeats, rows, ratios)
    print(f"Date {today()}; {machine_line()}; median of {args.repeats}\n")
    print("| case | threads | method | seconds | HVPs | max rel. error | load (1 min) |")
    print("|---|---|---|---|---|---|---|")
    for case, th, name, t, c, e, ld in rows:
        print(f"| {case} | {th} | {name} | {t:.3g} | {c} | {e:.1e} | {ld} |")
    print("\n| case | threads | LOBPCG (full-data HVP) / exact, top-10 | load (1 min) |\n|---|---|---|---|")
    for case, th, r, ld in ratios:
        print(f"| {case} | {th} | {r:.3g}x | {ld} |")
    if args.power:
        torch.set_num_threads(1)
        with threadpool_limits(1):
            res = bench_power(args.repeats)
        print("\n| top-k | LOBPCG s (HVPs, err) | power s (HVPs, err) | power / LOBPCG | load |\n|---|---|---|---|---|")
        for k, tl, cl, el, tp, cp, ep, ld, ld2 in res:
            print(f"| {k} | {tl:.3g} ({cl}, {el:.1e}) | {tp:.3g} ({cp}, {ep:.1e}) | {tp / tl:.3g}x | {ld}, {ld2} |")
    if args.train:
        torch.set_num_threads(1)
        with threadpool_limits(1):
            res = bench_train(args.repeats)
        print("\n| network | 2,000 epochs: wall s | CPU s | ms per epoch (wall) | load |\n|---|---|---|---|---|")
        for name, t, c, ld in res:
            print(f"| {name} | {t:.3g} | {c:.3g} | {1000 * t / 2000:.3g} | {ld} |")
    if args.chapter:
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, HTLIB_CACHE_DIR=tmp, TQDM_DISABLE="1")
            root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "papermill", "book/linear_hessian.ipynb", os.path.join(tmp, "o.ipynb")],
                           cwd=root, env=env, check=True, capture_output=True)
            print(f"\n| chapter book/linear_hessian.ipynb at defaults, empty cache | {time.perf_counter() - t0:.0f} s "
                  f"| load {load()} |")


if __name__ == "__main__":
    main()
