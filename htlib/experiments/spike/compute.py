"""The spike-to-heavy-tail chapter (paper 003, §1, §5, §6, App. A): its parameters and runs."""

from __future__ import annotations

from dataclasses import dataclass

from htlib import spectra, two_layer
from htlib.params import FLOP_RATE, MIN_WIDTH, Cost, ParameterError, SweepSetup, param
from htlib.sweep import run_sweep
from htlib.two_layer import Trajectory, TwoLayerConfig, train

HILL_HEAVY = 2.0
"""The PL_Alpha_Hill reading of a heavy tail.  The papers give no level: 003 calls "PL_Alpha_Hill = 1.8"
heavy-tailed (§5.3), and an MP matrix at the §4 sizes reads about 2.45, so 2 lies between the two.  The slow run
stops at its first record below it."""

@dataclass(frozen=True)
class Setup(SweepSetup):
    """The chapter's parameters: paper 003's §4 and App. A settings (the slow run shorter, see :data:`PAPER`).

    Examples
    --------
    >>> Setup().slow_budget < PAPER.slow_budget
    True
    >>> Setup(seed=4).seed_list
    (4, 5, 6, 7, 8)
    >>> Setup(seeds=21)
    Traceback (most recent call last):
    htlib.params.ParameterError: parameter 'seeds' must be an integer ≥ 1, ≤ 20; got 21
    >>> Setup(steps=1)
    Traceback (most recent call last):
    htlib.params.ParameterError: parameter 'steps' must be an integer ≥ 2; got 1
    >>> Setup(d=50)
    Traceback (most recent call last):
    htlib.params.ParameterError: parameter 'block' must be ≤ min(d, h) = 50; got 100
    """

    n: int = param(2000, "training (and probe) set size, paper §4", ge=1)
    d: int = param(1000, "input dimension, paper §4", ge=MIN_WIDTH)
    h: int = param(1500, "width of the student, paper §4", ge=MIN_WIDTH)
    seed: int = param(0, "first seed of the data and of W0 (the figures show this seed)", ge=0)
    seeds: int = param(5, "independent runs: every run is trained at seeds seed, seed+1, ... (a verdict needs 3, a "
                       "yes/no sign test 5)", ge=1, le=20)
    steps: int = param(10, "full-batch steps of Figs. 1, 5, 6, 9 and of the phase tracks", ge=2)
    eta_gd: float = param(2000.0, "GD learning rate of Figs. 1 and 4", gt=0)
    eta_adam: float = param(1.0, "FB-Adam learning rate of Figs. 4, 5 and 6", gt=0)
    eta_adam_fig1: float = param(0.5, "FB-Adam learning rate of Fig. 1", gt=0)
    block: int = param(100, "leading block of the overlap heatmaps (needs block ≤ min(d, h))", ge=2)
    etas_adam_track: tuple[float, ...] = param([0.1, 0.5, 1.0], "FB-Adam learning rates traced through the phases",
                                               gt=0)
    etas_gd_track: tuple[float, ...] = param([1000.0, 2000.0], "GD learning rates traced through the phases", gt=0)
    etas_review: tuple[float, ...] = param([0.001, 0.01, 0.1, 0.5, 1.0, 10.0, 100.0],
                                           "FB-Adam learning rates of the review's three cases", gt=0)
    appA_n: int = param(4000, "App. A: training set size", ge=1)
    appA_d: int = param(500, "App. A: input dimension", ge=MIN_WIDTH)
    appA_h: int = param(3000, "App. A: width", ge=MIN_WIDTH)
    appA_eta_gd: float = param(5000.0, "App. A: GD learning rate (with weight normalization)", gt=0)
    appA_eta_adam: float = param(3.0, "App. A: FB-Adam learning rate (with weight normalization)", gt=0)
    ht_steps: int = param(30, "FB-Adam steps at eta_adam, every one recorded: steps to a heavy tail", ge=2)
    slow_eta: float = param(0.1, "FB-Adam learning rate of the slow run (the review: about 10^4 steps)", gt=0)
    slow_budget: int = param(100, "steps of the slow run (the review's 10^4 needs 30000)", ge=1)
    slow_record_every: int = param(20, "the slow run records the ESD every k steps", ge=1)
    slow_seeds: int = param(3, "the slow run is trained at the first slow_seeds seeds (at every seed if there are fewer)", ge=1,
                            le=20)
    strict_alpha: float = param(4.0, "stricter heavy-tail option: PL_Alpha_KS below this", gt=1)
    strict_pvalue: float = param(0.01, "... and the top eigenvalue no outlier of the fitted power law at this level",
                                 ge=0, lt=1)
    device: str = param("cpu", "torch device of the training", choices=("cpu", "cuda"))
    readout: str = param("d", "readout convention of the loss figures (d: the published figures')",
                         choices=("d", "sqrt_d"))

    def _check(self) -> None:
        if self.block > min(self.d, self.h):
            raise ParameterError(f"parameter 'block' must be ≤ min(d, h) = {min(self.d, self.h)}; got {self.block}")

    def costs(self) -> list[Cost]:
        runs = [two_layer.run_cost(c) for seed in self.seed_list for c in chapter_configs(self, seed).values()]
        return [Cost("the training runs", ("n", "d", "h", "steps", "ht_steps", "slow_budget", "slow_seeds", "seeds", "appA_n", "appA_d",
                                           "appA_h"), memory=max(b for b, _ in runs) * self.workers,
                     seconds=sum(f for _, f in runs) / FLOP_RATE)]

    @property
    def seed_list(self) -> tuple[int, ...]:
        """The seeds every run is trained at: ``seed, seed + 1, ..., seed + seeds - 1`` (the first is the figures')."""
        return tuple(range(self.seed, self.seed + self.seeds))
    def rules(self) -> spectra.PhaseRules:
        """The one spectrum report's thresholds, with this Setup's stricter heavy-tail option."""
        return spectra.PhaseRules(strict_alpha=self.strict_alpha, strict_pvalue=self.strict_pvalue)

