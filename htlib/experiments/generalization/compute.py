"""The generalization chapter (paper 003, §5.3 and App. E.4): Figs. 7 and 8, their runs.

:class:`Setup` and :data:`PAPER`; :func:`run_fig7` (learning rate x optimizer x seed, metrics of ``W_10``,
optionally with weight normalization) and :func:`run_fig8` (sample size, ridge constant, label noise, StepLR
decay, and StepLR with weight normalization) through the result cache; the ridge panel from stored ``W_t``.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np
import torch

from htlib import cache
from htlib._checks import check_int
from htlib.claims import PAPER_SETTING
from htlib.generalization import final_metrics
from htlib.params import MIN_WIDTH, SweepSetup, param
from htlib.sweep import run_sweep
from htlib.two_layer import (READOUT_SCALES, RunGrid, Trajectory, TwoLayerConfig, make_data, recording_covers,
                             restrict_recording, ridge_losses, run_grid, train)

ETA_GRID: tuple[float, ...] = (0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 2000.0, 3000.0)
"""The learning rates of Fig. 7."""
OPTIMIZERS: tuple[str, ...] = ("gd", "adam")
_FIELDS = tuple(f.name for f in dataclasses.fields(TwoLayerConfig))

@dataclass(frozen=True)
class Setup(SweepSetup):
    """The chapter's parameters (its ``parameters`` cell), validated once: the paper's §5.3 setting, with Fig. 8
    at 3 seeds and the weight-normalized repeat of Fig. 7 off (:data:`PAPER` turns it on).

    Examples
    --------
    >>> Setup(fig8_seeds=2).deviations(("fig8_seeds",))
    'fig8_seeds = 2 (paper: 3)'
    """

    n: int = param(8000, "training and probe-set size of Fig. 7 and the base of Fig. 8", ge=1, le=100_000)
    d: int = param(1000, "input dimension", ge=MIN_WIDTH, le=20_000)
    h: int = param(1500, "width of the student", ge=MIN_WIDTH, le=20_000)
    n_test: int = param(200, "test-set size", ge=1, le=100_000)
    rho_e: float = param(0.3, "label-noise standard deviation", ge=0)
    lam: float = param(0.01, "ridge constant of the readout", gt=0)
    steps: int = param(10, "full-batch steps", ge=1, le=100_000)
    etas: tuple[float, ...] = param(list(ETA_GRID), "learning rates of Fig. 7", gt=0)
    seeds: int = param(5, "seeds per optimizer and learning rate", ge=2, le=20)
    weight_norm_repeat: bool = param(False, "also run the Fig. 7 grid with weight normalization (doubles the sweep)")
    fig8_eta: float = param(1.0, "FB-Adam learning rate of Fig. 8", gt=0)
    fig8_seeds: int = param(3, "seeds of every Fig. 8 run (the authors' use 2; a verdict needs 3)", ge=1, le=20)
    fig8a_seeds: int = param(10, "seeds of the Fig. 8(a) sample-size losses (at least fig8_seeds; the extra ones "
                             "record step 0 and the last step only)", ge=1, le=20)
    fig8a_n_test: int = param(4000, "test-set size of the Fig. 8(a) loss readings (the figure's own runs keep "
                              "n_test: a 200-point test loss moves by several percent between draws)", ge=1,
                              le=100_000)
    fig8cd_seeds: int = param(6, "seeds of the Fig. 8(c) label-noise and 8(d) StepLR runs (at least fig8_seeds; the "
                              "extra seeds run these two panels only)", ge=1, le=20)
    ns: tuple[int, ...] = param([500, 2000, 4000, 8000], "Fig. 8(a) sample sizes", ge=1, le=100_000)
    lams: tuple[float, ...] = param([0.1, 0.01, 0.001, 0.0001], "Fig. 8(b) ridge constants", gt=0)
    rhos: tuple[float, ...] = param([0.1, 0.3, 0.5, 0.7], "Fig. 8(c) label-noise levels", ge=0)
    steplr_gammas: tuple[float, ...] = param([0.2, 0.4, 0.6, 0.8], "Fig. 8(d) StepLR decay factors", gt=0, le=1)
    n_boot: int = param(2000, "bootstrap replicates of the rank-correlation table", ge=100, le=100_000)
    ci_level: float = param(0.95, "confidence level of the intervals", gt=0, lt=1)
    readout: str = param("d", "readout convention of the figures (d: the published figures')", choices=READOUT_SCALES)

    @property
    def shape(self) -> dict:
        """The :class:`htlib.two_layer.TwoLayerConfig` fields every run of the chapter shares."""
        return dict(n=self.n, d=self.d, h=self.h, n_test=self.n_test, rho_e=self.rho_e, lam=self.lam,
                    steps=self.steps, readout_scale=self.readout)

    def deviations(self, names: Sequence[str]) -> str:
        """``"paper"`` if the fields ``names`` have the paper's values (seed counts: at least), else the
        deviations, for a claim's ``setting``."""
        out = []
        for name in names:
            mine, theirs = getattr(self, name), getattr(PAPER, name)
            if name in ("seeds", "fig8_seeds", "fig8a_seeds", "fig8cd_seeds") and mine >= theirs:
                continue
            if isinstance(theirs, tuple) and set(theirs) <= set(mine):
                continue
            if mine != theirs:
                out.append(f"{name} = {_show(mine)} (paper: {_show(theirs)})")
        return PAPER_SETTING if not out else "; ".join(out)

