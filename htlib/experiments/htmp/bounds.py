"""The htmp chapter's check of the machine: with ``dataset = "cifar10"``, ``data_dir`` must hold CIFAR-10's pickle
batches (:meth:`htlib.params.SetupBase.check_environment`, which ``htlib.run`` calls before any compute; the run
would fail on them at its first training run); and the cost of the NTK test's power runs
(:mod:`htlib.experiments.htmp.gof_power`) and of the LeNet runs on image subsets
(:mod:`htlib.experiments.htmp.replicates`).  It lives beside ``compute.py``, not in it: that file is in the
result-cache key of the results it computes."""

from __future__ import annotations

from pathlib import Path

from htlib.experiments.htmp import compute
from htlib.experiments.htmp import replicates
from htlib.experiments.htmp.gof_power import POWER_DRAWS
from htlib.params import Cost, ParameterError, extend_setup

CIFAR_BATCHES = (*(f"data_batch_{i}" for i in range(1, 6)), "test_batch")


def check_data_dir(setup: compute.Setup) -> None:
    if setup.dataset != "cifar10":
        return
    missing = [b for b in CIFAR_BATCHES if not (Path(setup.data_dir).expanduser() / b).is_file()]
    if missing:
        raise ParameterError(f"parameter 'data_dir' must be a CIFAR-10 folder (cifar-10-batches-py) holding "
                             f"{', '.join(CIFAR_BATCHES)} for dataset 'cifar10' (nothing is downloaded); got "
                             f"{setup.data_dir!r}, missing {', '.join(missing)}")


def power_cost(setup: compute.Setup) -> list[Cost]:
    """The power runs of the NTK claim's test: :data:`POWER_DRAWS` spectra of each of 3 alternatives, each tested
    with ``ntk_boot`` refits over ``ntk_gammas`` (about 0.25 s a refit and gamma, two workers)."""
    if "lenet" not in setup.ntk_models:
        return []
    fits = 3 * POWER_DRAWS * (setup.ntk_boot + 1) * len(setup.ntk_gammas)
    return [Cost("the NTK test's power runs", ("ntk_boot", "ntk_gammas"),
                 seconds=fits * compute.GOF_GAMMA_SECONDS / 2)]


SUBSET_FIT_SECONDS = 8.0  # one subset run's fits: KS and L1 fits, the bulk fit and the paper's-law null (one thread)


def subset_cost(setup: compute.Setup) -> list[Cost]:
    """The LeNet runs on image subsets (:mod:`htlib.experiments.htmp.replicates`): every config of both protocols, at
    ``compute.LENET_IMAGES_PER_SECOND`` a worker, and their fits, on two workers."""
    jobs = [c for p in replicates.PROTOCOLS for c in replicates.subset_configs(setup, p)]
    images = sum(c.net.epochs * (c.net.n_train or 0) for c in jobs)
    return [Cost("the LeNet runs on image subsets", ("epochs", "repeats"),
                 seconds=(images / compute.LENET_IMAGES_PER_SECOND + len(jobs) * SUBSET_FIT_SECONDS) / 2)] if jobs else []


def all_costs(setup: compute.Setup) -> list[Cost]:
    return power_cost(setup) + subset_cost(setup)


extend_setup(compute.Setup, environment=check_data_dir, costs=all_costs)
