"""What the HTMP chapter (paper 001) computes, inside the result-cache key: :class:`Setup` and :data:`PAPER`, the
batch-size experiment of Fig. 5 (:func:`run_batch`: training runs, pure-noise references and NTK runs with their
goodness-of-fit tests, both fits of each layer, the parametric bootstrap of each kappa and the direct tests of the
paper's kappa), the phase model, the training trajectory and the chapter's small tables.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from htlib import htmp, plotting, spectra, two_layer
from htlib._checks import check_int
from htlib.params import FLOP_RATE, MIN_WIDTH, Cost, ParameterError, SweepSetup, param
from htlib.small_nets import SmallNetConfig, SmallNetResult, ntk_spectrum, resolve_device, train_small_net
from htlib.sweep import run_sweep

PAPER_KAPPA: dict[tuple[str, int], float] = {  # paper 001's fitted kappa per batch size: Fig. 5 and its text (LeNet)
    ("minialexnet", 1000): math.inf, ("minialexnet", 800): math.inf, ("minialexnet", 250): 5.5,
    ("minialexnet", 100): 2.3, ("lenet", 250): 1.1, ("lenet", 100): 0.9}

def _delta(kappa: float, gamma: float) -> float:
    return math.inf if math.isinf(kappa) else kappa * (1 - gamma) / (2 * gamma)

def _feature_side(dataset: str) -> int:
    """Side of MiniAlexNet's last feature map: 3 on 28 x 28 MNIST, 4 on 32 x 32 CIFAR-10."""
    return 3 if dataset == "mnist5k" else 4

LENET_IMAGES_PER_SECOND = 1400.0  # LeNet on one one-thread worker, batch 100-1000 (benchmarks/bench_small_nets.py)
NOISE_FIT_SECONDS = 10.0  # one pure-noise FC1 matrix: its ESD and both fits (benchmarks/bench_htmp.py: 2-11 s a fit)
GOF_GAMMA_SECONDS = 0.25  # one refit of inverse_htmp_gof's null at one gamma, n = 250-1000 (its docstring)
KAPPA_REFIT_SECONDS = 0.35  # one bootstrap refit (sample_htmp + fit_htmp) of LeNet's 120 eigenvalues, one thread
PAPER_TEST_REPS = 60  # draws of the null of paper_kappa_test (beta-Laguerre spectra of the paper's law)
PAPER_DRAW_SECONDS = 0.005  # one draw of the paper's-kappa null at 120 eigenvalues (sample + KS scale fit)

def _alex_activations(widths, side: int) -> float:
    """MiniAlexNet's conv-block outputs per image (28 x 28, 14 x 14, 7 x 7 maps on MNIST; 32/28 that side on CIFAR)."""
    scale = 1.0 if side == 3 else (32 / 28) ** 2
    return scale * (784 * widths[0] + 196 * widths[1] + 49 * widths[2])

