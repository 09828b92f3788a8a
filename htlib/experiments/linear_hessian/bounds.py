"""The linear-Hessian chapter's further bounds: the depth sweep of Fig. 6 in the cost model, and ``top_k`` at most
the subset size (:mod:`htlib.params`).  They live beside ``compute.py``, not in it: that file is in the
result-cache key of the results it computes, which a new bound must not recompute."""

from __future__ import annotations

from pathlib import Path

from htlib.experiments.linear_hessian import compute
from htlib.params import Cost, ParameterError, extend_setup

DEPTH_WIDTH = 20
"""Width (and input and output dimension) of the balanced nets of the depth sweep (:func:`compute.depth_sweep`)."""
DEPTH_COPIES = 30
"""Parameter-sized arrays alive at once in its Lanczos eigensolve (weights, gradients, the Hessian-vector product's
graph, the Krylov basis)."""
DEPTH_LAYER_SECONDS = 3e-2
"""Seconds per layer of one depth's top Hessian eigenvalue (some 300 Hessian-vector products of 1e-4 s a layer)."""


TRAJECTORY_EPOCH_SECONDS = 7.6e-3
"""Seconds per GD epoch of one trajectory run of Figs. 1 and 4 (:func:`extra.run_trajectory`), its LOBPCG readings
included: 12 runs of 10,000 epochs took 459 s wall on two workers (2026-12-06, load 2)."""


def costs(setup: compute.Setup) -> list[Cost]:
    from htlib.experiments.linear_hessian import extra

    params = DEPTH_WIDTH**2 * max(setup.depths)
    runs = 2 * max(extra.TRAJECTORY_SEEDS, setup.seeds)  # Figs. 1 and 4, on two workers
    return [Cost("the depth sweep of Fig. 6 (middle)", ("depths", "sigma_xs"),
                 memory=8.0 * DEPTH_COPIES * params,
                 seconds=len(setup.sigma_xs) * sum(setup.depths) * DEPTH_LAYER_SECONDS),
            Cost("the trajectory runs of Figs. 1 and 4", ("epochs", "seeds"),
                 seconds=runs * setup.epochs * TRAJECTORY_EPOCH_SECONDS / 2)]


def check(setup: compute.Setup) -> None:
    images = setup.n or compute._DATA_SHAPES[setup.dataset][0]
    if setup.top_k > images:
        raise ParameterError(f"parameter 'top_k' must be ≤ n = {images:,} (the subset size: the eigenvalues "
                             f"tracked); got {setup.top_k}")


def check_data_dir(setup: compute.Setup) -> None:
    """``data_dir``: "" or an existing folder, and for MNIST, FashionMNIST and CIFAR-10 one holding their files
    (the run would fail on them once its first sweep starts): :meth:`Setup.check_environment`, which ``htlib.run``
    calls before any compute (a Setup may still describe the paper's MNIST setting where no copy is)."""
    from htlib import datasets

    folder = Path(setup.data_dir).expanduser() if setup.data_dir else None
    if folder is not None and not folder.is_dir():
        what = "a file" if folder.exists() else "no such folder"
        raise ParameterError(f"parameter 'data_dir' must be \"\" or an existing folder; got {setup.data_dir!r} "
                             f"({what})")
    if setup.dataset in ("mnist5k", "digits"):
        return
    files = ([f"data_batch_{i}" for i in range(1, 6)] if setup.dataset == "cifar10" else
             list(datasets._IDX_FILES[True]))
    def present(name: str) -> bool:  # the loaders' own look-ups (IDX files may be gzipped)
        return (folder / name).is_file() if setup.dataset == "cifar10" else datasets._find(folder, name) is not None
    missing = files if folder is None else [f for f in files if not present(f)]
    if missing:
        raise ParameterError(f"parameter 'data_dir' must be a folder holding the {compute._DATA_NAMES[setup.dataset]} "
                             f"files for dataset {setup.dataset!r} (nothing is downloaded); got {setup.data_dir!r}, "
                             f"missing {', '.join(missing)}")


extend_setup(compute.Setup, costs=costs, check=check, environment=check_data_dir)
