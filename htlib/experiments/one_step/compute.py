"""The one-step chapter (paper 003, §4): ``Setup``, ``PAPER`` and the sweeps of Figs. 2-3, Theorem 4.1 and
Corollary 4.2 (:func:`run_fig2`, :func:`run_fig3`, :func:`run_scaling`) with their typed results, built on
:mod:`htlib.two_layer`."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import scipy.stats
import torch

from htlib import spectra
from htlib._checks import check_choice
from htlib.params import MIN_WIDTH, SweepSetup, param
from htlib.records import PAPER_SETTING
from htlib.stats import SeedInterval, seed_interval
from htlib.sweep import run_sweep
from htlib.two_layer import (ADAM_BETAS, READOUT_SCALES, AdamState, RunGrid, Trajectory, TwoLayerConfig,
                             adam_direction, full_batch_gradient, init_weights, make_data, run_grid,
                             spectral_norm, train)

OPTIMIZERS: tuple[str, ...] = ("gd", "adam")
SIGN_FACTOR = (1 - ADAM_BETAS[0]) / math.sqrt(1 - ADAM_BETAS[1])
"""``(1 - beta1)/sqrt(1 - beta2) ~ 3.162``: FB-Adam's first step without bias correction is this times ``sign(G_0)``."""

@dataclass(frozen=True)
class Setup(SweepSetup):
    """The chapter's parameters (its ``parameters`` cell), validated once.

    Examples
    --------
    >>> Setup(seeds=3).deviations(["n", "seeds"])
    'seeds = 3 (paper: 5)'
    >>> Setup(scaling_ds=[16, 32])
    Traceback (most recent call last):
    ...
    htlib.params.ParameterError: parameter 'scaling_ds' must be a list of at least 3 integers; got [16, 32]
    """
    n: int = param(2000, "train-set and probe-set size", ge=1, le=100_000)
    d: int = param(1000, "input dimension", ge=MIN_WIDTH, le=20_000)
    h: int = param(1500, "hidden width", ge=MIN_WIDTH, le=20_000)
    n_test: int = param(200, "test-set size", ge=1, le=100_000)
    rho_e: float = param(0.3, "label-noise standard deviation", ge=0)
    lam: float = param(0.01, "ridge constant of the readout", gt=0)
    bias_correction: bool = param(True, "FB-Adam with PyTorch's bias correction (False: the paper's eq. (2))")
    etas: tuple[float, ...] = param([0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 2000.0, 3000.0],
                                    "learning-rate grid of Fig. 3", gt=0)
    seeds: int = param(10, "runs per optimizer and learning rate (the paper: 5; 10 decide the thresholds)", ge=2,
                       le=20)
    fig2_gd_etas: tuple[float, ...] = param([0.1, 2000.0], "GD learning rates of Fig. 2", gt=0)
    fig2_adam_etas: tuple[float, ...] = param([0.1, 10.0], "FB-Adam learning rates of Fig. 2", gt=0)
    scaling_h: int = param(250, "fixed width of the Theorem 4.1 and Corollary 4.2 sweep", ge=8, le=20_000)
    scaling_ds: tuple[int, ...] = param([250, 500, 1000, 2000, 4000], "input dimensions of that sweep (n/d fixed)",
                                        ge=8, le=20_000, min_len=3)
    scaling_hs: tuple[int, ...] = param([125, 250, 500, 1000], "widths of the same sweep at its largest d",
                                        ge=8, le=20_000, min_len=3)
    scaling_seeds: int = param(3, "seeds per size of that sweep", ge=1, le=20)
    readout: str = param("d", "readout convention of the figures (d: the published figures')", choices=READOUT_SCALES)
    ci_level: float = param(0.95, "confidence level of the intervals", gt=0, lt=1)

    @property
    def base(self) -> dict:
        """The :class:`htlib.two_layer.TwoLayerConfig` fields every run of the chapter shares."""
        return dict(n=self.n, d=self.d, h=self.h, n_test=self.n_test, rho_e=self.rho_e, lam=self.lam,
                    bias_correction=self.bias_correction, readout_scale=self.readout)

    @property
    def edge(self) -> float:
        """The MP edge of ``W0ᵀW0`` for ``N(0, 1)`` entries, ``(sqrt(h) + sqrt(d))^2``."""
        return mp_edge(self.h, self.d)

    def deviations(self, names: Sequence[str]) -> str:
        """``"paper"`` if the fields ``names`` have the paper's values (seeds: at least), else the deviations."""
        out = []
        for name in names:
            mine, theirs = getattr(self, name), getattr(PAPER, name)
            if name == "seeds" and mine >= PAPER_SEEDS:
                continue
            if name == "seeds":
                theirs = PAPER_SEEDS
            if name == "etas" and set(theirs) <= set(mine):
                continue
            if mine != theirs:
                out.append(f"{name} = {_show(mine)} (paper: {_show(theirs)})")
        return PAPER_SETTING if not out else "; ".join(out)

