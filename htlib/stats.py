"""The statistics the book judges claims with: :func:`t_interval`, :func:`sign_test`, :func:`bootstrap_interval`,
and :func:`seed_interval` (the Student-t interval of :func:`t_interval` over the last axis of an array of seeds);
:func:`basic_interval`, the reflected interval of a parametric bootstrap, for an estimator whose refits are skewed.

Non-finite inputs are refused unless the caller passes ``drop_nonfinite=True``: a diverged run or a failed
refit must not vanish silently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.stats

__all__ = ["Interval", "SignTest", "SeedInterval", "t_interval", "seed_interval", "sign_test", "bootstrap_interval",
           "basic_interval"]


@dataclass(frozen=True)
class Interval:
    """A point estimate and its two-sided interval.

    Attributes
    ----------
    estimate : float
        The mean of the runs, or the fit's own estimate.
    low, high : float
        The interval's ends; NaN for fewer than two runs.
    n : int
        The runs, or the bootstrap draws.
    level : float
    sd : float
        Sample standard deviation (``ddof=1``) of the runs or draws; NaN for ``n < 2``.

    Examples
    --------
    >>> from htlib.stats import t_interval
    >>> iv = t_interval([1.0, 2.0, 3.0])        # mean 2, sd 1, t(0.975, 2) / sqrt(3) = 2.484
    >>> iv.mean, iv.n, round(iv.sd, 4), round(iv.low, 3), round(iv.high, 3)
    (2.0, 3, 1.0, -0.484, 4.484)
    """

    estimate: float
    low: float
    high: float
    n: int
    level: float
    sd: float

    @property
    def mean(self) -> float:
        """Alias of :attr:`estimate`."""
        return self.estimate


@dataclass(frozen=True)
class SignTest:
    """The outcome of :func:`sign_test`.

    Attributes
    ----------
    k, n : int
        Values strictly on the stated side of ``value``; values not equal to it (ties dropped).
    p, p_opposite : float
        One-sided exact p-values for the stated direction (``P(K >= k)``) and the opposite (``P(K <= k)``).
    direction : {">", "<"}
    value, level : float
    share, margin : float
        The share of runs on the stated side under the claim, and the share the stated direction must beat.

    Examples
    --------
    >>> from htlib.stats import sign_test
    >>> r = sign_test([0.3, 1.2, 0.8, 2.0, 0.1], ">", 0.0)      # 5 of 5 above 0: p = 1/2**5
    >>> r.k, r.n, f"{r.p:.4g}", r.direction
    (5, 5, '0.03125', '>')
    """

    k: int
    n: int
    p: float
    p_opposite: float
    direction: str
    value: float
    level: float
    share: float = 0.5
    margin: float = 0.5


def _level(level) -> float:
    try:
        level = float(level)
    except (TypeError, ValueError):
        raise ValueError(f"level must be a number in (0, 1), got {level!r}") from None
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be a number in (0, 1), got {level!r}")
    return level


def _values(name: str, x, drop_nonfinite: bool) -> np.ndarray:
    """``x`` as a 1-D float64 array, refusing (or, on request, dropping) non-finite entries."""
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-D sequence of real numbers, got {x!r}") from None
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one value per run), got shape {a.shape}")
    bad = ~np.isfinite(a)
    if bad.any():
        if not drop_nonfinite:
            raise ValueError(
                f"{name} holds {int(bad.sum())} non-finite value(s) at position(s) {np.flatnonzero(bad).tolist()} "
                "(a diverged run or a failed fit?): remove them and say so, or pass drop_nonfinite=True")
        a = a[~bad]
    return a


def t_interval(x, level: float = 0.95, *, drop_nonfinite: bool = False) -> Interval:
    """The mean of independent per-run values and its two-sided Student-t interval.

    Parameters
    ----------
    x : array_like, shape (n,)
        One value per independent run (seed, data draw).
    level : float, optional
        Confidence level in ``(0, 1)``.
    drop_nonfinite : bool, optional
        Leave NaN/inf values out instead of refusing them.

    Returns
    -------
    Interval
        ``low`` and ``high`` are NaN for ``n < 2`` (one run says nothing about the spread).

    Examples
    --------
    >>> import numpy as np, scipy.stats
    >>> x = [1.2, 0.8, 1.5, 1.1, 0.9]
    >>> r = t_interval(x)
    >>> ci = scipy.stats.ttest_1samp(x, 0.0).confidence_interval(0.95)
    >>> bool(np.allclose([r.low, r.high], [ci.low, ci.high])), r.n, round(r.mean, 2)
    (True, 5, 1.1)
    >>> t_interval([2.0]).low
    nan
    """
    level = _level(level)
    a = _values("x", x, drop_nonfinite)
    n = a.size
    if n == 0:
        raise ValueError("x must hold at least one finite value")
    mean, half, _, sd = (float(v) for v in _t_last_axis(a, level))
    if n < 2:
        return Interval(mean, math.nan, math.nan, 1, level, math.nan)
    return Interval(mean, mean - half, mean + half, int(n), level, sd)


@dataclass(frozen=True)
class SeedInterval:
    """Means over seeds with Student-t intervals (NaN with fewer than two finite seeds), per leading index.

    Attributes
    ----------
    mean, low, high : numpy.ndarray
        The mean over seeds and the interval's ends, one per leading index.
    level : float
        Confidence level.
    n_seeds : numpy.ndarray
        Finite seeds at each index.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.stats import seed_interval
    >>> m = seed_interval(np.array([[1.0, 2.0, np.nan], [4.0, 4.0, 4.0]]))     # NaN: a seed left out
    >>> m.n_seeds.tolist(), m.mean.tolist(), m.at(1)
    ([2, 3], [1.5, 4.0], (4.0, (4.0, 4.0)))
    """
    mean: object
    low: object
    high: object
    level: float
    n_seeds: object

    def at(self, index=()) -> tuple[float, tuple[float, float]]:
        """``(mean, (low, high))`` at one leading index (what :meth:`htlib.records.Criterion.judge` takes)."""
        return float(self.mean[index]), (float(self.low[index]), float(self.high[index]))


def seed_interval(x, level: float = 0.95) -> SeedInterval:
    """The mean over the last axis (seeds) of ``x`` and its Student-t interval; non-finite entries are left out.

    The same computation as :func:`t_interval` (:func:`_t_last_axis`), for every leading index at once.

    Parameters
    ----------
    x : array_like
        Values, seeds along the last axis.
    level : float, default 0.95
        Confidence level in (0, 1).

    Returns
    -------
    SeedInterval
        Means and intervals per leading index.

    Examples
    --------
    >>> m = seed_interval([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]])
    >>> m.mean.tolist(), [round(float(v), 3) for v in (m.low[0], m.high[0])], m.at(1)
    ([2.0, 5.0], [-0.484, 4.484], (5.0, (5.0, 5.0)))
    >>> t = t_interval([1.0, 2.0, 3.0])
    >>> (t.mean, t.low, t.high) == (m.mean[0], m.low[0], m.high[0])
    True
    """
    level = float(level)
    if not 0.0 < level < 1.0: raise ValueError(f"level must lie in (0, 1), got {level!r}")
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < 1 or x.shape[-1] < 1: raise ValueError(f"x must have a non-empty last (seed) axis, got shape {x.shape}")
    mean, half, n, _ = _t_last_axis(x, level)
    return SeedInterval(mean=mean, low=mean - half, high=mean + half, level=level, n_seeds=n)


def _t_last_axis(x: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(mean, half-width, n, sd)`` of the finite entries along the last axis of ``x``: the one Student-t
    computation of :func:`t_interval` and :func:`seed_interval`.  The half-width is NaN where ``n < 2``.

    Non-finite entries count as absent: they enter the sums as 0.0 where they stood rather than being dropped,
    which keeps the grouping of NumPy's pairwise sums, and so every earlier :func:`seed_interval` result, to the
    last bit; on an all-finite 1-D array the sums are NumPy's own ``mean`` and ``std(ddof=1)``.
    """
    ok = np.isfinite(x)
    n = ok.sum(axis=-1)
    v = np.where(ok, x, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, v.sum(axis=-1) / np.maximum(n, 1), np.nan)
        dev = np.where(ok, x - mean[..., None], 0.0)
        sd = np.sqrt((dev ** 2).sum(axis=-1) / np.maximum(n - 1, 1))
        half = scipy.stats.t.ppf(0.5 + level / 2, np.maximum(n - 1, 1)) * sd / np.sqrt(np.maximum(n, 1))
    half = np.where(n >= 2, half, np.nan)
    return mean, half, n, sd