PAPER = Setup(weight_norm_repeat=True)
"""The paper's setting (Fig. 8 at 3 seeds, one more than the authors', and the weight-normalized Fig. 7)."""
AUTHORS_FIG8_SEEDS = 2
"""The seeds of the authors' Fig. 8 configurations."""

def _show(v) -> str:
    if isinstance(v, tuple):
        return "[" + ", ".join(f"{x:g}" for x in v) + "]"
    return f"{v:g}" if isinstance(v, float) else str(v)

def _setting(setting: Mapping, fixed: Sequence[str]) -> dict:
    """:class:`Setup`'s shape updated by ``setting``: TwoLayerConfig fields other than the ``fixed`` ones."""
    bad = [k for k in setting if k not in _FIELDS or k in fixed]
    if bad:
        raise ValueError(f"unknown or fixed setting {bad}; allowed: {[f for f in _FIELDS if f not in fixed]}")
    out = {**Setup().shape, "dtype": "float32", "device": "cpu", **setting}
    check_int("steps", out["steps"], 1)
    return {**out, "rho_e": float(out["rho_e"]), "lam": float(out["lam"])}

def fig7_configs(*, etas: Sequence[float] = ETA_GRID, optimizers: Sequence[str] = OPTIMIZERS, seeds: int = 5,
                 **setting) -> list[TwoLayerConfig]:
    """The runs of Fig. 7: every (optimizer, eta, seed), optimizer-major, recorded at the last step only.

    ``**setting``: :class:`htlib.two_layer.TwoLayerConfig` fields that change :class:`Setup`'s shape.
    Returns ``len(optimizers) * len(etas) * seeds`` configs, index ``(i_opt * len(etas) + i_eta) * seeds + seed``.

    Examples
    --------
    >>> len(fig7_configs(etas=[1.0, 10.0], seeds=2, n=64, d=16, h=24))
    8
    """
    check_int("seeds", seeds, 1)
    s = _setting(setting, ("optimizer", "eta", "seed", "record_every", "keep_weights", "record_initial"))
    if len(etas) == 0 or any(not (float(e) > 0) for e in etas):
        raise ValueError(f"etas must be a non-empty list of numbers > 0, got {list(etas)!r}")
    bad = [o for o in optimizers if o not in OPTIMIZERS]
    if len(optimizers) == 0 or bad:
        raise ValueError(f"optimizers must be a non-empty subset of {OPTIMIZERS}, got {list(optimizers)!r}")
    return [TwoLayerConfig(**s, optimizer=opt, eta=float(eta), seed=seed, record_every=s["steps"], keep_weights=(),
                           record_initial=False)
            for opt in optimizers for eta in etas for seed in range(seeds)]

@dataclass(frozen=True)
class Fig8Configs:
    """The runs of Fig. 8 for one seed (FB-Adam, fixed eta), by panel.

    ``base`` keeps every ``W_t`` (panel (b) refits its readout); the label-noise runs keep ``W_9, W_10``;
    ``wn_by_steplr_gamma`` are the StepLR runs (and, under ``1.0``, the constant rate) with weight normalization.
    """

    base: TwoLayerConfig
    by_n: dict[int, TwoLayerConfig]
    by_rho: dict[float, TwoLayerConfig]
    by_steplr_gamma: dict[float, TwoLayerConfig]
    wn_by_steplr_gamma: dict[float, TwoLayerConfig] = dataclasses.field(default_factory=dict)

    def unique(self) -> list[TwoLayerConfig]:
        """Every distinct config once, base first."""
        out: list[TwoLayerConfig] = []
        for c in (self.base, *self.by_n.values(), *self.by_rho.values(), *self.by_steplr_gamma.values(),
                  *self.wn_by_steplr_gamma.values()):
            if c not in out:
                out.append(c)
        return out