PAPER = Setup()
"""The paper's §4 setting: n = 2000, d = 1000, h = 1500 and the nine-rate grid are the defaults; the chapter runs
10 seeds where the paper runs :data:`PAPER_SEEDS` (5 leave the thresholds' close calls undecided)."""
PAPER_SEEDS = 5
"""The paper's runs per optimizer and learning rate (§4.1)."""

def _show(v) -> str:
    if isinstance(v, tuple):
        return "[" + ", ".join(f"{x:g}" for x in v) + "]"
    return f"{v:g}" if isinstance(v, float) else str(v)

def mp_edge(h: int, d: int) -> float:
    """The MP edge of ``W0ᵀW0`` for ``N(0, 1)`` entries: ``max(h, d) (1 + sqrt(min/max))^2 = (sqrt(h) + sqrt(d))^2``."""
    return max(h, d) * spectra.mp_edges(min(h, d) / max(h, d))[1]

RULE_NAMES: tuple[str, ...] = ("spike", "sim", "kta", "loss")
"""The quantities a learning-rate rule reads (:data:`htlib.experiments.one_step.reading.RULES` holds their levels)."""
MODE_MASS = 0.1
"""A mode of the log-ESD must hold this fraction of the eigenvalues (:func:`htlib.spectra.esd_modes`)."""
COR_FORMS: dict[str, str] = {"eta_f": "1", "eta_2": "1 + sqrt(h/d)"}
"""The finite-size form of each Corollary 4.2 learning rate, as the claims name it."""

@dataclass(frozen=True)
class Fig2Result:
    """Fig. 2 for every seed: ``init[s]`` (``W0``), ``runs[(optimizer, eta)][s]`` (one step) and the
    :func:`htlib.spectra.esd_modes` of each (key ``"init"`` for ``W0``)."""
    edge: float
    init: tuple[Trajectory, ...]
    runs: dict[tuple[str, float], tuple[Trajectory, ...]]
    modes: dict

    @property
    def panels(self) -> list[tuple[str, float]]:
        """The (optimizer, eta) of the figure's panels, GD first."""
        return list(self.runs)

def init_configs(setup: Setup) -> list[TwoLayerConfig]:
    """The initializations (``steps = 0``, ESD recorded) of seeds ``0..seeds-1``, for Figs. 2 and 3."""
    return [TwoLayerConfig(**setup.base, steps=0, seed=s) for s in range(setup.seeds)]

def fig2_configs(setup: Setup) -> list[TwoLayerConfig]:
    """One step of each optimizer at each Fig. 2 learning rate and seed, ESD of ``W1`` recorded."""
    return [TwoLayerConfig(**setup.base, optimizer=opt, eta=eta, seed=s, record_initial=False)
            for opt, grid in (("gd", setup.fig2_gd_etas), ("adam", setup.fig2_adam_etas))
            for eta in grid for s in range(setup.seeds)]

def run_fig2(setup: Setup) -> Fig2Result:
    """Fig. 2 for every seed: ``W0`` and ``W1`` of each panel, with the modes of their log-ESDs."""
    init, steps = init_configs(setup), fig2_configs(setup)
    with setup.executor_context() as pool:
        done = run_sweep(train, init + steps, executor=pool, desc="Fig. 2")
    init_runs, step_runs = tuple(done[:len(init)]), done[len(init):]
    runs: dict[tuple[str, float], tuple[Trajectory, ...]] = {}
    for c, r in zip(steps, step_runs):
        runs.setdefault((c.optimizer, c.eta), ())
        runs[(c.optimizer, c.eta)] += (r,)
    modes = {"init": [spectra.esd_modes(r.esd[-1], min_mass=MODE_MASS) for r in init_runs]}
    modes.update({k: [spectra.esd_modes(r.esd[-1], min_mass=MODE_MASS) for r in v] for k, v in runs.items()})
    return Fig2Result(edge=setup.edge, init=init_runs, runs=runs, modes=modes)