@dataclass(frozen=True)
class Setup(SweepSetup):
    """The chapter's parameters (its ``parameters`` cell), validated once: LeNet at the paper's optimizer on ``n_train``
    MNIST-5k images, MiniAlexNet only with ``alex_train`` (``alex_*``: hours on two cores); :data:`PAPER` the paper's
    protocol (MiniAlexNet trained), :func:`cifar_overrides`.  :meth:`costs` states what each part costs.

    Examples
    --------
    >>> Setup(repeats=2).repeats
    2
    >>> Setup(n_train=5000)
    Traceback (most recent call last):
    ...
    htlib.params.ParameterError: parameter 'n_train' must be ≤ 4999 on mnist5k (5,000 images); got 5000
    """
    gamma: float = param(0.3255, "aspect ratio of the family plots: MiniAlexNet FC1, 1000/(192*4*4)", gt=0, lt=1)
    kappas: tuple[float, ...] = param((0.5, 1.9, 5.5, 20.0), "kappa values drawn next to MP", gt=0)
    gammas: tuple[float, ...] = param((0.1, 0.5, 0.9), "further aspect ratios", gt=0, lt=1)
    check_kappas: tuple[float, ...] = param((0.5, 1.9, 5.5, 20.0), "kappa values of the quadrature checks", gt=0, le=1000)
    mp_kappas: tuple[float, ...] = param((2.0, 5.5, 20.0, 60.0), "kappa values of the convergence to MP", gt=0)
    sampler_kappa: float = param(5.5, "kappa of the sampler checks", gt=0)
    sampler_ns: tuple[int, ...] = param((500, 1000, 3000), "matrix sizes of the sampler checks", ge=2, le=20_000)
    tail_kappa: float = param(1.9, "kappa of the tail section", gt=0)
    tail_n: int = param(3000, "sampler size of the tail section", ge=10, le=20_000)
    seed: int = param(0, "seed of the samplers, the phase spectra and the first repeat", ge=0)
    dataset: str = param("mnist5k", "images of the training runs (cifar10 needs data_dir)", choices=("mnist5k", "cifar10"))
    data_dir: str = param("", "local CIFAR-10 folder (cifar-10-batches-py) for cifar10; nothing is downloaded", is_dir=True)
    batch_sizes: tuple[int, ...] = param((1000, 800, 250, 100), "SGD batch sizes, as in the paper", ge=1)
    repeats: int = param(3, "LeNet: runs per batch size, as in the paper", ge=1)
    epochs: int = param(200, "LeNet: SGD epochs, as in the paper", ge=1)
    n_train: int = param(4000, "LeNet: training images (MNIST-5k has 4000; the paper does not name LeNet's data)", ge=10)
    kappa_boot: int = param(40, "parametric-bootstrap refits of each trained layer's KS fit (HTMP spectra of the "
                                "fitted law at the same size and gamma): the interval beside each kappa", ge=10, le=10_000)
    alex_train: bool = param(False, "MiniAlexNet: train it (hours on two cores at PAPER; without it its rows read "
                                    "'not tested')")
    alex_repeats: int = param(1, "MiniAlexNet: runs per batch size (the paper: 3)", ge=1)
    alex_epochs: int = param(1, "MiniAlexNet: SGD epochs (the paper: 200)", ge=1)
    alex_n_train: int = param(1000, "MiniAlexNet: training images (MNIST-5k has 4000)", ge=10)
    alex_n_test: int = param(500, "MiniAlexNet: test images, the first of the held-out ones", ge=1)
    alex_widths: tuple[int, ...] = param((96, 256, 192), "MiniAlexNet: channels of its three conv blocks (the paper "
                                         "gives only the last)", ge=1, min_len=3, max_len=3)
    lr: float = param(0.01, "SGD learning rate, as in the paper", gt=0)
    momentum: float = param(0.9, "SGD momentum, as in the paper", ge=0, lt=1)
    noise_seeds: int = param(3, "pure-noise matrices per FC1 shape, fitted like the trained layers", ge=1)
    init_batch: int = param(100, "LeNet batch size of the initialization comparison", ge=1)
    init_repeats: int = param(1, "LeNet runs of the initialization comparison", ge=1)
    phase_n: int = param(600, "size of the 5+1 phase spectra", ge=10, le=20_000)
    phase_gamma: float = param(0.5, "aspect ratio of the 5+1 phase spectra", gt=0, lt=1)
    traj_n: int = param(1000, "two-layer run: training set size (the spike chapter: 2000)", ge=1)
    traj_d: int = param(500, "two-layer run: input dimension (the spike chapter: 1000; needs traj_d < traj_h)",
                        ge=MIN_WIDTH)
    traj_h: int = param(750, "two-layer run: width (the spike chapter: 1500)", ge=MIN_WIDTH + 1)
    traj_steps: int = param(10, "two-layer run: FB-Adam steps", ge=2)
    traj_eta: float = param(1.0, "two-layer run: FB-Adam learning rate", gt=0)
    ntk_models: tuple[str, ...] = param(("lenet",), "models whose NTK spectrum is fitted (logistic regression's "
                                        "kernel does not depend on training: its row is not tested)",
                                        choices=("logistic", "lenet"))
    ntk_n: int = param(1000, "NTK runs: training images, as in the paper", ge=10)
    ntk_epochs: int = param(200, "NTK runs: SGD epochs with cosine annealing, as in the paper", ge=1)
    ntk_lr: float = param(0.05, "NTK runs: initial learning rate, as in the paper", gt=0)
    ntk_batch: int = param(64, "NTK runs: batch size, as in the paper", ge=1)
    ntk_gammas: tuple[float, ...] = param((0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 0.99), "aspect ratios tried by the "
                                          "inverse-HTMP and inverse-MP fits", gt=0, lt=1)
    ntk_rtols: tuple[float, ...] = param((1e-9, 1e-4), "NTK eigenvalues at or below rtol x the largest are left "
                                         "out as zero; the first is the claim's, the others its variants (first "
                                         "seed)", gt=0, lt=1)
    ntk_boot: int = param(19, "NTK fits: parametric-bootstrap refits of each goodness-of-fit test (the smallest p "
                              "is 1/(ntk_boot + 1): 19 reaches 0.05)", ge=1, le=10_000)
    ntk_seeds: int = param(20, "NTK runs: LeNet's training seeds, from seed + ntk_first on (19 is the fewest at "
                               "which the claim's rule can agree)", ge=1)
    ntk_first: int = param(6, "NTK runs: LeNet's first training seed is seed + ntk_first (seeds seed to seed + 5 were "
                              "read before the claim's rule was fixed)", ge=0)
    ntk_logistic_seeds: int = param(4, "NTK runs: logistic regression's training seeds seed, seed+1, ... (a seed "
                                       "redraws the images; its kernel does not depend on its weights)", ge=1)
    device: str = param("auto", "where the small nets train and their NTK is computed (auto: cuda where available)",
                        choices=("auto", "cpu", "cuda"))

    def _check(self) -> None:
        try:
            resolve_device(self.device)  # "cuda" without a CUDA device is refused here, before any run
        except ValueError as err:
            raise ParameterError(f"parameter 'device' {err}") from None
        if self.traj_d >= self.traj_h:  # the HTMP fit of the two-layer run's W needs gamma = d/h < 1
            raise ParameterError(f"parameter 'traj_d' must be < traj_h = {self.traj_h}; got {self.traj_d}")
        side = _feature_side(self.dataset)
        cols = int(self.alex_widths[2]) * side * side
        if cols < MIN_WIDTH:
            raise ParameterError(f"parameter 'alex_widths' must give MiniAlexNet's FC1 at least {MIN_WIDTH} columns "
                                 f"(its last width times {side * side}); got {list(self.alex_widths)}")
        for name, value, most in (("batch_sizes", max(self.batch_sizes), "n_train"), ("init_batch", self.init_batch, "n_train"),
                                  ("ntk_batch", self.ntk_batch, "ntk_n")):
            if value > getattr(self, most):  # a batch larger than the training set is the whole set
                raise ParameterError(f"parameter {name!r} must be ≤ {most} = {getattr(self, most)} (a batch larger than "
                                     f"the training images); got {value}")
        if self.dataset == "mnist5k":
            for name in ("n_train", "alex_n_train", "ntk_n"):
                if getattr(self, name) > 4999:
                    raise ParameterError(f"parameter {name!r} must be ≤ 4999 on mnist5k (5,000 images); "
                                         f"got {getattr(self, name)}")
        elif not self.data_dir:
            raise ParameterError("parameter 'data_dir' must name a local CIFAR-10 folder (cifar-10-batches-py) "
                                 "for dataset 'cifar10'; nothing is downloaded")

    def costs(self) -> list[Cost]:
        side, workers = _feature_side(self.dataset), self.workers
        pixels = 784 if self.dataset == "mnist5k" else 3072
        lenet = (len(self.batch_sizes) * self.repeats + self.init_repeats) * self.epochs * self.n_train
        alex = len(self.batch_sizes) * self.alex_repeats * self.alex_epochs * self.alex_n_train * self.alex_train
        # the bootstrap refits and the paper's-kappa nulls, per trained layer (FC1: 120 eigenvalues, 1000 MiniAlexNet's)
        layers = len(self.batch_sizes) * (self.repeats * 120 + self.alex_repeats * 1000 * self.alex_train) / 120
        refits = layers * (self.kappa_boot * KAPPA_REFIT_SECONDS + PAPER_TEST_REPS * PAPER_DRAW_SECONDS)
        alex_scale = _alex_activations(self.alex_widths, side) / _alex_activations((96, 256, 192), 3)
        batch = max(min(b, max(self.n_train, self.alex_n_train)) for b in self.batch_sizes)
        seeds = self.ntk_seeds * ("lenet" in self.ntk_models) + self.ntk_logistic_seeds * ("logistic" in self.ntk_models)
        # one goodness-of-fit test per seed at the claim's cut-off, the other cut-offs at the first seed; each
        # replicate refits at every gamma of the grid (inverse_htmp_gof: about 0.25 s a gamma)
        boots = (seeds + len(self.ntk_models) * (len(self.ntk_rtols) - 1)) * self.ntk_boot * len(self.ntk_gammas)
        traj_b, traj_f = two_layer.run_cost(two_layer.TwoLayerConfig(n=self.traj_n, d=self.traj_d, h=self.traj_h,
                                                                     steps=self.traj_steps, keep_weights=(0, 1)))
        return [
            Cost("the LeNet and MiniAlexNet training runs", ("epochs", "n_train", "repeats", "batch_sizes", "alex_epochs",
                                                             "alex_n_train", "alex_repeats", "alex_widths", "init_repeats"),
                 memory=workers * 4.0 * (3 * batch * _alex_activations(self.alex_widths, side)
                                         + pixels * (self.n_train + self.alex_n_train + self.alex_n_test)),
                 seconds=(lenet / LENET_IMAGES_PER_SECOND + alex * alex_scale / ALEX_IMAGES_PER_SECOND) / 2),
            Cost("the NTK runs", ("ntk_n", "ntk_epochs", "ntk_seeds", "ntk_logistic_seeds", "ntk_boot", "ntk_gammas"),
                 memory=workers * 8.0 * 3 * self.ntk_n ** 2,
                 seconds=seeds * (self.ntk_epochs + 30) * self.ntk_n / LENET_IMAGES_PER_SECOND / 2
                 + seeds * 10 * self.ntk_n ** 3 / FLOP_RATE + boots * GOF_GAMMA_SECONDS / 2),
            Cost("the pure-noise references", ("noise_seeds",),
                 seconds=(1 + self.alex_train) * self.noise_seeds * NOISE_FIT_SECONDS / 2),
            Cost("the bootstrap refits of kappa and the tests of the paper's kappa", ("kappa_boot",), seconds=refits / 2),
            Cost("the two-layer run", ("traj_n", "traj_d", "traj_h", "traj_steps"), memory=traj_b,
                 seconds=traj_f / FLOP_RATE)]

    def _config(self, model: str, batch: int, seed: int, **over) -> SmallNetConfig:
        lenet = model == "lenet"
        kw = dict(model=model, dataset=self.dataset, batch_size=int(batch), lr=float(self.lr),
                  momentum=float(self.momentum), data_dir=self.data_dir or None, seed=int(seed),
                  epochs=self.epochs if lenet else self.alex_epochs,
                  n_train=self.n_train if lenet else self.alex_n_train,
                  n_test=None if lenet else self.alex_n_test, conv_widths=tuple(int(w) for w in self.alex_widths),
                  **self._device())
        kw.update(over)
        return SmallNetConfig(**kw)

    def run_configs(self) -> list[SmallNetConfig]:
        """LeNet then MiniAlexNet (with ``alex_train``), batch size x repeat (seed ``seed + r``), then LeNet's
        initialization variant."""
        out = [self._config("lenet", b, self.seed + r) for b in self.batch_sizes for r in range(self.repeats)]
        if self.alex_train:
            out += [self._config("minialexnet", b, self.seed + r) for b in self.batch_sizes
                    for r in range(self.alex_repeats)]
        out += [self._config("lenet", self.init_batch, self.seed + r, init="variance") for r in range(self.init_repeats)]
        return out

    def ntk_seed_list(self, model: str) -> list[int]:
        """The NTK training seeds ``seed + ntk_first + r``, ``r < ntk_seeds`` (LeNet), or ``seed + r``,
        ``r < ntk_logistic_seeds`` (logistic regression)."""
        if model == "logistic":
            return [self.seed + r for r in range(self.ntk_logistic_seeds)]
        return [self.seed + self.ntk_first + r for r in range(self.ntk_seeds)]

    def ntk_configs(self) -> list:
        """The NTK runs: ``ntk_models`` at each seed of :meth:`ntk_seed_list`; the goodness-of-fit test at the claim's
        cut-off on every seed, at the other cut-offs (the variants) on the first."""
        return [NTKConfig(SmallNetConfig(model=m, dataset=self.dataset, batch_size=self.ntk_batch, epochs=self.ntk_epochs,
                                         lr=float(self.ntk_lr), momentum=float(self.momentum), schedule="cosine",
                                         n_train=self.ntk_n, data_dir=self.data_dir or None, seed=s, **self._device()),
                          tuple(float(g) for g in self.ntk_gammas), tuple(float(r) for r in self.ntk_rtols),
                          int(self.ntk_boot), len(self.ntk_rtols) if i == 0 else 1)
                for m in self.ntk_models for i, s in enumerate(self.ntk_seed_list(m))]

    def _device(self) -> dict:
        """``{"device": ...}`` for :class:`SmallNetConfig`."""
        return {"device": self.device}

    def ntk_reduction(self, model: str) -> str:
        """What keeps ``model``'s NTK runs from the paper's protocol (:data:`PAPER`); ``""`` if nothing."""
        bits = [f"{name}={getattr(self, name):g} instead of the paper's {getattr(PAPER, name):g}"
                for name in ("ntk_n", "ntk_epochs", "ntk_lr", "ntk_batch") if getattr(self, name) != getattr(PAPER, name)]
        if model == "logistic" and self.dataset == "mnist5k":
            bits.append("logistic regression on 28x28 digits has 7,850 parameters, not the paper's 30K (3,072-dimensional "
                        "CIFAR-10/SVHN inputs)")
        return "; ".join(bits)

    def ntk_at_paper(self, model: str) -> bool:
        return not self.ntk_reduction(model)

    def ntk_setting(self, model: str = "") -> str:
        """Every deviation of the NTK runs (of ``model``, when given) from the paper's."""
        data = "MNIST-5k" if self.dataset == "mnist5k" else "CIFAR-10"
        seeds = self.ntk_seed_list(model or "lenet")
        seed_txt = (f"; training seeds {', '.join(map(str, seeds))} (the kernel does not depend on the weights: each "
                    "seed redraws the images)" if model == "logistic" else
                    f"; training seeds {', '.join(map(str, seeds))} (each redraws the images, the initialization and "
                    "the batch order)")
        return (f"{data}, {self.ntk_n:,} training images, {self.ntk_epochs} epochs, cosine annealing from "
                f"{self.ntk_lr:g}, batch {self.ntk_batch}, SGD momentum {self.momentum:g} (unstated in the paper); "
                + ("logistic regression on 28x28 digits has 7,850 parameters (the paper's 30K implies 3,072-dimensional "
                   "CIFAR-10/SVHN inputs); " if model == "logistic" else "LeNet-5 with 61,706 parameters; ")
                + "the paper's larger models (ResNet, VGG, DenseNet, "
                "4.8M-11.1M parameters) not run; output-traced n x n NTK, not the full 10n x 10n; the inverse law's "
                f"gamma chosen by KS from {', '.join(f'{g:g}' for g in self.ntk_gammas)}; eigenvalues at or below "
                f"{self.ntk_rtols[0]:g} x the largest left out as zero (the paper gives no cut-off)" + seed_txt)

    def reduction(self, model: str) -> str:
        """The reductions of ``model``'s runs below :data:`PAPER`, in words, each with the parameter that removes it."""
        lenet = model == "lenet"
        bits = []
        for name, label in ((("n_train", "training images"), ("epochs", "epochs"), ("repeats", "repeats")) if lenet else
                            (("alex_n_train", "training images"), ("alex_epochs", "epochs"), ("alex_repeats", "repeats"))):
            have, want = getattr(self, name), getattr(PAPER, name)
            if have < want:
                bits.append(f"{have:,} {label} instead of {want:,} ({name}={want} in PAPER, make paper)")
        return "; ".join(bits)

    def at_paper(self, model: str) -> bool:
        """Whether ``model``'s runs are at :data:`PAPER` (no :meth:`reduction`; MiniAlexNet also on all of CIFAR-10)."""
        if self.reduction(model):
            return False
        return model == "lenet" or (self.dataset == "cifar10" and self.alex_n_train >= 50_000)

    def setting(self, model: str) -> str:
        """Every deviation of ``model``'s runs from the paper's protocol, in words."""
        lenet = model == "lenet"
        reps, ep, n = ((self.repeats, self.epochs, self.n_train) if lenet else
                       (self.alex_repeats, self.alex_epochs, self.alex_n_train))
        data = ("MNIST-5k" if self.dataset == "mnist5k" else "CIFAR-10")
        bits = [f"{data}, {n:,} training images" + (" (the paper: CIFAR-10, 50,000)" if not lenet else
                                                     " (the paper does not name LeNet's data)"),
                f"{ep} epoch{'s' if ep != 1 else ''}" + ("" if ep == 200 else " (the paper: 200)"),
                f"{reps} repeat{'s' if reps != 1 else ''} combined by the median (the paper: 3, 'average')"]
        if lenet:
            bits.append("max-pool (the group's public code: average-pool)")
        else:
            bits.append(f"conv widths {'/'.join(str(int(w)) for w in self.alex_widths)} (the paper gives none); "
                        f"FC1 1000 x {int(self.alex_widths[2]) * _feature_side(self.dataset) ** 2}")
        bits.append("one scalar mean/std normalization (the public code: per channel)")
        return "; ".join(bits)