def fig8_configs(*, ns: Sequence[int] = (500, 2000, 4000, 8000), rhos: Sequence[float] = (0.1, 0.3, 0.5, 0.7),
                 steplr_gammas: Sequence[float] = (0.2, 0.4, 0.6, 0.8), eta: float = 1.0, seed: int = 0,
                 weight_norm_schedules: bool = False, **setting) -> Fig8Configs:
    """The runs of Fig. 8 for one seed: FB-Adam at learning rate ``eta``, recorded at every step.

    ``weight_norm_schedules`` adds the StepLR runs with weight normalization; ``**setting`` are
    :class:`htlib.two_layer.TwoLayerConfig` fields that change :class:`Setup`'s shape.
    """
    s = _setting(setting, ("optimizer", "eta", "seed", "steplr_gamma", "record_every", "keep_weights"))
    steps = s["steps"]
    base = TwoLayerConfig(**s, optimizer="adam", eta=float(eta), seed=seed, record_every=1,
                          keep_weights=tuple(range(steps + 1)))
    plain = dataclasses.replace(base, keep_weights=())
    last_two = (steps - 1, steps)
    by_n = {int(v): dataclasses.replace(plain, n=int(v)) for v in ns}
    by_rho = {float(v): dataclasses.replace(plain, rho_e=float(v), keep_weights=last_two) for v in rhos}
    by_steplr_gamma = {float(v): dataclasses.replace(plain, steplr_gamma=float(v)) for v in steplr_gammas}
    wn = {}
    if weight_norm_schedules:
        wn = {float(g): dataclasses.replace(plain, steplr_gamma=float(g), weight_norm=True, record_every=steps,
                                            record_initial=False) for g in (*steplr_gammas, 1.0)}
    return Fig8Configs(base=base, by_n=by_n, by_rho=by_rho, by_steplr_gamma=by_steplr_gamma, wn_by_steplr_gamma=wn)

def run_trainings(configs: Sequence[TwoLayerConfig], *, executor: cf.Executor | None = None, use_cache: bool = True,
                  desc: str = "runs") -> list[Trajectory]:
    """``[train(c) for c in configs]`` through :func:`htlib.sweep.run_sweep`, training each training spec once.

    A config whose recording another config covers (:func:`htlib.two_layer.recording_covers`) is read off that
    run (:func:`htlib.two_layer.restrict_recording`) unless that run diverged.  The caller owns ``executor``.
    """
    configs = list(configs)
    hosts: list[TwoLayerConfig] = []
    host_of: dict[TwoLayerConfig, TwoLayerConfig] = {}
    for c in sorted(dict.fromkeys(configs), key=_recording_size, reverse=True):
        host = next((h for h in hosts if recording_covers(h, c)), None)
        if host is None:
            hosts.append(c)
            host = c
        host_of[c] = host
    done = dict(zip(hosts, run_sweep(train, hosts, executor=executor, use_cache=use_cache, desc=desc)))
    redo = [c for c, h in host_of.items() if h != c and done[h].diverged_at is not None]
    if redo:
        done.update(zip(redo, run_sweep(train, redo, executor=executor, use_cache=use_cache, desc=desc)))
    return [done[c] if c in done else restrict_recording(done[host_of[c]], c) for c in configs]

def _recording_size(c: TwoLayerConfig) -> tuple[int, int, bool]:
    return len(c.recorded_steps()), len(c.keep_weights), c.record_esd

def fig7_metrics(traj: Trajectory) -> dict[str, float]:
    """:func:`~htlib.generalization.final_metrics` and two numbers of the last ESD: ``sv_median``, the median
    singular value of ``W_T``, and ``alpha_hill_wo_top``, PL_Alpha_Hill (:func:`htlib.spectra.alpha_hill`) at the same threshold with the top
    eigenvalue's term left out."""
    out = final_metrics(traj)
    out.update(sv_median=float("nan"), alpha_hill_wo_top=float("nan"))
    if np.isfinite(out["alpha_hill"]):
        eigs = np.asarray(traj.esd[-1], dtype=np.float64)
        out["sv_median"] = float(np.median(np.sqrt(np.clip(eigs, 0.0, None))))
        # The same estimator at the same threshold (the median of all eigenvalues) with the top term left out:
        # dropping eigs[-1] from the input would also move the threshold one index down.
        i = eigs.size // 2
        logs = np.log(eigs[i:] / eigs[i])
        if eigs.size - i > 1 and eigs[i] > 0 and logs[:-1].sum() > 0:
            out["alpha_hill_wo_top"] = float(1.0 + (eigs.size - i - 1) / logs[:-1].sum())
    return out