@dataclass(frozen=True)
class Fig3Result:
    """The Fig. 3 grid (one step, every optimizer x eta x seed), its initializations and the first-update norms."""
    grid: RunGrid
    init: tuple[Trajectory, ...]
    edge: float
    norms: "FirstStepNorms"

    def init_values(self, metric: str) -> np.ndarray:
        """``metric`` of ``W0`` per seed (aligned with ``grid.seeds``)."""
        return np.array([r.metric(metric)[0] for r in self.init])

    def init_mean(self, metric: str) -> float:
        return float(self.init_values(metric).mean())

    @property
    def predicted(self) -> dict[str, float]:
        """The learning rate at which ``||eta * first update||_2 = ||W0||_2``, per optimizer."""
        return {"gd": self.norms.w0_spec / self.norms.gd_spec, "adam": self.norms.w0_spec / self.norms.adam_spec}

    def statistic(self, rule: str, optimizer: str, readout: str = "d") -> np.ndarray:
        """The per-seed statistic of rule ``rule`` (one of :data:`RULE_NAMES`), shape ``(etas, seeds)``."""
        check_choice("rule", rule, RULE_NAMES)
        g = self.grid
        if rule == "spike":
            return g.get("lambda_max", optimizer) / self.edge
        if rule == "sim":
            return g.get("sim", optimizer)
        if rule == "kta":
            return g.get(f"kta@{readout}", optimizer) / self.init_values(f"kta@{readout}")
        drops = [1 - g.get(f"{m}@{readout}", optimizer) / self.init_values(f"{m}@{readout}")
                 for m in ("train_loss", "test_loss")]
        return np.minimum(*drops)

    def relative(self, metric: str, optimizer: str, readout: str = "d") -> np.ndarray:
        """``metric@readout`` per seed over its value at the grid's ``eta = 1`` (NaN if 1 is not in the grid)."""
        v = self.grid.get(f"{metric}@{readout}", optimizer)
        j = np.flatnonzero(self.grid.etas == 1.0)
        return v / v[j[0]] if j.size else np.full_like(v, np.nan)

def fig3_configs(setup: Setup) -> list[TwoLayerConfig]:
    """One step of each optimizer at each learning rate and seed; metrics of ``W_1`` only, no ESD."""
    return [TwoLayerConfig(**setup.base, optimizer=opt, eta=eta, seed=s, record_initial=False, record_esd=False)
            for opt in OPTIMIZERS for eta in setup.etas for s in range(setup.seeds)]

def run_fig3(setup: Setup) -> Fig3Result:
    """The Fig. 3 grid, the initializations it is compared with and the first-update norms at seed 0."""
    configs, init = fig3_configs(setup), init_configs(setup)
    with setup.executor_context() as pool:
        done = run_sweep(train, configs + init, executor=pool, desc="Fig. 3")
        norms = run_sweep(first_step_norms, [TwoLayerConfig(**setup.base, seed=0)], executor=pool, desc="norms")[0]
    return Fig3Result(grid=run_grid(done[:len(configs)]), init=tuple(done[len(configs):]), edge=setup.edge, norms=norms)