ALEX_IMAGES_PER_SECOND = 190.0  # MiniAlexNet on one idle one-thread worker (benchmarks/bench_small_nets.py)

def alex_paper_hours(setup: "Setup", workers: int = 2) -> float:
    """Estimated hours of MiniAlexNet at :data:`PAPER`'s protocol on ``workers`` idle one-thread workers."""
    c1, c2, c3 = (int(w) for w in setup.alex_widths)
    # cost per image ~ the three conv blocks' multiply-adds (28x28, 14x14, 7x7 maps, 5x5 kernels)
    cost = lambda a, b, c: 784 * a * 25 + 196 * a * b * 25 + 49 * b * c * 25  # noqa: E731
    scale = cost(c1, c2, c3) / cost(96, 256, 192)
    images = PAPER.alex_n_train * PAPER.alex_epochs * PAPER.alex_repeats * len(setup.batch_sizes)
    return images * scale / (workers * ALEX_IMAGES_PER_SECOND) / 3600.0

PAPER = Setup(n_train=4000, alex_train=True, alex_repeats=3, alex_epochs=200, alex_n_train=4000,
              alex_n_test=1000)  # the paper's runs

def cifar_overrides(data_dir: str) -> dict:
    """The parameters that move :data:`PAPER` onto all of CIFAR-10 from the folder ``data_dir``."""
    return {"dataset": "cifar10", "data_dir": data_dir, "n_train": 50_000, "alex_n_train": 50_000, "alex_n_test": 10_000}