def sign_test(x, direction: str, value: float = 0.0, level: float = 0.95, *, share: float = 0.5,
              margin: float | None = None, drop_nonfinite: bool = False) -> SignTest:
    """Exact binomial test of the share of per-run values above (``">"``) or below (``"<"``) ``value``.

    With the defaults (``share = margin = 0.5``) this is the sign test of the median's side.  For a per-run
    indicator whose share under the claim is not one half (a goodness-of-fit test keeps a true law on a share
    ``1 - size`` of runs), ``share`` is that share and ``margin`` (at most ``share``) the share below which the
    claim is false: ``p`` tests the count against ``margin`` (evidence for the claim: more runs on the stated
    side than a share ``margin`` gives), ``p_opposite`` against ``share`` (evidence against it: fewer runs than
    the claim's own share gives).  More runs then make a claim whose share lies below ``margin`` less likely to
    pass, never more.  Values equal to ``value`` are ties and are dropped.

    Parameters
    ----------
    x : array_like, shape (n,)
        One value per independent run.
    direction : {">", "<"}
        The side the values are claimed to lie on.
    value : float, optional
        The value they are compared with.
    level : float, optional
        Confidence level in ``(0, 1)``, stored with the result.
    share : float, optional
        The share of runs on the stated side under the claim, in ``(0, 1)``.
    margin : float, optional
        The share the count must beat for the claim, in ``(0, share]``; default ``share``.
    drop_nonfinite : bool, optional
        Leave NaN/inf values out instead of refusing them.

    Returns
    -------
    SignTest
        With ``n = 0`` (all ties) both p-values are 1.

    Examples
    --------
    >>> import scipy.stats
    >>> r = sign_test([0.3, 0.1, 0.4, -0.2, 0.5, 0.2, 0.0], ">")
    >>> r.k, r.n
    (5, 6)
    >>> r.p == float(scipy.stats.binomtest(5, 6, 0.5, alternative="greater").pvalue)
    True
    >>> r.p_opposite == float(scipy.stats.binomtest(5, 6, 0.5, alternative="less").pvalue)
    True

    A law kept at the 5% level on 19 of 20 runs, against a share of 0.95 under the law and a margin of 0.8:

    >>> r = sign_test([1.0] * 19 + [0.0], ">", 0.5, share=0.95, margin=0.8)
    >>> r.p == float(scipy.stats.binomtest(19, 20, 0.8, alternative="greater").pvalue)
    True
    >>> r.p_opposite == float(scipy.stats.binomtest(19, 20, 0.95, alternative="less").pvalue)
    True
    """
    if direction not in (">", "<"):
        raise ValueError(f"direction must be '>' or '<', got {direction!r}")
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"value must be a finite number, got {value!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"value must be a finite number, got {value!r}")
    level = _level(level)
    share, margin = _shares(share, margin)
    a = _values("x", x, drop_nonfinite)
    if a.size == 0:
        raise ValueError("x must hold at least one finite value")
    side = a > value if direction == ">" else a < value
    n = int((a != value).sum())
    k = int(side.sum())
    if n == 0:
        return SignTest(0, 0, 1.0, 1.0, direction, value, level, share, margin)
    p = float(scipy.stats.binomtest(k, n, margin, alternative="greater").pvalue)
    p_opposite = float(scipy.stats.binomtest(k, n, share, alternative="less").pvalue)
    return SignTest(k, n, p, p_opposite, direction, value, level, share, margin)