def autograd_comparison(cfg: TwoLayerConfig) -> dict[str, float]:
    """The largest relative differences over the steps of ``cfg`` between :func:`htlib.two_layer.train` and the
    independent autograd trainer (:func:`htlib.two_layer_autograd.train_autograd`) on the same data and ``W0``:
    of ``W_t``, of the loss the updates minimise and of the readout's train and test losses; and, for scale,
    the autograd run's own float32-to-float64 distance."""
    from htlib import two_layer_autograd as ag
    cfg = dataclasses.replace(cfg, record_esd=False, keep_weights=tuple(range(cfg.steps + 1)))
    ref, data, (W0, a0) = train(cfg), make_data(cfg), init_weights(cfg)
    run, run64 = (ag.train_autograd(data.X_train, data.y_train, W0.to(dt), a0.to(dt), optimizer=cfg.optimizer,
                                    eta=cfg.eta, steps=cfg.steps) for dt in (torch.float32, torch.float64))
    ro = np.array([ag.readout_losses(W, data.X_probe, data.y_probe, data.X_test, data.y_test, lam=cfg.lam,
                                     scale=cfg.readout_scale) for W in run.weights])
    def rel(xs, ys) -> float:
        return max(ag.relative_difference(x, y) for x, y in zip(xs, ys))
    return {"W": rel(run.weights, [ref.weights[t] for t in range(cfg.steps + 1)]),
            "update loss": rel(run.losses, ref.update_loss), "train loss": rel(ro[:, 0], ref.train_loss),
            "test loss": rel(ro[:, 1], ref.test_loss),
            "float32 vs float64": max(rel(run.weights, run64.weights), rel(run.losses, run64.losses))}

def run_autograd_comparison(setup: Setup, etas: dict[str, float], steps: int = 10) -> dict[str, dict[str, float]]:
    """:func:`autograd_comparison` of each optimizer at its learning rate in ``etas``, seed 0, FB-Adam with bias
    correction (as ``torch.optim.Adam``)."""
    configs = [TwoLayerConfig(**{**setup.base, "bias_correction": True}, optimizer=o, eta=float(etas[o]), steps=steps,
                              seed=0) for o in OPTIMIZERS]
    with setup.executor_context() as pool:
        return dict(zip(OPTIMIZERS, run_sweep(autograd_comparison, configs, executor=pool, desc="autograd trainer")))

@dataclass(frozen=True)
class FirstStepNorms:
    """Norms of ``G_0`` (``gd_*``), FB-Adam's ``G~_0`` with / without bias correction (``adam_*``, ``adam_nobc_*``),
    ``sign(G_0)`` and ``W_0``; ``dev_*``: ``max |G~_0 - c sign(G_0)|``, ``c = 1`` / ``SIGN_FACTOR``."""
    gd_spec: float
    gd_frob: float
    adam_spec: float
    adam_frob: float
    adam_nobc_spec: float
    adam_nobc_frob: float
    sign_spec: float
    sign_frob: float
    dev_bc: float
    dev_nobc: float
    w0_spec: float
    w0_frob: float
    zero_fraction: float

def first_step_norms(config: TwoLayerConfig) -> FirstStepNorms:
    """:class:`FirstStepNorms` at ``config``'s data and ``W0`` (its optimizer, eta and bias correction unused)."""
    data = make_data(config)
    W, a = init_weights(config)
    G = full_batch_gradient(W, a, data.X_train, data.y_train)
    zeros = AdamState.zeros_like(W)
    bc, _ = adam_direction(G, zeros, bias_correction=True)
    nobc, _ = adam_direction(G, zeros, bias_correction=False)
    s = torch.sign(G)
    def frob(M: torch.Tensor) -> float:
        return float(torch.linalg.matrix_norm(M.to(torch.float64)))
    return FirstStepNorms(
        gd_spec=spectral_norm(G), gd_frob=frob(G), adam_spec=spectral_norm(bc), adam_frob=frob(bc),
        adam_nobc_spec=spectral_norm(nobc), adam_nobc_frob=frob(nobc), sign_spec=spectral_norm(s), sign_frob=frob(s),
        dev_bc=float((bc - s).abs().max()), dev_nobc=float((nobc - SIGN_FACTOR * s).abs().max()),
        w0_spec=spectral_norm(W), w0_frob=frob(W), zero_fraction=float((G == 0).to(torch.float64).mean()))

def scaling_configs(setup: Setup, over: str = "d") -> list[TwoLayerConfig]:
    """The scaling sweep at the chapter's ``n/d``: over ``d`` (``scaling_ds``) at width ``scaling_h``, or over ``h``
    (``scaling_hs``) at the largest of ``scaling_ds``."""
    check_choice("over", over, ("d", "h"))
    sizes = ([(d, setup.scaling_h) for d in setup.scaling_ds] if over == "d" else
             [(max(setup.scaling_ds), h) for h in setup.scaling_hs])
    return [TwoLayerConfig(**{**setup.base, "n": max(1, round(setup.n / setup.d * d)), "d": d, "h": h}, seed=s)
            for d, h in sizes for s in range(setup.scaling_seeds)]