def fig7_grid(trajectories: Sequence[Trajectory]) -> RunGrid:
    """The finished Fig. 7 runs as a :class:`htlib.two_layer.RunGrid` of :func:`fig7_metrics`."""
    return run_grid(trajectories, fig7_metrics)

@dataclass(frozen=True)
class Fig7Result:
    """The Fig. 7 grid and, when ``weight_norm_repeat`` is on, its weight-normalized repeat."""

    grid: RunGrid
    grid_wn: RunGrid | None

def run_fig7(setup: Setup) -> Fig7Result:
    """The Fig. 7 grid (and its weight-normalized repeat when ``setup.weight_norm_repeat``)."""
    plain = fig7_configs(etas=setup.etas, seeds=setup.seeds, **setup.shape)
    wn = (fig7_configs(etas=setup.etas, seeds=setup.seeds, weight_norm=True, **setup.shape)
          if setup.weight_norm_repeat else [])
    with setup.executor_context() as pool:
        done = run_trainings(plain + wn, executor=pool, desc="Fig. 7")
    return Fig7Result(grid=fig7_grid(done[:len(plain)]), grid_wn=fig7_grid(done[len(plain):]) if wn else None)

@dataclass(frozen=True)
class Fig8Result:
    """Fig. 8 for every seed: the configs of each seed, every run, and the ridge-constant curves; ``sample``: the
    Fig. 8(a) runs by size for each of the ``fig8a_seeds`` seeds, recording step 0 and the last step."""

    configs: tuple[Fig8Configs, ...]
    runs: dict[TwoLayerConfig, Trajectory]
    ridge: tuple[dict[float, dict[str, np.ndarray]], ...]
    sample: tuple[dict[int, TwoLayerConfig], ...] = ()
    extra: tuple[Fig8Configs, ...] = ()

    @property
    def seeds(self) -> int:
        return len(self.configs)

    def panel(self, name: str, seeds: tuple[Fig8Configs, ...] | None = None) -> dict:
        """``{value: (trajectory per seed)}`` of the panel ``name`` (a :class:`Fig8Configs` field) over ``seeds``
        (default: Fig. 8's own)."""
        seeds = self.configs if seeds is None else seeds
        return {k: tuple(self.runs[getattr(f8, name)[k]] for f8 in seeds) for k in getattr(self.configs[0], name)}

    @property
    def base(self) -> tuple[Trajectory, ...]:
        return tuple(self.runs[f8.base] for f8 in self.configs)

    def panel_cd(self, name: str) -> dict:
        """:meth:`panel` of ``"by_rho"`` or ``"by_steplr_gamma"`` over every ``fig8cd_seeds`` seed."""
        if name not in ("by_rho", "by_steplr_gamma"):
            raise ValueError(f"name must be one of 'by_rho', 'by_steplr_gamma'; got {name!r}")
        return self.panel(name, self.configs + self.extra)

    def sample_panel(self) -> dict[int, tuple[Trajectory, ...]]:
        """``{n: (trajectory per seed)}`` of the Fig. 8(a) losses over every ``fig8a_seeds`` seed."""
        return {n: tuple(self.runs[by_n[n]] for by_n in self.sample) for n in self.sample[0]} if self.sample else {}