def _shares(share, margin) -> tuple[float, float]:
    """``(share, margin)`` checked: ``0 < margin <= share < 1`` (``margin`` defaults to ``share``)."""
    try:
        share = float(share)
        margin = share if margin is None else float(margin)
    except (TypeError, ValueError):
        raise ValueError(f"share and margin must be numbers in (0, 1), got {share!r} and {margin!r}") from None
    if not (0.0 < margin <= share < 1.0):
        raise ValueError(f"share and margin must satisfy 0 < margin <= share < 1, got share {share!r} and "
                         f"margin {margin!r}")
    return share, margin


def bootstrap_interval(estimate: float, draws, level: float = 0.95, *, drop_nonfinite: bool = False) -> Interval:
    """The percentile interval of a parametric bootstrap of a single fit.

    The interval is the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of ``draws`` (refits of samples
    drawn from the fitted law), around the fit's own ``estimate``.

    Parameters
    ----------
    estimate : float
        The fit's estimate on the data.
    draws : array_like, shape (n_draws,)
        The estimate refitted on each bootstrap sample; at least 2.
    level : float, optional
        Confidence level in ``(0, 1)``.
    drop_nonfinite : bool, optional
        Leave failed (non-finite) refits out instead of refusing them.

    Returns
    -------
    Interval
        ``n`` is the number of draws, ``sd`` their standard deviation.

    Examples
    --------
    >>> import numpy as np, scipy.stats
    >>> draws = scipy.stats.norm(2.0, 0.1).rvs(size=2000, random_state=0)
    >>> r = bootstrap_interval(2.0, draws)
    >>> bool(np.allclose([r.low, r.high], np.quantile(draws, [0.025, 0.975]))), r.n
    (True, 2000)
    >>> bool(np.allclose([r.low, r.high], scipy.stats.norm(2.0, 0.1).ppf([0.025, 0.975]), atol=0.02))
    True
    """
    level = _level(level)
    try:
        estimate = float(estimate)
    except (TypeError, ValueError):
        raise ValueError(f"estimate must be a finite number, got {estimate!r}") from None
    if not math.isfinite(estimate):
        raise ValueError(f"estimate must be a finite number, got {estimate!r}")
    a = _values("draws", draws, drop_nonfinite)
    if a.size < 2:
        raise ValueError(f"draws must hold at least 2 finite refits, got {a.size}")
    low, high = np.quantile(a, [(1 - level) / 2, (1 + level) / 2])
    return Interval(estimate, float(low), float(high), int(a.size), level, float(a.std(ddof=1)))


