"""Linear-network Hessians: exact GGN spectrum vs HVP LOBPCG vs power iteration.

Network: 4-layer width-64 linear MLP on whitened digits (n=1797, d0=64, dL=10; 12,928 parameters),
balanced weights, labels Y = f(X) so that the loss is zero and the Hessian equals the GGN.

1. Top-10 eigenvalues: ``htlib.linear.ggn_spectrum`` (a 640x640 Kronecker sum) against
   ``scipy.sparse.linalg.lobpcg`` on autograd Hessian-vector products of the full-data loss,
   each method's error against the exact values is printed next to its time.
2. LOBPCG against PyHessian-style power iteration with deflation (top-1 and top-10), both on the
   same (sufficient-statistics) Hessian-vector product: time ratio, HVP counts and the accuracy
   each reached (power iteration is capped in iterations, so its ratio is a lower bound when it
   ends less accurate than LOBPCG).
3. With ``--chapter``: the wall time of ``book/linear_hessian.ipynb`` at default parameters with an
   empty result cache (papermill).

Run: ``python benchmarks/bench_linear.py [--chapter]``; prints a markdown table.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import machine_line, timeit, today  # noqa: E402

from htlib import linear as lin  # noqa: E402


def setup():
    X, _, _ = lin.prepare_data("digits", 1797, None, whitened=True)
    dims = [64, 64, 64, 64, 10]
    s = np.random.default_rng(0).uniform(0.2, 1.0, 10)
    Ws = lin.balanced_weights(dims, s, seed=1)
    Y = X
    for W in Ws:
        Y = Y @ W.T
    return X, Y, Ws


def relerr(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / abs(b[0]))


def main(chapter: bool) -> None:
    X, Y, Ws = setup()
    Xt, Yt = torch.as_tensor(X), torch.as_tensor(Y)
    params = [torch.as_tensor(W) for W in Ws]
    full_loss = lambda *w: lin.mse_loss(w, Xt, Yt)  # noqa: E731
    n = X.shape[0]
    stats = (Xt.T @ Xt / n, Xt.T @ Yt / n, float((Yt * Yt).sum()) / n)
    gram = lambda *w: lin.gram_loss(w, *stats)  # noqa: E731
    exact = lin.ggn_spectrum(Ws, X, k=10)
    rows = []

    t_exact = timeit(lambda: lin.ggn_spectrum(Ws, X, k=10), repeats=3)
    rows.append(("exact GGN top-10 (ggn_spectrum)", t_exact, 0, relerr(exact, exact)))

    def lob(loss, k, tol):
        return lin.hessian_top_eigenvalues(loss, params, k, method="lobpcg", tol=tol, maxiter=1000, return_count=True)

    # one run each (the machine is shared and slow); the error column shows the accuracy reached
    t0 = time.perf_counter()
    vals, count = lob(full_loss, 10, 1e-8)
    t_lob = time.perf_counter() - t0
    rows.append(("LOBPCG top-10, full-data HVP (tol 1e-8)", t_lob, count, relerr(vals, exact)))

    out = {}
    for k, pmax in ((1, 3000), (10, 400)):
        t0 = time.perf_counter()
        vals, count = lob(gram, k, 1e-8)
        out[("lobpcg", k)] = time.perf_counter() - t0
        rows.append((f"LOBPCG top-{k}, sufficient-statistics HVP (tol 1e-8)", out[("lobpcg", k)], count,
                     relerr(vals, exact[:k])))
        t0 = time.perf_counter()
        vals, count = lin.hessian_top_eigenvalues(gram, params, k, method="power", tol=1e-10, maxiter=pmax,
                                                  return_count=True)
        out[("power", k)] = time.perf_counter() - t0
        out[("power_err", k)] = relerr(vals, exact[:k])
        rows.append((f"power iteration top-{k}, deflation (tol 1e-10, <= {pmax} its/eigenvalue)",
                     out[("power", k)], count, out[("power_err", k)]))

    print(f"Date {today()}; {machine_line()}\n")
    print("| method | seconds | HVPs | max rel. error |")
    print("|---|---|---|---|")
    for name, t, c, e in rows:
        print(f"| {name} | {t:.3g} | {c} | {e:.1e} |")
    print()
    print(f"| ratio | value |\n|---|---|")
    print(f"| LOBPCG (full-data HVP) / exact ggn_spectrum, top-10 | {t_lob / t_exact:.3g}x |")
    for k in (1, 10):
        print(f"| power / LOBPCG, top-{k} (power reached rel. error {out[('power_err', k)]:.1e}) "
              f"| {out[('power', k)] / out[('lobpcg', k)]:.3g}x |")

    if chapter:
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, HTLIB_CACHE_DIR=tmp, TQDM_DISABLE="1")
            root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "papermill", "book/linear_hessian.ipynb", os.path.join(tmp, "o.ipynb")],
                           cwd=root, env=env, check=True, capture_output=True)
            print(f"\n| chapter book/linear_hessian.ipynb at defaults, empty cache | {time.perf_counter() - t0:.0f} s |")


if __name__ == "__main__":
    main("--chapter" in sys.argv)