@dataclass(frozen=True)
class NoiseConfig:
    """A pure Marchenko-Pastur reference: an ``rows x cols`` matrix of i.i.d. N(0, 1/cols) entries."""
    rows: int
    cols: int
    seed: int
    model: str = "noise"

    def __post_init__(self) -> None:
        check_int("rows", self.rows, 10)
        check_int("cols", self.cols, 10)
        check_int("seed", self.seed, 0)

@dataclass(frozen=True)
class NTKConfig:
    """One NTK job: train ``net``, fit the inverse HTMP law at each cut-off of ``rtols`` and test the fit against its
    own parametric null (:func:`htlib.htmp.inverse_htmp_gof`, ``boot`` refits) at the first ``tested`` cut-offs."""
    net: SmallNetConfig
    gammas: tuple
    rtols: tuple = (1e-9,)
    boot: int = 19
    tested: int = 1
    model: str = "ntk"

@dataclass(frozen=True)
class NTKFit:
    """One trained net's NTK spectrum and inverse-HTMP fits (``fits``: per cut-off of ``rtols``) with their
    goodness-of-fit tests (``gof``: a :class:`htlib.htmp.GoFResult` per cut-off, ``None`` where not tested, with the
    error in ``gof_errors`` by cut-off index where the test could not be made)."""
    model: str
    eigs: np.ndarray
    train_acc: float
    test_acc: float
    n_params: int
    fit: htmp.InverseFit
    rtols: tuple = ()
    fits: tuple = ()
    gof: tuple = ()
    gammas: tuple = ()
    seed: int = 0
    gof_errors: dict = field(default_factory=dict)