def basic_interval(estimate: float, draws, level: float = 0.95, *, log: bool = True,
                   drop_nonfinite: bool = False) -> Interval:
    """The basic (reflected) interval of a parametric bootstrap of a single fit.

    The percentile interval (:func:`bootstrap_interval`) reads the refits' quantiles as the interval; where the
    estimator is skewed (it overshoots the true value more often than it undershoots) that interval lies too far on
    the overshooting side.  The basic interval reflects the refits about the estimate: with ``q_lo, q_hi`` the
    ``k``-th smallest and ``k``-th largest of ``B`` refits, ``k = max(1, floor(B (1 - level) / 2))`` (order
    statistics, no interpolation), it is ``[2 e - q_hi, 2 e - q_lo]``, and with ``log`` (a positive estimate, a
    scale parameter) the same on the log scale, ``[e^2 / q_hi, e^2 / q_lo]``.  A refit may be ``+inf`` (a fit that
    found the family's limit, such as HTMP's Marchenko-Pastur law at ``kappa = inf``): an infinite ``q_hi`` gives the
    lower end 0 (``-inf`` without ``log``), an infinite ``q_lo`` the upper end ``inf``; an infinite estimate gives
    ``(0, inf)`` (``(-inf, inf)``): reflected about the limit, the refits bound nothing.

    Parameters
    ----------
    estimate : float
        The fit's estimate on the data; positive (``inf`` allowed) with ``log``.
    draws : array_like, shape (n_draws,)
        The estimate refitted on each bootstrap sample; at least 2; positive (``inf`` allowed) with ``log``.
    level : float, optional
        Confidence level in ``(0, 1)``.
    log : bool, optional
        Reflect on the log scale (default) or on the estimate's own scale.
    drop_nonfinite : bool, optional
        Leave NaN refits out instead of refusing them (``+inf`` refits are kept: they are the limit law).

    Returns
    -------
    Interval
        ``n`` is the number of draws, ``sd`` the standard deviation of the finite ones (NaN below 2).

    Examples
    --------
    Refits that overshoot: the log of each is the estimate's log plus a skewed error.

    >>> import numpy as np
    >>> draws = 2.0 * np.exp(np.array([-0.1, 0.0, 0.1, 0.2, 0.4, 0.7, 1.2, 2.0]))
    >>> r = basic_interval(2.0, draws, 0.75)  # k = 1: the smallest and the largest refit, reflected
    >>> round(r.low, 4), round(r.high, 4)
    (0.2707, 2.2103)
    >>> bool(np.isclose(r.low, 2.0 ** 2 / draws.max()) and np.isclose(r.high, 2.0 ** 2 / draws.min()))
    True
    >>> p = bootstrap_interval(2.0, draws, 0.75)  # the percentile interval lies above it
    >>> bool(p.low > r.low and p.high > r.high)
    True
    >>> basic_interval(3.0, [1.0, 2.0, 4.0, np.inf], 0.5).low  # a refit at the limit in the top quantile
    0.0
    >>> r = basic_interval(1.0, [0.5, 1.5], log=False)  # on the estimate's own scale: 2 e - q
    >>> r.low, r.high
    (0.5, 1.5)
    """
    level = _level(level)
    try:
        estimate = float(estimate)
    except (TypeError, ValueError):
        raise ValueError(f"estimate must be a number, got {estimate!r}") from None
    try:
        a = np.asarray(draws, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"draws must be a 1-D sequence of real numbers, got {draws!r}") from None
    if np.isnan(estimate) or estimate == -math.inf or (log and not estimate > 0):
        raise ValueError(f"estimate must be {'positive' if log else 'a number'} (inf allowed), got {estimate!r}")
    nan = np.isnan(a)
    if nan.any():
        if not drop_nonfinite:
            raise ValueError(f"draws holds {int(nan.sum())} NaN refit(s) at {np.flatnonzero(nan).tolist()} (a failed "
                             "fit?): remove them and say so, or pass drop_nonfinite=True")
        a = a[~nan]
    if (a == -math.inf).any() or (log and (a <= 0).any()):
        raise ValueError(f"draws must be {'positive' if log else 'above -inf'} (+inf allowed)")
    if a.size < 2:
        raise ValueError(f"draws must hold at least 2 refits, got {a.size}")
    d = np.sort(a)
    k = max(1, math.floor(d.size * (1.0 - level) / 2.0 + 1e-9))
    q_lo, q_hi = float(d[k - 1]), float(d[d.size - k])
    fin = d[np.isfinite(d)]
    sd = float(fin.std(ddof=1)) if fin.size >= 2 else math.nan
    if math.isinf(estimate):
        low, high = (0.0, math.inf) if log else (-math.inf, math.inf)
    elif log:
        low = 0.0 if math.isinf(q_hi) else estimate * estimate / q_hi
        high = math.inf if math.isinf(q_lo) else estimate * estimate / q_lo
    else:
        low = -math.inf if math.isinf(q_hi) else 2.0 * estimate - q_hi
        high = math.inf if math.isinf(q_lo) else 2.0 * estimate - q_lo
    return Interval(estimate, float(low), float(high), int(d.size), level, sd)
