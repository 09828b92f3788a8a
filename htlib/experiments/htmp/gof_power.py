"""Runs of the HTMP chapter's NTK goodness-of-fit test on spectra of known laws, inside this module's result-cache key
(apart from :mod:`htlib.experiments.htmp.compute`, whose runs they leave untouched): its power against named
alternatives at the NTK claim's size and gamma grid, and its size at the corner where the NTK fits sit.

Each run draws one spectrum of ``n`` eigenvalues from a named law and tests the inverse HTMP law on it exactly as the
chapter tests a trained net's NTK spectrum (:func:`htlib.htmp.inverse_htmp_gof`, the same gamma grid, cut-off and
refits).  The alternatives are matched to a measured NTK spectrum (:func:`alternatives`): a log-normal law with the
mean and spread of its log eigenvalues, a Pareto law from its smallest eigenvalue with the fitted inverse HTMP law's
tail exponent ``1 + delta``, and a Marchenko-Pastur spectrum (a real Wishart matrix's eigenvalues, light-tailed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from htlib import htmp
from htlib._checks import check_int

LAWS = ("lognormal", "pareto", "mp", "inverse-htmp")
FIELDS = ("p", "ks", "kappa", "gamma", "null_max")  # what :func:`gof_run` returns, in order


@dataclass(frozen=True)
class GoFRunConfig:
    """One spectrum of ``n`` eigenvalues of ``law`` (parameters ``params``), tested by
    :func:`htlib.htmp.inverse_htmp_gof` over ``gammas`` at cut-off ``rtol`` with ``reps`` refits.

    ``params``: ``(mu, sigma)`` of log y for ``"lognormal"``; ``(xmin, a)`` for ``"pareto"`` (survival
    ``(y / xmin)^-a``); ``(gamma,)`` for ``"mp"`` (a real Wishart ``n x n/gamma``); ``(kappa, gamma)`` for
    ``"inverse-htmp"`` (the inverses of a beta-Laguerre HTMP spectrum: a sample of the tested law)."""
    law: str
    params: tuple
    n: int
    gammas: tuple
    rtol: float
    reps: int
    seed: int
    model: str = "gof-run"

    def __post_init__(self) -> None:
        if self.law not in LAWS:
            raise ValueError(f"law must be one of {list(LAWS)}, got {self.law!r}")
        check_int("n", self.n, 10)
        check_int("reps", self.reps, 1)
        check_int("seed", self.seed, 0)


def draw(config: GoFRunConfig) -> np.ndarray:
    """The spectrum of ``config``: ``n`` positive eigenvalues of its law.

    Examples
    --------
    >>> c = GoFRunConfig("pareto", (1.0, 0.95), 500, (0.05,), 1e-9, 1, 3)
    >>> y = draw(c)
    >>> y.shape, bool(y.min() >= 1.0)
    ((500,), True)
    """
    rng = np.random.default_rng(int(config.seed))
    n, p = int(config.n), tuple(float(v) for v in config.params)
    if config.law == "lognormal":
        return np.exp(rng.normal(p[0], p[1], n))
    if config.law == "pareto":
        return p[0] * rng.random(n) ** (-1.0 / p[1])
    if config.law == "mp":
        return htmp.sample_htmp(n, float(n), p[0], seed=int(rng.integers(2**31)))
    return 1.0 / htmp.sample_htmp(n, p[0], p[1], seed=int(rng.integers(2**31)))


def gof_run(config: GoFRunConfig) -> np.ndarray:
    """The goodness-of-fit test of the inverse HTMP law on :func:`draw`'s spectrum: ``FIELDS`` as an array (its p, its
    KS, the fitted kappa and gamma, and the largest KS of its refits)."""
    g = htmp.inverse_htmp_gof(draw(config), tuple(float(v) for v in config.gammas), rtol=float(config.rtol),
                              reps=int(config.reps), seed=int(config.seed))
    return np.array([g.p, g.ks, g.fit.kappa, g.fit.gamma, float(np.max(g.null))])


def alternatives(eigs, fit, rtol: float) -> dict[str, tuple]:
    """The named alternatives matched to a measured spectrum ``eigs`` and its inverse HTMP ``fit``: the parameters of
    :class:`GoFRunConfig` per law (``"mp"``: gamma 0.5).

    Examples
    --------
    >>> y = 1.0 / htmp.sample_htmp(300, 0.5, 0.3, seed=0)
    >>> f = htmp.fit_inverse_htmp(y, (0.3,))
    >>> a = alternatives(y, f, 1e-9)
    >>> sorted(a), a["mp"]
    (['lognormal', 'mp', 'pareto'], (0.5,))
    """
    y = np.asarray(eigs, dtype=np.float64)
    y = y[np.isfinite(y) & (y > rtol * np.max(y))]
    logy = np.log(y)
    delta = fit.kappa * (1 - fit.gamma) / (2 * fit.gamma) if math.isfinite(fit.kappa) else 1.0
    return {"lognormal": (float(logy.mean()), float(logy.std())), "pareto": (float(y.min()), float(delta)),
            "mp": (0.5,)}


def power_configs(eigs, fit, *, n: int, gammas, rtol: float, reps: int, draws: int, seed: int = 0) -> list:
    """``draws`` runs of each alternative of :func:`alternatives` at the claim's ``n``, ``gammas``, ``rtol`` and
    ``reps``, seeded ``seed + 1000 * (law index + 1) + j``."""
    return [GoFRunConfig(law, params, int(n), tuple(float(g) for g in gammas), float(rtol), int(reps),
                         int(seed) + 1000 * (i + 1) + j)
            for i, (law, params) in enumerate(alternatives(eigs, fit, rtol).items()) for j in range(int(draws))]


POWER_DRAWS = 5  # spectra of each alternative (about 50 s of CPU each at n = 1000, 8 gammas, 19 refits)


def run_power(eigs, fit, *, gammas, rtol: float, reps: int, draws: int = POWER_DRAWS, seed: int = 0,
              executor=None) -> dict[str, np.ndarray]:
    """:func:`gof_run` on every config of :func:`power_configs` through the result cache: per law, a
    ``(draws, len(FIELDS))`` array."""
    from htlib.sweep import run_sweep

    configs = power_configs(eigs, fit, n=int(fit.n), gammas=gammas, rtol=rtol, reps=reps, draws=draws, seed=seed)
    out = run_sweep(gof_run, configs, executor=executor, progress=False)
    return {law: np.array([r for c, r in zip(configs, out) if c.law == law]) for law in dict.fromkeys(c.law for c in configs)}