ONSET_CS: tuple[float, ...] = tuple(2.0 ** (k / 4) for k in range(-4, 9))
"""The grid of ``eta sqrt(h)`` (1/2 to 4, four points per octave) at which :func:`spike_ratios` takes one FB-Adam
step: the spike's onset in ``eta`` is read off it, per width."""

def spike_ratios(config: TwoLayerConfig) -> np.ndarray:
    """``lambda_max(W1ᵀW1) / lambda_+`` after one FB-Adam step (``config``'s bias correction) at each
    ``eta = c / sqrt(h)``, ``c`` in :data:`ONSET_CS`, from ``config``'s data and ``W0``: the first step is
    ``W1 = W0 - eta G~0`` whatever ``eta``, so one gradient serves the whole grid."""
    data = make_data(config)
    W, a = init_weights(config)
    G = full_batch_gradient(W, a, data.X_train, data.y_train)
    step, _ = adam_direction(G, AdamState.zeros_like(W), bias_correction=config.bias_correction)
    edge = mp_edge(config.h, config.d)
    return np.array([spectral_norm(W - (c / math.sqrt(config.h)) * step) ** 2 / edge for c in ONSET_CS])

@dataclass(frozen=True)
class ExponentFit:
    """Least-squares slope of ``log y`` on ``log d`` over every (d, seed) point, with its t-interval."""
    slope: float
    low: float
    high: float
    level: float

    @property
    def interval(self) -> tuple[float, float]:
        return (self.low, self.high)

def fit_exponent(ds: np.ndarray, y: np.ndarray, level: float = 0.95) -> ExponentFit:
    """:class:`ExponentFit` of ``y ~ d^slope`` (``linregress`` on logs, ``slope +- t * stderr``).

    Examples
    --------
    >>> d = np.array([100.0, 200, 400, 800])
    >>> f = fit_exponent(d, 3 * d ** -0.5 * (1 + 0.01 * np.array([1, -1, 1, -1])))
    >>> round(f.slope, 2), bool(f.low < -0.5 < f.high)
    (-0.51, True)
    """
    x, v = np.log(np.asarray(ds, dtype=float)), np.log(np.asarray(y, dtype=float))
    if x.size < 3 or x.shape != v.shape:
        raise ValueError("ds and y must be arrays of the same shape with at least 3 points")
    fit = scipy.stats.linregress(x, v)
    t = scipy.stats.t.ppf(0.5 + level / 2, x.size - 2)
    return ExponentFit(slope=float(fit.slope), low=float(fit.slope - t * fit.stderr),
                       high=float(fit.slope + t * fit.stderr), level=level)

SCALING_QUANTITIES: dict[str, tuple[str, str]] = {
    "adam_frob": ("||G~0||_F / sqrt(hd)", "Thm. 4.1"), "adam_spec": ("||G~0||_2 / sqrt(hd)", "Thm. 4.1"),
    "adam_nobc_frob": ("||G~0||_F / sqrt(hd), eq. (2)", "Thm. 4.1"),
    "adam_nobc_spec": ("||G~0||_2 / sqrt(hd), eq. (2)", "Thm. 4.1"), "gd_spec": ("||G0||_2 / sqrt(hd)", "GD"),
    "eta_f": ("eta*_F = ||W0||_F / ||G~0||_F", "Cor. 4.2"),
    "eta_2": ("eta*_2 sqrt(h) = sqrt(h) ||W0||_2 / ||G~0||_2", "Cor. 4.2"),
    "gd_eta_2": ("GD: sqrt(h) ||W0||_2 / ||G0||_2", "GD"),
}
"""The quantities whose exponent in ``d`` the scaling sweep fits (name -> (label, statement))."""

def finite_size_form(key: str, h: int, d: int) -> float:
    """The finite-size factor of a Corollary 4.2 learning rate at ``(h, d)``, which its Theta(1) leaves out:
    ``1 + sqrt(h/d)`` for ``eta_2`` (``||W0||_2 ~ sqrt(h) + sqrt(d)``), 1 for ``eta_f``.

    Examples
    --------
    >>> finite_size_form("eta_2", 250, 1000), finite_size_form("eta_f", 250, 1000)
    (1.5, 1.0)
    """
    check_choice("key", key, tuple(COR_FORMS))
    return math.sqrt(mp_edge(h, d) / d) if key == "eta_2" else 1.0