def run_fig8(setup: Setup) -> Fig8Result:
    """Fig. 8 for seeds ``0..fig8_seeds-1``, the ridge-constant panel from each base run's stored ``W_t``, the
    Fig. 8(a) losses over ``max(fig8_seeds, fig8a_seeds)`` seeds on ``fig8a_n_test`` test points, and the panels
    (c) and (d) over ``max(fig8_seeds, fig8cd_seeds)`` seeds."""
    per_seed = tuple(fig8_configs(ns=setup.ns, rhos=setup.rhos, steplr_gammas=setup.steplr_gammas, eta=setup.fig8_eta,
                                  seed=s, weight_norm_schedules=True, **setup.shape)
                     for s in range(setup.fig8_seeds))
    # The train set does not depend on n_test (its own random stream): the same training, a sharper test loss.
    sample = tuple({n: dataclasses.replace(c, record_every=setup.steps, record_esd=False, n_test=setup.fig8a_n_test)
                    for n, c in fig8_configs(ns=setup.ns, eta=setup.fig8_eta, seed=s, **setup.shape).by_n.items()}
                   for s in range(max(setup.fig8_seeds, setup.fig8a_seeds)))
    extra = tuple(fig8_configs(ns=(), rhos=setup.rhos, steplr_gammas=setup.steplr_gammas, eta=setup.fig8_eta, seed=s,
                               **setup.shape) for s in range(setup.fig8_seeds, setup.fig8cd_seeds))
    # The extra seeds' label-noise runs are read at their last step only (losses, ESD, the last update's overlaps;
    # the figure draws Fig. 8's own seeds): recording steps 0 and the last is the same training, a quarter the cost.
    extra = tuple(dataclasses.replace(f8, by_rho={k: dataclasses.replace(c, record_every=setup.steps)
                                                  for k, c in f8.by_rho.items()}) for f8 in extra)
    configs = ([c for f8 in per_seed for c in f8.unique()] + [c for by_n in sample for c in by_n.values()]
               + [c for f8 in extra for c in (*f8.by_rho.values(), *f8.by_steplr_gamma.values())])
    with setup.executor_context() as pool:
        done = run_trainings(configs, executor=pool, desc="Fig. 8")
    runs = dict(zip(configs, done))
    ridge = tuple(readout_curves(f8.base, setup.lams) for f8 in per_seed)
    return Fig8Result(configs=per_seed, runs=runs, ridge=ridge, sample=sample, extra=extra)

@dataclass(frozen=True)
class ReadoutConfig:
    """Fig. 8(b): the trained run ``base`` read out with each ridge constant of ``lams``."""

    base: TwoLayerConfig
    lams: tuple[float, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.lams, tuple) or len(self.lams) == 0:
            raise ValueError(f"lams must be a non-empty tuple of numbers > 0, got {self.lams!r}")
        for lam in self.lams:
            if not (np.isfinite(lam) and lam > 0):
                raise ValueError(f"lams must hold finite numbers > 0, got {lam!r}")
        missing = [t for t in range(self.base.steps + 1) if t not in self.base.keep_weights]
        if missing:
            raise ValueError(f"base.keep_weights must contain every step 0..{self.base.steps}; missing {missing}")

def readout_curve(config: ReadoutConfig) -> dict[float, dict[str, np.ndarray]]:
    """Train and test loss per step of ``config.base`` for every ridge constant (only the readout is refitted).

    Returns ``{lam: {"steps", "train_loss", "test_loss", "train_loss@d", ..., "test_loss@sqrt_d"}}``: the plain
    names under ``base.readout_scale``, the suffixed ones under each convention.
    """
    traj = cache.cached_call(train, config.base)
    if traj.diverged_at is not None:
        raise ValueError(f"the base run diverged at step {traj.diverged_at}")
    data = make_data(config.base)
    dtype = data.X_probe.dtype
    steps = np.arange(config.base.steps + 1)
    rows = {s: [ridge_losses(torch.as_tensor(traj.weights[int(t)], dtype=dtype), data, config.lams, s)
                for t in steps] for s in READOUT_SCALES}
    out = {}
    for lam in (float(v) for v in config.lams):
        curve = {"steps": steps}
        for s in READOUT_SCALES:
            curve[f"train_loss@{s}"] = np.array([r[lam][0] for r in rows[s]])
            curve[f"test_loss@{s}"] = np.array([r[lam][1] for r in rows[s]])
        curve["train_loss"] = curve[f"train_loss@{config.base.readout_scale}"]
        curve["test_loss"] = curve[f"test_loss@{config.base.readout_scale}"]
        out[lam] = curve
    return out

def readout_curves(base: TwoLayerConfig, lams: Iterable[float], *,
                   use_cache: bool = True) -> dict[float, dict[str, np.ndarray]]:
    """:func:`readout_curve` through the cached sweep runner, in this process (so the base run is found under
    the source hash of the sweep that trained it)."""
    config = ReadoutConfig(base, tuple(float(v) for v in lams))
    return run_sweep(readout_curve, [config], executor=None, use_cache=use_cache, desc="readouts")[0]