@dataclass(frozen=True)
class LayerFit:
    """One layer's ESD and both fits: KS (:func:`htlib.htmp.fit_htmp`) and min-shifted histogram L1 (``l1_*``)."""
    model: str
    batch_size: int
    seed: int
    init: str
    train_acc: float
    test_acc: float
    weight_change: float
    gamma: float
    eigs: np.ndarray
    kappa: float
    scale: float
    ks: float
    mp_scale: float
    mp_ks: float
    l1_kappa: float
    l1: float
    l1_mp: float
    l1_shift: float
    l1_scale: float
    l1_at_bound: bool
    steps: int = 0

    @property
    def delta(self) -> float:
        return _delta(self.kappa, self.gamma)

    @property
    def l1_delta(self) -> float:
        return _delta(self.l1_kappa, self.gamma)

def fit_layer(W: np.ndarray, *, model: str, batch_size: int, seed: int, init: str = "std", train_acc: float = math.nan,
              test_acc: float = math.nan, weight_change: float = math.nan, steps: int = 0) -> LayerFit:
    """Both fits of the ESD of ``W Wᵀ`` (the smaller Gram side, ``gamma = min/max`` of the shape)."""
    lam = spectra.esd(W)
    g = min(W.shape) / max(W.shape)
    ks = htmp.fit_htmp(lam, g)
    l1 = htmp.fit_htmp_l1(lam, g)
    return LayerFit(model, int(batch_size), int(seed), init, float(train_acc), float(test_acc), float(weight_change), g,
                    lam, ks.kappa, ks.scale, ks.ks, ks.mp_scale, ks.mp_ks, l1.kappa, l1.l1, l1.mp_l1, l1.shift,
                    l1.scale, l1.at_bound, int(steps))

def train_and_fit(config):
    """One cached job of the sweep: an SGD run, a pure-noise reference or an NTK run, and the fits of its spectrum."""
    if isinstance(config, NTKConfig):
        sp = ntk_spectrum(config.net)
        fits = tuple(htmp.fit_inverse_htmp(sp.eigs, config.gammas, rtol=r) for r in config.rtols)
        gof, done, errors = [], {}, {}
        for i, (f, r) in enumerate(zip(fits, config.rtols)):
            if i >= config.tested:
                gof.append(None)
                continue
            if f.n not in done:  # a cut-off that keeps the same eigenvalues has the same test
                try:
                    done[f.n] = htmp.inverse_htmp_gof(sp.eigs, config.gammas, rtol=r, reps=config.boot,
                                                      seed=1000 * int(config.net.seed) + i)
                except ValueError as err:  # a refit the test cannot make: recorded, and its rows not tested
                    done[f.n], errors[i] = None, str(err)
            gof.append(done[f.n])
        return NTKFit(config.net.model, sp.eigs, sp.train_acc, sp.test_acc, sp.n_params, fits[0], tuple(config.rtols),
                      fits, tuple(gof), tuple(config.gammas), int(config.net.seed), errors)
    if isinstance(config, NoiseConfig):
        rng = np.random.default_rng(config.seed)
        W = rng.standard_normal((config.rows, config.cols)) / math.sqrt(config.cols)
        return fit_layer(W, model="noise", batch_size=0, seed=config.seed)
    r: SmallNetResult = train_small_net(config)
    n = r.config.n_train
    steps = config.epochs * math.ceil(n / config.batch_size) if n else 0
    return fit_layer(r.weights, model=config.model, batch_size=config.batch_size, seed=config.seed, init=config.init,
                     train_acc=r.train_acc, test_acc=r.test_acc, weight_change=r.weight_change, steps=steps)

@dataclass(frozen=True)
class KappaBootConfig:
    """One layer's parametric bootstrap of its KS fit: ``reps`` spectra of size ``n`` drawn from the fitted law
    (HTMP(``kappa``, ``gamma``) by :func:`htlib.htmp.sample_htmp`; a Gaussian matrix's where ``kappa = inf``, MP),
    each refitted by :func:`htlib.htmp.fit_htmp` at ``gamma`` exactly as the layer was."""
    kappa: float
    gamma: float
    n: int
    reps: int
    seed: tuple
    model: str = "kappa-boot"

@dataclass(frozen=True)
class PaperTestConfig:
    """The null of :func:`paper_kappa_test`: ``reps`` beta-Laguerre spectra of HTMP(``kappa``, ``gamma``) at size
    ``n``, each with its scale fitted by KS."""
    kappa: float
    gamma: float
    n: int
    reps: int
    seed: tuple
    model: str = "paper-test"

def kappa_boot(config: KappaBootConfig) -> np.ndarray:
    """The refitted kappas of :class:`KappaBootConfig` (``inf`` where a refit finds MP), one per replicate.

    Examples
    --------
    >>> k = kappa_boot(KappaBootConfig(2.0, 0.3, 200, 5, (0, 1)))
    >>> k.shape, bool(np.all((k > 0.1) & (k < 50)))
    ((5,), True)
    """
    check_int("n", config.n, 10)
    check_int("reps", config.reps, 1)
    rng = np.random.default_rng(list(config.seed))
    out = []
    for _ in range(config.reps):
        s = int(rng.integers(2**31))
        if math.isinf(config.kappa):
            cols = max(config.n + 1, round(config.n / config.gamma))
            x = spectra.esd(np.random.default_rng(s).standard_normal((config.n, cols)))
            g = config.n / cols
        else:
            x, g = htmp.sample_htmp(config.n, config.kappa, config.gamma, seed=s), config.gamma
        out.append(htmp.fit_htmp(x, g).kappa)
    return np.asarray(out, dtype=np.float64)

def paper_null(config: PaperTestConfig) -> np.ndarray:
    """The KS distances of :class:`PaperTestConfig`'s ``reps`` spectra to their law, scale fitted (``paper_ks``)."""
    rng = np.random.default_rng(list(config.seed))
    return np.array([paper_ks(htmp.sample_htmp(config.n, config.kappa, config.gamma, seed=int(rng.integers(2**31))),
                              config.kappa, config.gamma) for _ in range(config.reps)])