def run_training(setup: Setup) -> dict[int, dict[tuple, Trajectory]]:
    """Every run of :func:`chapter_configs` at every seed, in one cached sweep: ``{seed: {key: Trajectory}}``.

    Examples
    --------
    >>> runs = run_training(Setup(n=32, d=10, h=12, block=10, steps=2, ht_steps=2, slow_budget=2, slow_record_every=1,
    ...                           appA_n=32, appA_d=10, appA_h=12, etas_review=[0.5], seeds=2, executor="serial"))
    >>> list(runs), int(runs[0][("adam", 1.0)].steps[-1]), runs[1][("adam", 1.0)].config.seed
    ([0, 1], 2, 1)
    """
    per_seed = {seed: chapter_configs(setup, seed) for seed in setup.seed_list}
    order = sorted(((seed, key) for seed, cfgs in per_seed.items() for key in cfgs),
                   key=lambda sk: list(per_seed[sk[0]]).index(sk[1]))
    with setup.executor_context() as pool:
        trained = run_sweep(train, [per_seed[seed][key] for seed, key in order], executor=pool, desc="training runs")
    done = dict(zip(order, trained))
    return {seed: {key: done[(seed, key)] for key in cfgs} for seed, cfgs in per_seed.items()}

def adam_etas(s: Setup) -> list[float]:
    """Every FB-Adam learning rate with a ``steps``-step run."""
    return sorted({*s.etas_adam_track, *s.etas_review, s.eta_adam, s.eta_adam_fig1})

def chapter_configs(s: Setup, seed: int | None = None) -> dict[tuple, TwoLayerConfig]:
    """Every run of the chapter at ``seed`` (default ``s.seed``), keyed ``(kind, eta or optimizer)``."""
    seed = s.seed if seed is None else int(seed)
    def run(optimizer, eta, steps, **kw):
        return TwoLayerConfig(n=s.n, d=s.d, h=s.h, seed=seed, device=s.device, optimizer=optimizer, eta=float(eta),
                              steps=steps, readout_scale=s.readout, **kw)
    configs = {("ht", s.eta_adam): run("adam", s.eta_adam, s.ht_steps)}
    if seed < s.seed + s.slow_seeds:  # it asks only for the first heavy-tailed step, so it stops there
        configs[("slow", s.slow_eta)] = run("adam", s.slow_eta, s.slow_budget, record_every=s.slow_record_every,
                                            stop_alpha_hill=HILL_HEAVY)
    for opt, eta in (("gd", s.appA_eta_gd), ("adam", s.appA_eta_adam)):
        configs[("appA", opt)] = TwoLayerConfig(n=s.appA_n, d=s.appA_d, h=s.appA_h, seed=seed, device=s.device,
                                                optimizer=opt, eta=float(eta), steps=s.steps, weight_norm=True,
                                                record_every=s.steps, record_initial=False)
    keep = (0, 1, s.steps - 1, s.steps)
    traced = {*s.etas_adam_track, s.eta_adam, s.eta_adam_fig1}
    for eta in adam_etas(s):
        configs[("adam", eta)] = (run("adam", eta, s.steps, keep_weights=keep) if eta in traced
                                  else run("adam", eta, s.steps, record_every=s.steps))
    for eta in sorted({*s.etas_gd_track, s.eta_gd}):
        configs[("gd", eta)] = run("gd", eta, s.steps, keep_weights=keep)
    configs[("adam-wn", s.eta_adam)] = run("adam", s.eta_adam, s.steps, weight_norm=True, keep_weights=keep)
    return configs

PAPER = Setup(slow_budget=30_000, slow_record_every=500)  # the slow run long enough for the review's 10^4 steps