def residual_exponents(ds: np.ndarray, seeds: np.ndarray, y: np.ndarray, form: np.ndarray) -> np.ndarray:
    """Per seed, the least-squares exponent ``x`` of ``y / form ~ d^x`` over that seed's sizes.

    Examples
    --------
    >>> d = np.array([100.0, 200, 400, 100, 200, 400])
    >>> residual_exponents(d, np.array([0, 0, 0, 1, 1, 1]), 3 * (1 + 10 / d) * d ** 0.2, 1 + 10 / d).round(6).tolist()
    [0.2, 0.2]
    """
    out = []
    for s in np.unique(seeds):
        k = seeds == s
        if np.unique(ds[k]).size < 2:
            raise ValueError("every seed needs at least two sizes for its exponent")
        out.append(scipy.stats.linregress(np.log(ds[k]), np.log(y[k] / form[k])).slope)
    return np.array(out)

@dataclass(frozen=True)
class ScalingResult:
    """The scaling sweep: per config its norms, the :data:`SCALING_QUANTITIES`, their exponents in ``d`` and, for
    Corollary 4.2's rates, the seed interval of the exponents left after :func:`finite_size_form` (``residual``);
    ``h_configs``, ``h_values``: the same quantities over the widths at the largest ``d``, and ``h_ratios`` their
    :func:`spike_ratios` (one row per width and seed)."""
    configs: tuple[TwoLayerConfig, ...]
    norms: tuple[FirstStepNorms, ...]
    values: dict[str, np.ndarray]
    fits: dict[str, ExponentFit]
    residual: dict[str, SeedInterval] = dataclasses.field(default_factory=dict)
    h_configs: tuple[TwoLayerConfig, ...] = ()
    h_values: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    h_ratios: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, len(ONSET_CS))))

    @property
    def ds(self) -> np.ndarray:
        return np.array([c.d for c in self.configs], dtype=float)

    @property
    def h(self) -> int:
        return self.configs[0].h

def _quantities(c: TwoLayerConfig, r: FirstStepNorms) -> dict[str, float]:
    root = math.sqrt(c.h * c.d)
    return {"adam_frob": r.adam_frob / root, "adam_spec": r.adam_spec / root, "adam_nobc_frob": r.adam_nobc_frob / root,
            "adam_nobc_spec": r.adam_nobc_spec / root, "gd_spec": r.gd_spec / root,
            "eta_f": r.w0_frob / r.adam_frob, "eta_2": math.sqrt(c.h) * r.w0_spec / r.adam_spec,
            "gd_eta_2": math.sqrt(c.h) * r.w0_spec / r.gd_spec}

def run_scaling(setup: Setup) -> ScalingResult:
    """The norms of the first update over ``scaling_ds`` at fixed ``scaling_h``, and their exponents in ``d``."""
    configs, h_configs = scaling_configs(setup), scaling_configs(setup, "h")
    with setup.executor_context() as pool:
        done = run_sweep(first_step_norms, configs + h_configs, executor=pool, desc="Theorem 4.1")
        ratios = run_sweep(spike_ratios, h_configs, executor=pool, desc="spike onset")
    norms = done[:len(configs)]
    def values_of(cs, ns) -> dict[str, np.ndarray]:
        q = [_quantities(c, r) for c, r in zip(cs, ns)]
        return {k: np.array([row[k] for row in q]) for k in SCALING_QUANTITIES}
    values = values_of(configs, norms)
    ds = np.array([c.d for c in configs], dtype=float)
    fits = {k: fit_exponent(ds, v, setup.ci_level) for k, v in values.items()}
    seeds = np.array([c.seed for c in configs])
    residual = {}
    for k in COR_FORMS:
        form = np.array([finite_size_form(k, c.h, c.d) for c in configs])
        residual[k] = seed_interval(residual_exponents(ds, seeds, values[k], form), level=setup.ci_level)
    return ScalingResult(configs=tuple(configs), norms=tuple(norms), values=values, fits=fits, residual=residual,
                         h_configs=tuple(h_configs), h_values=values_of(h_configs, done[len(configs):]),
                         h_ratios=np.array(ratios).reshape(len(h_configs), len(ONSET_CS)))