def percentile_interval(draws, level: float = 0.95) -> tuple[float, float]:
    """The equal-tailed percentile interval of bootstrap ``draws`` at ``level``: the ``k``-th smallest and ``k``-th
    largest draw, ``k = max(1, floor(B (1 - level) / 2))`` of ``B`` draws (no interpolation, so a draw at ``inf``
    gives an upper end at ``inf``).

    Examples
    --------
    >>> percentile_interval(np.arange(1.0, 41.0))
    (1.0, 40.0)
    >>> percentile_interval(np.arange(1.0, 201.0))
    (5.0, 196.0)
    >>> percentile_interval([1.0, 2.0, 3.0, np.inf], 0.5)
    (1.0, inf)
    """
    d = np.sort(np.asarray(draws, dtype=np.float64).ravel())
    if d.size == 0 or np.isnan(d).any():
        raise ValueError(f"draws must be a non-empty array without nan, got {d.size} values")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    k = max(1, math.floor(d.size * (1.0 - level) / 2.0 + 1e-9))
    return float(d[k - 1]), float(d[d.size - k])

@dataclass(frozen=True)
class BatchResult:
    """Every fitted layer of the batch-size experiment, the pure-noise references, their summary and the NTK runs;
    ``boot`` the bootstrap kappas per trained layer ``(model, batch, seed)``, ``paper_tests`` the direct tests of
    the paper's kappa, ``(observed KS, null)`` per layer where the paper gives a finite kappa."""
    setup: Setup
    fits: list
    noise: list
    summary: pd.DataFrame = field(repr=False)
    ntk: list = field(default_factory=list)
    boot: dict = field(default_factory=dict)
    paper_tests: dict = field(default_factory=dict)

    def of(self, model: str, init: str = "std") -> list:
        return [f for f in self.fits if f.model == model and f.init == init]

    def kappa_interval(self, f: "LayerFit", level: float = 0.95) -> tuple[float, float]:
        """The percentile interval of layer ``f``'s bootstrap kappas; ``(nan, nan)`` where none were drawn."""
        d = self.boot.get((f.model, f.batch_size, f.seed))
        return percentile_interval(d, level) if d is not None and d.size else (math.nan, math.nan)

    def noise_of(self, model: str) -> list:
        shape = {f.eigs.size for f in self.of(model)}
        ref = [f for f in self.fits if f.model == model]
        g = ref[0].gamma if ref else math.nan
        return [f for f in self.noise if f.eigs.size in shape and math.isclose(f.gamma, g)]

def _fc1_shape(setup: Setup, model: str) -> tuple[int, int]:
    if model == "lenet":
        return 120, 400
    s = _feature_side(setup.dataset)
    return 1000, int(setup.alex_widths[2]) * s * s

def batch_configs(setup: Setup) -> list:
    """The jobs of :func:`run_batch`: the training runs, ``noise_seeds`` pure-noise matrices per FC1 shape trained,
    then the NTK runs."""
    models = ("lenet", "minialexnet") if setup.alex_train else ("lenet",)
    noise = [NoiseConfig(*_fc1_shape(setup, m), seed=setup.seed + i) for m in models for i in range(setup.noise_seeds)]
    return setup.run_configs() + noise + setup.ntk_configs()

def boot_configs(setup: Setup, fits) -> tuple[list, list]:
    """The second stage of :func:`run_batch`: a :class:`KappaBootConfig` per trained layer (standard initialization)
    and a :class:`PaperTestConfig` per layer where the paper gives a finite kappa, keyed ``(model, batch, seed)``."""
    boot, tests = [], []
    for f in fits:
        if f.init != "std":
            continue
        key = (f.model, f.batch_size, f.seed)
        boot.append((key, KappaBootConfig(float(f.kappa), float(f.gamma), int(f.eigs.size), int(setup.kappa_boot),
                                          (int(setup.seed), 4000, int(f.batch_size), int(f.seed)))))
        kp = PAPER_KAPPA.get((f.model, f.batch_size), math.inf)
        if math.isfinite(kp):
            tests.append((key, PaperTestConfig(float(kp), float(f.gamma), int(f.eigs.size), PAPER_TEST_REPS,
                                               (int(setup.seed), 3000 + int(f.batch_size), int(f.seed)))))
    return boot, tests

def run_batch(setup: Setup) -> BatchResult:
    """Train and fit every run of ``setup``, fit the noise references and run the NTK jobs, then bootstrap each
    trained layer's kappa and test the paper's kappa directly: on worker processes, through the cache."""
    jobs = batch_configs(setup)
    # the costliest jobs first, so that the two workers finish together
    order = sorted(range(len(jobs)), key=lambda i: -_cost(jobs[i]))
    with setup.executor_context() as pool:
        done = run_sweep(train_and_fit, [jobs[i] for i in order], executor=pool, progress=False)
        out = [None] * len(jobs)
        for i, r in zip(order, done):
            out[i] = r
        ntk = [r for r in out if isinstance(r, NTKFit)]
        fits = [r for r in out if isinstance(r, LayerFit) and r.model != "noise"]
        noise = [r for r in out if isinstance(r, LayerFit) and r.model == "noise"]
        boot, tests = boot_configs(setup, fits)
        draws = run_sweep(kappa_boot, [c for _, c in boot], executor=pool, progress=False) if boot else []
        nulls = run_sweep(paper_null, [c for _, c in tests], executor=pool, progress=False) if tests else []
    by_key = {(f.model, f.batch_size, f.seed): f for f in fits if f.init == "std"}
    paper_tests = {k: (paper_ks(by_key[k].eigs, c.kappa, c.gamma), np.asarray(v)) for (k, c), v in zip(tests, nulls)}
    return BatchResult(setup, fits, noise, summarize([f for f in fits if f.init == "std"]), ntk,
                       {k: np.asarray(d) for (k, _), d in zip(boot, draws)}, paper_tests)

def _cost(job) -> float:
    if isinstance(job, NoiseConfig):
        return 0.0
    if isinstance(job, NTKConfig):  # the NTK's Gram products dominate LeNet's, then the bootstrap refits
        return (3e6 if job.net.model == "lenet" else 2e5) * (job.net.n_train / 1000) ** 2 + 3e4 * job.boot
    per_image = 400.0 if job.model == "minialexnet" else 1.0  # MiniAlexNet costs ~400x LeNet per image
    return per_image * job.epochs * (job.n_train or 4000) * (1.0 + 50.0 / job.batch_size)

def _q(values) -> tuple[float, float, float]:
    v = np.asarray(values, dtype=np.float64)
    return float(np.median(v)), float(np.min(v)), float(np.max(v))

def summarize(fits: list) -> pd.DataFrame:
    """Per (model, batch size): seed median (a repeat may be MP) and range of both fits, accuracies, KS, FC1's move."""
    rows = []
    keys = list(dict.fromkeys((f.model, f.batch_size) for f in fits))
    for m, b in keys:
        sel = [f for f in fits if (f.model, f.batch_size) == (m, b)]
        k, d, lk, ld = (_q([getattr(f, a) for f in sel]) for a in ("kappa", "delta", "l1_kappa", "l1_delta"))
        rows.append({"model": m, "batch": b, "repeats": len(sel), "steps": sel[0].steps,
                     "kappa": k[0], "kappa lo": k[1], "kappa hi": k[2], "delta": d[0], "delta lo": d[1], "delta hi": d[2],
                     "L1 kappa": lk[0], "L1 kappa lo": lk[1], "L1 kappa hi": lk[2],
                     "L1 delta": ld[0], "L1 delta lo": ld[1], "L1 delta hi": ld[2],
                     "paper kappa": PAPER_KAPPA.get((m, b), np.nan),
                     "train acc": float(np.mean([f.train_acc for f in sel])),
                     "train acc lo": float(np.min([f.train_acc for f in sel])),
                     "test acc": float(np.mean([f.test_acc for f in sel])),
                     "KS HTMP": float(np.mean([f.ks for f in sel])), "KS MP": float(np.mean([f.mp_ks for f in sel])),
                     "weight change": float(np.median([f.weight_change for f in sel])), "gamma": sel[0].gamma})
    return pd.DataFrame(rows).set_index(["model", "batch"])

def moments_table(kappas, gamma: float) -> pd.DataFrame:
    """Mass, mean and second moment by quadrature of the density against the closed forms."""
    rows = []
    for k in kappas:
        q = htmp.quadrature_moments(k, gamma)
        exact = np.array([1.0, 1.0, htmp.htmp_moments(k, gamma).second])
        rows.append({"kappa": k, "mass": q[0], "mean": q[1], "2nd moment": q[2], "closed form": exact[2],
                     "max |error|": float(np.max(np.abs(q - exact)))})
    return pd.DataFrame(rows).set_index("kappa")

def mp_convergence_table(kappas, gamma: float, grid: np.ndarray) -> pd.DataFrame:
    """Sup distances between the HTMP and MP densities and CDFs on ``grid``, per kappa."""
    mp_pdf, mp_cdf = spectra.mp_density(grid, gamma), spectra.mp_cdf(grid, gamma)
    return pd.DataFrame([{"kappa": k, "sup|pdf - MP|": float(np.max(np.abs(htmp.htmp_pdf(grid, k, gamma) - mp_pdf))),
                          "sup|CDF - MP|": float(np.max(np.abs(htmp.htmp_cdf(grid, k, gamma) - mp_cdf)))}
                         for k in kappas]).set_index("kappa")

def sampler_table(ns, kappa: float, gamma: float, seed: int) -> tuple[pd.DataFrame, list[np.ndarray]]:
    """The finite-n sampler at each size: KS distance to the density, 1/sqrt(n), second moment."""
    samples = [htmp.sample_htmp(n, kappa, gamma, seed=seed) for n in ns]
    second = htmp.htmp_moments(kappa, gamma).second
    df = pd.DataFrame([{"n": n, "KS": htmp.ks_distance(lam, kappa, gamma), "1/sqrt(n)": 1 / math.sqrt(n),
                        "2nd moment": float(np.mean(lam**2)), "closed form": second} for n, lam in zip(ns, samples)])
    return df.set_index("n"), samples

PHASE_MODEL: tuple[tuple[str, float, tuple[float, ...]], ...] = (  # paper 001's 5+1 phases: (phase, bulk kappa, spikes)
    ("random-like", math.inf, ()), ("bleeding-out", math.inf, (1.9, 2.0, 2.1)),
    ("bulk+spikes", math.inf, (4.0, 6.0, 9.0)), ("bulk-decay", 5.5, (4.0, 6.0, 9.0)),
    ("heavy-tailed", 0.5, (4.0, 6.0, 9.0)), ("rank-collapse", 0.05, (4.0, 6.0, 9.0)))

def phase_spectra(n: int, gamma: float, seed: int) -> tuple[list[np.ndarray], pd.DataFrame]:
    """Each phase of :data:`PHASE_MODEL` generated and labelled by ``spectra.classify_phase``, with a table."""
    norm = lambda s: "".join(ch for ch in s.lower() if ch.isalpha())  # noqa: E731
    eigs = [htmp.spiked_htmp_spectrum(n, k, gamma, sp, seed=seed) for _, k, sp in PHASE_MODEL]
    labels = [spectra.classify_phase(lam, gamma) for lam in eigs]
    df = pd.DataFrame([{"intended": want, "kappa": k, "spikes": str(sp), "label": lab, "as intended": norm(lab) == norm(want)}
                       for (want, k, sp), lab in zip(PHASE_MODEL, labels)])
    return eigs, df

def trajectory_table(steps, esds, gamma: float, p: int) -> pd.DataFrame:
    """Per step of a run: HTMP's kappa and KS, MP's KS, the power-law alpha and the phase of the ESD over ``p``."""
    rows = []
    for t, lam in zip(steps, esds):
        lam = np.asarray(lam) / p
        fit = htmp.fit_htmp(lam, gamma)
        rows.append({"step": int(t), "kappa": fit.kappa, "KS": fit.ks, "KS of MP": fit.mp_ks,
                     "alpha (power law)": spectra.fit_power_law(lam).alpha, "phase": spectra.classify_phase(lam, gamma)})
    return pd.DataFrame(rows).set_index("step")

def run_trajectory(setup: "Setup") -> pd.DataFrame:
    """The two-layer FB-Adam run of paper 003 at the Setup's sizes, and :func:`trajectory_table` of it."""
    from htlib.two_layer import TwoLayerConfig, train
    cfg = TwoLayerConfig(n=setup.traj_n, d=setup.traj_d, h=setup.traj_h, seed=setup.seed, device="cpu",
                         optimizer="adam", eta=float(setup.traj_eta), steps=setup.traj_steps,
                         keep_weights=(0, 1, setup.traj_steps - 1, setup.traj_steps))
    traj = run_sweep(train, [cfg], progress=False)[0]
    g = min(setup.traj_d, setup.traj_h) / max(setup.traj_d, setup.traj_h)
    return trajectory_table(traj.steps, traj.esd, g, max(setup.traj_d, setup.traj_h))

def tail_panels(kappa: float, gamma: float) -> plt.Figure:
    """Both tails on log-log axes: HTMP's lower one (slope ``delta - 1``) and the inverse law's upper one."""
    te = htmp.tail_exponents(kappa, gamma)
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4))
    x_low = np.geomspace(1e-8, 1.0, 300)
    y0 = htmp.htmp_pdf(x_low[:1], kappa, gamma)[0]
    axes[0].loglog(x_low, htmp.htmp_pdf(x_low, kappa, gamma), color=plotting.color(0), label=rf"HTMP, $\kappa={kappa:g}$")
    axes[0].loglog(x_low[:200], 3 * y0 * (x_low[:200] / x_low[0]) ** te.htmp_lower, "k--",
                   label=rf"slope $\delta-1={te.htmp_lower:.3g}$ (shifted up)")
    axes[0].set(xlabel="$x$", ylabel="density", title="lower tail of HTMP")
    y = np.geomspace(1.0, 1e6, 300)
    y1 = htmp.inverse_htmp_pdf(y[-1:], kappa, gamma)[0]
    axes[1].loglog(y, htmp.inverse_htmp_pdf(y, kappa, gamma), color=plotting.color(0), label="inverse law")
    axes[1].loglog(y[100:], 3 * y1 * (y[100:] / y[-1]) ** (-te.inverse_alpha), "k--",
                   label=rf"slope $-(1+\delta)={-te.inverse_alpha:.3g}$ (shifted up)")
    axes[1].set(xlabel="$y = 1/x$", title="upper tail of the inverse law")
    for ax in axes:
        ax.legend(fontsize=9)
    return fig

def inverse_tail_fit(kappa: float, gamma: float, n: int, seed: int) -> pd.DataFrame:
    """``spectra.fit_power_law`` on the inverses of an HTMP sample, beside ``1 + delta`` and the exact local slopes."""
    pl = spectra.fit_power_law(1.0 / htmp.sample_htmp(n, kappa, gamma, seed=seed))
    slopes = -htmp.inverse_tail_slope(np.array([pl.xmin, 10 * pl.xmin, 1e4 * pl.xmin]), kappa, gamma)
    row = {"n": n, "predicted 1 + delta": htmp.tail_exponents(kappa, gamma).inverse_alpha, "fitted exponent": pl.alpha,
           "+-": pl.sigma, "tail points": pl.n_tail, "KS": pl.ks_distance, "xmin": pl.xmin,
           "slope at xmin": slopes[0], "at 10 xmin": slopes[1], "at 1e4 xmin": slopes[2]}
    return pd.DataFrame([row])

@functools.lru_cache(maxsize=256)
def _bulk_fit_cached(eigs: bytes, gamma: float) -> tuple[int, float]:
    lam = np.sort(np.frombuffer(eigs, dtype=np.float64))
    try:
        mp = spectra.fit_mp(lam, gamma)
        bulk = lam[: lam.size - mp.num_spikes]
        return int(mp.num_spikes), float(htmp.fit_htmp(bulk, gamma).kappa)
    except ValueError:  # too few eigenvalues to fit a bulk
        return 0, math.nan

def bulk_fit(f: "LayerFit") -> tuple[int, float]:
    """The outliers of a layer's ESD (:func:`htlib.spectra.fit_mp`'s spikes) and the KS fit of the rest:
    ``(count, kappa of the bulk)``, ``nan`` when too small.  A kappa falling while the bulk stays MP: the outliers.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> W = rng.standard_normal((120, 400)) / 20.0
    >>> W[:3] *= 3.0  # three rows carry spikes
    >>> f = fit_layer(W, model="noise", batch_size=0, seed=0)
    >>> n, k = bulk_fit(f)
    >>> n, k
    (3, inf)
    """
    return _bulk_fit_cached(np.ascontiguousarray(f.eigs, dtype=np.float64).tobytes(), float(f.gamma))

def paper_kappa_test(eigs, kappa: float, gamma: float, *, reps: int = PAPER_TEST_REPS, seed=0) -> tuple[float, np.ndarray]:
    """A direct test of one fixed law: the KS of HTMP(``kappa``, ``gamma``), scale fitted by KS, to ``eigs``, and its
    null from ``reps`` beta-Laguerre spectra of that law at the same size (whose eigenvalues repel, as the data's do).

    Examples
    --------
    >>> x = htmp.sample_htmp(120, 1.1, 0.3, seed=5)
    >>> ks, null = paper_kappa_test(x, 1.1, 0.3, reps=20, seed=1)
    >>> bool(ks <= null.max()), null.shape
    (True, (20,))
    """
    seed = tuple(int(v) for v in np.atleast_1d(seed))
    null = paper_null(PaperTestConfig(float(kappa), float(gamma), int(np.asarray(eigs).size), int(reps), seed))
    return paper_ks(eigs, kappa, gamma), null

def paper_ks(eigs, kappa: float, gamma: float) -> float:
    """The KS distance of HTMP(``kappa``, ``gamma``) to the positive ``eigs``, its scale fitted by KS."""
    cdf = functools.partial(htmp.htmp_cdf, kappa=float(kappa), gamma=float(gamma))
    x = np.sort(np.asarray(eigs, dtype=np.float64))
    x = x[x > 0]
    return htmp.fit_scale_ks(x, cdf, float(x.mean()))[1]
