"""What the HTMP densities chapter measures in its cached runs: one :class:`~htlib.claims.Measurement` per row of its
claims table (``claims.toml``, read into :data:`TABLE`) from :func:`measure`, judged by :func:`claims`. Every fit
and test the chapter's claims read happens here; the page (:mod:`htlib.experiments.htmp.reading`) only words and
draws. Outside the result-cache key."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from htlib import archive, htmp, plotting, spectra
from htlib import stats as hstats
from htlib.claims import Measurement, judge_table, read_table
from htlib.records import Claim
from htlib.experiments.htmp.compute import (ALEX_IMAGES_PER_SECOND, BatchResult, PAPER_KAPPA, _delta, _q,
                                           alex_paper_hours, bulk_fit)
from htlib.experiments.htmp.gof_power import FIELDS as POWER_FIELDS
from htlib.experiments.htmp.refits import REFIT_FIELDS
from htlib.experiments.htmp import replicates
from htlib.experiments.htmp.replicates import SubsetsResult

TABLE = read_table(Path(__file__).with_name("claims.toml"))  # one htlib.claims.Spec per record key

TRAINED_ACC = 0.99  # below this train accuracy a run has not fitted its training set: its rows are not tested

GOF_ALPHA = 0.05  # the goodness-of-fit test's level: a seed's test rejects a law at p <= GOF_ALPHA

BOUND_NEAR = 1.1  # a fitted kappa within this factor of fit_htmp's search bound is reported as at the bound

PAPER_GAMMA: dict[str, float] = {"minialexnet": 1000 / (192 * 4 * 4), "lenet": 120 / 400}  # FC1 of the paper's nets

LENET_DATA_UNSTATED = (  # why the book's PAPER preset cannot stand for the paper's LeNet protocol
    "the paper does not name LeNet's data or its size; the group's later public code loads MNIST's 60,000 training "
    "images (15 times the SGD steps of 200 epochs on 4,000, which MNIST-5k cannot supply) or a 1,000-image subsample "
    "(which it can: the protocol variants)")

PAPER_COMMAND = "make paper ARGS='--only htmp'"  # runs the chapter at PAPER (MiniAlexNet trained)

LOGISTIC_NTK = (  # why the logistic-regression NTK row is not tested: its data
    "the paper's logistic regression has 30K parameters (3,072 inputs x 10 classes + 10 biases = 30,730), so its data "
    "are 32x32x3 images, CIFAR-10 or SVHN, and neither can be loaded offline here (MNIST-5k is the only image set at "
    "hand; on its 28x28 digits the model would have 7,850 parameters and other inputs).  Its NTK, 10 (X X^T + 1) "
    "whatever its weights, is the Gram of those images: at 1,000 images of 3,072 pixels its rank can reach 1,000, so "
    "the rank bound of 784-pixel digits (at most 785 of 1,000 eigenvalues nonzero) does not apply to the paper's run")

def _kappa_bounds(gamma: float) -> tuple[float, float]:
    return 0.1, min(50.0, 300.0 * gamma)  # the default search range of htlib.htmp.fit_htmp

def _at_bound(kappa: float, gamma: float) -> str:
    """``"lower"``/``"upper"`` when ``kappa`` is within :data:`BOUND_NEAR` of the fit's bound, else ``""``."""
    lo, hi = _kappa_bounds(gamma)
    if not math.isfinite(kappa):
        return ""
    return "lower" if kappa <= lo * BOUND_NEAR else "upper" if kappa >= hi / BOUND_NEAR else ""

def _fmt(v: float) -> str:
    return plotting.plain_number(v, fmt=".3g")  # an unbounded kappa or delta (MP) as ∞

def noise_kappa(res: BatchResult, model: str, fit: str = "l1") -> tuple[float, float, float]:
    """Median, lowest and highest kappa of the ``fit`` ("ks" or "l1") on the noise of ``model``'s FC1 shape."""
    sel = res.noise_of(model)
    return _q([f.l1_kappa if fit == "l1" else f.kappa for f in sel]) if sel else (math.nan,) * 3

def _noise_overlap(res: BatchResult, model: str, fit: str, ranges) -> str:
    """Why ``fit`` cannot speak for ``model``: every seed range in ``ranges`` meets its range on same-shape noise."""
    sel = res.noise_of(model)
    _, nlo, nhi = noise_kappa(res, model, fit)
    if not sel or not all(lo <= nhi and hi >= nlo for lo, hi in ranges):
        return ""
    label = "KS fit" if fit == "ks" else "min-shifted histogram-L1 fit"
    return (f"the {label} gives kappa in [{_fmt(nlo)}, {_fmt(nhi)}] on {len(sel)} pure-noise matrices of the same shape, "
            f"overlapping the trained layers' seed range{'s' if len(ranges) > 1 else ''} "
            + ", ".join(f"[{_fmt(lo)}, {_fmt(hi)}]" for lo, hi in ranges)
            + ": this fit cannot tell the trained layer from noise here (noise table)")

def _outlier_text(res: BatchResult, model: str, batches) -> str:
    """Seed-median outlier count and bulk kappa per batch size, in words."""
    bits = []
    for b in batches:
        fb = [bulk_fit(f) for f in res.of(model) if f.batch_size == b]
        k = float(np.median([k for _, k in fb]))
        g = next(f.gamma for f in res.of(model) if f.batch_size == b)
        k_txt = f"{_fmt(k)} (at the top of its search, {_fmt(_kappa_bounds(g)[1])})" if _at_bound(k, g) == "upper" else _fmt(k)
        bits.append(f"{np.median([n for n, _ in fb]):g} outliers and bulk kappa {k_txt} at batch {b}")
    return "; ".join(bits)

def gamma_gap(kappa: float, gamma: float) -> float:
    """sup |F_HTMP - F_Gamma| to the Gamma law of shape ``delta`` and mean 1: small where HTMP is a Gamma law."""
    d = _delta(kappa, gamma)
    x = np.geomspace(1e-8, 50.0, 4000)
    return float(np.max(np.abs(htmp.htmp.cdf(x, kappa, gamma) - stats.gamma.cdf(x, d, scale=1 / d))))

def _grid_edge(name: str, g: float, grid) -> str:
    """``name g`` at the lowest or highest value of ``grid``, in words; ``""`` inside it."""
    if g not in (min(grid), max(grid)):
        return ""
    return (f"{name} {g:g} at the {'lowest' if g == min(grid) else 'highest'} value of the grid "
            f"{', '.join(f'{x:g}' for x in grid)}")

def _corner(f, grid) -> str:
    """Where an inverse-HTMP fit sits at the edge of its search: gamma at the grid's end, kappa at the bound."""
    bits = [b for b in (_grid_edge("gamma", f.gamma, grid),) if b]
    side = _at_bound(f.kappa, f.gamma)
    if side:
        bits.append(f"kappa {_fmt(f.kappa)} at the fit's {side} bound {_fmt(_kappa_bounds(f.gamma)[side == 'upper'])}")
    if bits and math.isfinite(f.kappa):
        bits.append(f"where HTMP lies within {gamma_gap(f.kappa, f.gamma):.2g} (sup CDF) of a Gamma law of shape delta "
                    f"{_delta(f.kappa, f.gamma):.3g}")
    return "; ".join(bits)

def _gamma_law_text(r: "NTKFit", grid) -> str:
    """What the inverse-HTMP fit tells apart at its gamma, beside the CSN power-law alpha of the fitted eigenvalues."""
    f = r.fit
    if not math.isfinite(f.kappa):
        return "the inverse MP law fits at least as well: no tail exponent"
    d = _delta(f.kappa, f.gamma)
    y = r.eigs[r.eigs > (r.rtols[0] if r.rtols else 1e-9) * r.eigs.max()]
    try:
        pl = spectra.fit_power_law(y / np.median(y))
        alpha, tail = float(pl.alpha), int(pl.n_tail)
    except ValueError:  # a constant spectrum has no tail to fit
        alpha, tail = math.nan, 0
    gap = gamma_gap(f.kappa, f.gamma)
    shape = (f"at gamma {f.gamma:g} HTMP is within {gap:.2g} (sup CDF) of the Gamma law of shape delta {d:.3g}, so the "
             "fit supports an inverse Gamma law with a power-law tail, and does not tell the HTMP shape from that Gamma "
             "law" if gap < 0.02 else
             f"at gamma {f.gamma:g} HTMP is {gap:.2g} (sup CDF) from the Gamma law of shape delta {d:.3g}, so the fit "
             "reads the HTMP shape, not only a Gamma law")
    csn = (f"a separate CSN power-law alpha of {alpha:.3g} on the top {tail} eigenvalues" if tail else
           "no CSN power-law fit (no tail to fit)")
    return f"{shape}; its tail exponent 1 + delta is {1 + d:.3g}, against {csn}"

def _ntk_groups(res: BatchResult) -> dict[str, list]:
    """The NTK runs per model, in run order (the first training seed first)."""
    return {m: [r for r in res.ntk if r.model == m] for m in dict.fromkeys(r.model for r in res.ntk)}

def _p_text(p: float, reps: int) -> str:
    """A bootstrap p-value in words: ``<= 1/(B+1)`` when no refit reaches the observed KS."""
    return f"p <= {p:.2g}" if p <= 1.0 / (reps + 1) + 1e-12 else f"p {p:.2g}"

def gof_words(g, law: str = "htmp") -> str:
    """One goodness-of-fit test (:class:`htlib.htmp.GoFResult`) of ``law`` ("htmp" or "mp") in words."""
    f = g.fit
    ks, null, p = (g.ks, g.null, g.p) if law == "htmp" else (g.mp_ks, g.mp_null, g.mp_p)
    what = f"kappa {_fmt(f.kappa)}, gamma {f.gamma:g}" if law == "htmp" else f"gamma {f.mp_gamma:g}"
    return (f"KS {ks:.3g} ({what}) against {null.size} refits {np.mean(null):.3g} +- {np.std(null):.2g}, "
            f"{_p_text(p, null.size)}")

def null_loss(g) -> str:
    """Why a goodness-of-fit test (:class:`htlib.htmp.GoFResult`) is not the data's: its null replicates lost
    eigenvalues to the cut-off that the data kept (their refits read fewer eigenvalues, fit worse and have larger KS,
    so p errs on the large side); ``""`` when every replicate kept the data's ``fit.n``."""
    lost = np.asarray(g.null_n) < g.fit.n
    if not lost.any():
        return ""
    return (f"the test's null is not the data's: {int(lost.sum())} of its {lost.size} replicates of the fitted law "
            f"({lost.mean():.0%}) lose eigenvalues to the cut-off (as few as {int(np.min(g.null_n))} of the "
            f"{g.fit.n} the data keep above it), so their refits read fewer eigenvalues and fit worse, and p errs on "
            f"the large side (p {g.p:.2g} here)")

def _seeds(res: BatchResult, model: str, b: int, init: str = "std") -> dict[int, object]:
    return {f.seed: f for f in res.of(model, init) if f.batch_size == b}  # the runs of ``model`` at batch ``b``

def _trained_gate(res: BatchResult, model: str, batches) -> str:
    """Why runs that have not fitted their training set test nothing (their rows: not tested); ``""`` if they have."""
    lows = {b: float(res.summary.loc[(model, b), "train acc lo"]) for b in batches}
    bad = [b for b, v in lows.items() if not v >= TRAINED_ACC]
    if not bad:
        return ""
    s = res.summary.loc[(model, bad[0])]
    steps = int(s["steps"])
    return (f"lowest train accuracy {lows[bad[0]]:.2f} < {TRAINED_ACC:g} at batch {', '.join(map(str, bad))}: the runs "
            f"have not fitted their training set (after {steps} SGD step{'' if steps == 1 else 's'} at batch {bad[0]}, "
            f"test accuracy {s['test acc']:.2f}, FC1 {s['weight change']:.1%} from its initialization), and no row is "
            f"judged on an untrained network; the book's PAPER preset trains them ({PAPER_COMMAND})")

def alex_not_trained(setup) -> str:
    """Why MiniAlexNet's rows are not tested in a run without ``alex_train``: the cost of training it and the command."""
    return (f"MiniAlexNet is not trained in this run (alex_train False): at the book's PAPER preset (200 epochs on "
            f"4,000 MNIST-5k images, 3 repeats, {len(setup.batch_sizes)} batch sizes) it takes about "
            f"{alex_paper_hours(setup):.0f} h on two idle cores ({ALEX_IMAGES_PER_SECOND:g} images/s measured on a "
            f"one-thread worker, benchmarks/README.md); {PAPER_COMMAND} runs it, on a GPU where there is one (device auto)")

def _alex_not_run(setup) -> Measurement:
    return Measurement.not_run(alex_not_trained(setup), why="too_slow",
                               time=f"about {alex_paper_hours(setup):.0f} h on two cores")

def kappa_interval(res: BatchResult, f, level: float = 0.95) -> tuple[float, float]:
    """The 95% basic bootstrap interval of layer ``f``'s KS-fitted kappa (:func:`htlib.stats.basic_interval` on the
    log scale: the refits reflected about the fit); ``(nan, nan)`` where no refits were drawn.  The fit overshoots
    (its refits are skewed upwards, up to Marchenko-Pastur, kappa = inf), so the percentile interval of the refits
    lies too high: in tests/test_htmp_kappa_interval.py it leaves the true kappa below its lower end far more often
    than 2.5% at the chapter's size, the basic interval does not.  A refit at MP among the top 2.5% gives the lower
    end 0: the bootstrap then bounds kappa from above only."""
    d = res.boot.get((f.model, f.batch_size, f.seed))
    if d is None or not d.size:
        return math.nan, math.nan
    iv = hstats.basic_interval(f.kappa, d, level)
    return iv.low, iv.high

def kappa_with_interval(res: BatchResult, f) -> str:
    """A layer's KS-fitted kappa and its 95% basic bootstrap interval (:func:`kappa_interval`), ``"k [lo, hi]"``."""
    lo, hi = kappa_interval(res, f)
    return f"{_fmt(f.kappa)} [{_fmt(lo)}, {_fmt(hi)}]" if math.isfinite(lo) else _fmt(f.kappa)

def boot_text(res: BatchResult, runs) -> str:
    """Each run's KS-fitted kappa with its 95% basic bootstrap interval, in words."""
    if not runs or not res.boot:
        return "no bootstrap of kappa was run"
    d = res.boot.get((runs[0].model, runs[0].batch_size, runs[0].seed), np.array([]))
    each = ", ".join(kappa_with_interval(res, f) for f in runs)
    k = max(1, math.floor(d.size * 0.05 / 2.0 + 1e-9))  # the order statistic basic_interval reads at 95%
    which = "smallest and largest" if k == 1 else f"{k}th smallest and {k}th largest"
    return (f"kappa per seed {each} (95% basic parametric-bootstrap intervals: {d.size} HTMP spectra of each fitted law "
            f"at n {runs[0].eigs.size}, gamma {runs[0].gamma:.3g}, refitted by the same fit, whose search stops at "
            f"{_fmt(_kappa_bounds(runs[0].gamma)[1])} or MP; their {which} reflected about the fit on the log scale, a "
            "lower end 0 where MP is among the top refits)")

def paper_test(res: BatchResult, model: str, b: int) -> dict | None:
    """The direct tests of the paper's kappa at ``(model, b)``: each run's KS against the pooled null, as a dict."""
    runs = [f for f in res.of(model) if f.batch_size == b and (model, b, f.seed) in res.paper_tests]
    if not runs:
        return None
    kss = np.array([res.paper_tests[(model, b, f.seed)][0] for f in runs])
    null = np.concatenate([res.paper_tests[(model, b, f.seed)][1] for f in runs])
    kp, beyond = PAPER_KAPPA[(model, b)], int(np.sum(kss > null.max()))
    text = (f"the paper's law HTMP(kappa {kp:g}, gamma {runs[0].gamma:.3g}), its scale fitted, has KS "
            f"{kss.min():.3g}-{kss.max():.3g} on the {len(runs)} runs against {null.size} beta-Laguerre spectra of that "
            f"law at the same size (KS {null.mean():.3g} +- {null.std():.2g}, largest {null.max():.3g}): {beyond} of "
            f"{len(runs)} runs beyond every draw")
    return dict(ks=kss, null=null, beyond=beyond, runs=len(runs), rejected=beyond == len(runs), text=text)

KAPPA_ROWS: dict[tuple[str, int], dict[str, str]] = {  # (model, batch) of PAPER_KAPPA -> its rows, by reading
    ("minialexnet", 1000): {"delta": "minialexnet-1000"}, ("minialexnet", 800): {"delta": "minialexnet-800"},
    ("minialexnet", 250): {"delta": "minialexnet-250", "l1": "minialexnet-250-l1", "kappa": "minialexnet-250-kappa"},
    ("minialexnet", 100): {"delta": "minialexnet-100", "l1": "minialexnet-100-l1", "kappa": "minialexnet-100-kappa"},
    ("lenet", 250): {"delta": "lenet-250", "l1": "lenet-250-l1"}, ("lenet", 100): {"delta": "lenet-100", "l1": "lenet-100-l1"}}
"""The paper's kappa per model and batch size: ``delta`` its delta against the KS fit's (1/delta where the paper has MP),
``l1`` against the min-shifted histogram-L1 fit's, ``kappa`` kappa itself (variants)."""

FALLS_ROWS: dict[str, tuple[str, tuple[int, int], str]] = {  # row key: (model, (larger, smaller batch), fit)
    "minialexnet-falls": ("minialexnet", (1000, 100), "ks"), "minialexnet-falls-bulk": ("minialexnet", (1000, 100), "bulk"),
    "minialexnet-falls-l1": ("minialexnet", (1000, 100), "l1"), "lenet-falls": ("lenet", (1000, 100), "ks"),
    "lenet-falls-bulk": ("lenet", (1000, 100), "bulk"), "lenet-falls-l1": ("lenet", (1000, 100), "l1"),
    "lenet-falls-250-100": ("lenet", (250, 100), "ks")}
"""The trend rows on the chapter's own runs: 1/delta at the smaller batch minus at the larger, per fit."""

def _kappa_measurements(res: BatchResult, model: str) -> dict[str, Measurement]:
    """The paper's kappa per batch size for ``model`` (delta, or 1/delta where the paper has MP) and its variants."""
    setup, out = res.setup, {}
    for b, kp in ((b, kp) for (m, b), kp in PAPER_KAPPA.items() if m == model):
        rows = KAPPA_ROWS[model, b]
        key, keys = rows["delta"], list(rows.values())
        runs = list(_seeds(res, model, b).values())
        if model == "minialexnet" and not setup.alex_train:
            out.update({k: _alex_not_run(setup) for k in keys})
            continue
        if not runs:
            out.update({k: Measurement.not_run(f"batch {b} of {model} is not in this run's batch_sizes",
                                                   why="not_in_run", what=f"batch {b}") for k in keys})
            continue
        gate = _trained_gate(res, model, [b])
        if gate:
            out.update({k: Measurement.not_run(gate) for k in keys})
            continue
        dp, s = _delta(kp, PAPER_GAMMA[model]), res.summary.loc[(model, b)]
        nk, nl = noise_kappa(res, model, "ks"), noise_kappa(res, model, "l1")
        test = None if math.isinf(kp) else paper_test(res, model, b)
        lows_highs = [kappa_interval(res, f) for f in runs]
        n_out = sum(kp < lo or kp > hi for lo, hi in lows_highs)  # nan ends (no bootstrap) compare False
        noise = (f"the min-shifted histogram-L1 fit (the group's public code) gives kappa {_fmt(nl[0])} [{_fmt(nl[1])}, "
                 f"{_fmt(nl[2])}] on {len(res.noise_of(model))} pure-noise matrices of FC1's shape and {_fmt(s['L1 kappa'])} "
                 f"here, the KS fit {_fmt(nk[0])} on that noise (noise table)")
        note = "; ".join(x for x in (
            boot_text(res, runs), f"delta per seed {', '.join(_fmt(f.delta) for f in runs)}",
            test["text"] if test else "", noise,
            f"{_outlier_text(res, model, [b])}; {LENET_DATA_UNSTATED}" if model == "lenet" else "") if x)
        check = ""
        if model == "lenet" and test and test["rejected"]:
            check = (f"the paper does not name LeNet's data; this is the nearest setting run (its optimizer, epochs, "
                     f"batch sizes and repeats on MNIST-5k; the group's public-code protocol, a 1,000-image subsample "
                     f"with average pooling and per-channel normalization, is the variant {key}-protocol); the "
                     f"difference is not the fit's noise: "
                     f"the paper's law is rejected directly ({test['beyond']} of {test['runs']} runs beyond every draw "
                     f"of its null, beta-Laguerre spectra of HTMP(kappa {kp:g}) at the layer's size), "
                     + ("and its kappa lies outside every seed's basic bootstrap interval of kappa; and the "
                        if n_out == len(runs) else
                        f"while its kappa lies outside {n_out} of {len(runs)} seeds' basic bootstrap intervals of kappa "
                        f"(lower ends {', '.join(_fmt(lo) for lo, _ in lows_highs)}: where a refit at MP is among the "
                        "top ones, the bootstrap bounds kappa from above only); and the ")
                     + f"min-shifted L1 fit gives kappa {_fmt(nl[0])} on pure noise of this shape, so values like the "
                     "paper's need no heavy tail at all")
        for k, fit, vals, extra in (  # the paper's over the measured: 0, not inf, where the fit returns MP
                (key, "ks", [1 / f.delta if math.isinf(kp) else dp / f.delta for f in runs], ""),
                (rows.get("l1"), "l1", [dp / f.l1_delta for f in runs], "; fit: min-shifted histogram L1, kappa in [0.01, 10]"),
                (rows.get("kappa"), "ks", [kp / f.kappa for f in runs], "; kappa, not delta, compared")):
            if k is not None:
                kap = [f.kappa if fit == "ks" else f.l1_kappa for f in runs]  # a fit giving the same on noise cannot speak
                cannot = "" if math.isinf(kp) else _noise_overlap(res, model, fit, [(min(kap), max(kap))])
                out[k] = Measurement(vals, cannot_test=cannot, runs_text=f"{len(runs)} seed(s)", note=note,
                                     setting=setup.setting(model) + extra, reduction_check=check if k == key else "")
    return out

MAX_BOUND_CASES = 2 ** 13  # beyond, the cases read are both extremes and a seeded sample of the rest

def _inv_delta(kappa: float, gamma: float) -> tuple[float, float | None]:
    """A fit's 1/delta, and where it sits at the top of the kappa search or reads MP (within KS noise of each other at
    this size), the other value it could take: 0 (MP) for a fit at the top, 1/delta at the top for an MP fit."""
    top = 1.0 / _delta(_kappa_bounds(gamma)[1], gamma)
    if not math.isfinite(kappa):
        return 0.0, top
    return 1.0 / _delta(kappa, gamma), (0.0 if _at_bound(kappa, gamma) == "upper" else None)

def bound_cases(units: list[list[list[tuple[float, float, float | None]]]]) -> tuple[list[float], tuple]:
    """Per unit (a list of seeds, each a list of terms ``(sign, value, other)``), the seed mean of each seed's sum of
    ``sign x value``; and the same means in every case of the terms that could take ``other`` instead (fits at a
    search bound): ``(values, cases)``, ``cases`` empty where no term could.

    Examples
    --------
    >>> vals, cases = bound_cases([[[(1, 0.02, None), (-1, 0.0, 0.017)]], [[(1, 0.03, None), (-1, 0.01, None)]]])
    >>> [round(v, 4) for v in vals], [tuple(round(v, 4) for v in c) for c in cases]
    ([0.02, 0.02], [(0.02, 0.02), (0.003, 0.02)])
    """
    terms = [(i, j, k) for i, u in enumerate(units) for j, seed in enumerate(u) for k, t in enumerate(seed)
             if t[2] is not None]
    def means(flip) -> tuple[float, ...]:
        return tuple(float(np.mean([sum(s * (o if (i, j, k) in flip else v) for k, (s, v, o) in enumerate(seed))
                                    for j, seed in enumerate(u)])) for i, u in enumerate(units))
    vals = list(means(set()))
    if not terms:
        return vals, ()
    n = 2 ** len(terms)
    picks = (range(n) if n <= MAX_BOUND_CASES else
             [0, n - 1, *np.random.default_rng(0).integers(1, n - 1, MAX_BOUND_CASES - 2).tolist()])
    return vals, tuple(means({t for b, t in enumerate(terms) if int(code) >> b & 1}) for code in picks)

def _falls_measurement(res: BatchResult, model: str, big: int, small: int, fit: str, cannot: str = "") -> Measurement:
    """Per seed, the ``fit``'s 1/delta at batch ``small`` minus at ``big``; ``"bulk"``: without the outliers."""
    a, b = _seeds(res, model, big), _seeds(res, model, small)
    bulk = {id(f): bulk_fit(f)[1] for f in (*a.values(), *b.values())} if fit == "bulk" else {}
    get = {"ks": lambda f: f.delta, "l1": lambda f: f.l1_delta, "bulk": lambda f: _delta(bulk[id(f)], f.gamma)}[fit]
    vals = [1 / get(b[s]) - 1 / get(a[s]) for s in sorted(set(a) & set(b))]
    if any(math.isnan(v) for v in vals):  # bulk_fit gives nan where the ESD is too small to fit a bulk
        return Measurement.not_run("the ESD is too small to fit a bulk without its outliers")
    kap = {"ks": lambda f: f.kappa, "bulk": lambda f: bulk[id(f)]}.get(fit)
    cases = () if kap is None else bound_cases([[[(1, *_inv_delta(kap(b[s]), b[s].gamma)),
                                                  (-1, *_inv_delta(kap(a[s]), a[s].gamma))]]
                                                for s in sorted(set(a) & set(b))])[1]
    note = (f"delta {', '.join(_fmt(get(f)) for f in a.values())} at batch {big}, "
            f"{', '.join(_fmt(get(f)) for f in b.values())} at batch {small}"
            + (f"; {_outlier_text(res, model, [big, small])}" if fit == "bulk" else ""))
    setting = res.setup.setting(model) + {"ks": "", "bulk": "; the ESD without its outliers",
                                          "l1": "; fit: min-shifted histogram L1, kappa in [0.01, 10]"}[fit]
    return Measurement(vals, cannot_test=cannot, note=note, setting=setting, bound_cases=cases,
                       runs_text=f"{len(vals)} seed(s) paired across the two batch sizes")

def _falls_measurements(res: BatchResult, model: str) -> dict[str, Measurement]:
    """The trend rows of ``model`` (1/delta at batch 100 minus at 1000, and 250 -> 100) and their variants."""
    setup, out, batches = res.setup, {}, sorted({f.batch_size for f in res.of(model)})
    for k, (m, (big, small), fit) in FALLS_ROWS.items():
        if m != model:
            continue
        if model == "minialexnet" and not setup.alex_train:
            out[k] = _alex_not_run(setup)
        elif not {big, small} <= set(batches):
            out[k] = Measurement.not_run(f"batches {big} and {small} of {model} are not both in this run's "
                                         "batch_sizes", why="not_in_run", what=f"batch {big} or {small}")
        elif gate := _trained_gate(res, model, batches[::-1]):
            out[k] = Measurement.not_run(gate)
        else:
            kr = [(min(v), max(v)) for v in ([f.l1_kappa for f in _seeds(res, model, x).values()] for x in (big, small))]
            out[k] = _falls_measurement(res, model, big, small, fit,
                                        _noise_overlap(res, model, "l1", kr) if fit == "l1" else "")
    return out

SUBSET_KEYS = ("lenet-falls-images", "lenet-falls-images-250-100", "lenet-falls-protocol", "lenet-250-images",
               "lenet-100-images", "lenet-250-protocol", "lenet-100-protocol")  # the rows read from the subset runs

def subset_setting(setup, protocol: str) -> str:
    """The setting of the LeNet runs on image subsets (:mod:`htlib.experiments.htmp.replicates`) of ``protocol``."""
    size = 5000 // replicates.BLOCKS
    book = protocol == "book"
    seeds = (f"{setup.repeats} seed{'s' if setup.repeats != 1 else ''} each "
             f"({', '.join(str(setup.seed + r) for r in range(setup.repeats))})"
             if book else "one seed each (seed + the subset's index)")
    return (f"MNIST-5k, {replicates.SUBSETS} disjoint {size:,}-image subsets ({size // 10} images of each digit; another "
            f"{size:,} the test set), {seeds}; {setup.epochs} epoch{'s' if setup.epochs != 1 else ''}"
            + ("" if setup.epochs == 200 else " (the paper: 200)") + f"; SGD at learning rate {setup.lr:g}, momentum "
            f"{setup.momentum:g}; "
            + ("max-pool (the group's public code: average-pool); one scalar mean/std normalization" if book else
               "the group's public-code protocol: a 1,000-image subsample, average pooling, per-channel normalization "
               "(on MNIST's one channel the scalar one), its optimizer settings (learning rate 2/B, weight decay 1e-4, "
               "unshuffled batches) not taken, as the paper's text states its optimizer")
            + "; the paper does not name LeNet's data")

def _subset_gate(sub: SubsetsResult, protocol: str, batches) -> str:
    """Why subset runs that have not fitted their training set test nothing; ``""`` if they have."""
    runs = [r for b in batches for rs in sub.of(protocol, b).values() for r in rs]
    low = min(r.fit.train_acc for r in runs)
    if low >= TRAINED_ACC:
        return ""
    bad = sorted({r.batch_size for r in runs if r.fit.train_acc < TRAINED_ACC}, reverse=True)
    return (f"lowest train accuracy {low:.2f} < {TRAINED_ACC:g} at batch {', '.join(map(str, bad))} on the image subsets: "
            "the runs have not fitted their training set, and no row is judged on an untrained network")

def _subset_falls(sub: SubsetsResult, protocol: str, big: int, small: int, part: str) -> tuple[list[float], str, tuple]:
    """Per subset, the seed mean of the paired difference of 1/delta at ``small`` minus at ``big`` (``part``: the
    ``"whole"`` spectrum or the ``"bulk"`` without its outliers), each run's delta in words, and the same means in
    every case of its fits at the top of the kappa search or MP (:func:`bound_cases`)."""
    a, b = sub.of(protocol, big), sub.of(protocol, small)
    get = (lambda r: r.fit.delta) if part == "whole" else (lambda r: r.bulk_delta)  # noqa: E731
    kap = (lambda r: r.fit.kappa) if part == "whole" else (lambda r: r.bulk_kappa)  # noqa: E731
    units, bits = [], []
    for blk in sorted(set(a) & set(b)):
        ra, rb = {r.seed: r for r in a[blk]}, {r.seed: r for r in b[blk]}
        seeds = sorted(set(ra) & set(rb))
        units.append([[(sign, *_inv_delta(kap(r), r.fit.gamma)) for sign, r in ((1, rb[s]), (-1, ra[s]))]
                      for s in seeds])
        bits.append(f"subset {blk}: delta {', '.join(_fmt(get(ra[s])) for s in seeds)} at batch {big}, "
                    f"{', '.join(_fmt(get(rb[s])) for s in seeds)} at batch {small}"
                    + (f" (seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))})"))
    if part == "bulk":
        edge = fits = 0
        for x in (big, small):
            rs = [r for v in sub.of(protocol, x).values() for r in v]
            top = sum(_at_bound(r.bulk_kappa, r.fit.gamma) == "upper" for r in rs)
            mp = sum(not math.isfinite(r.bulk_delta) for r in rs)
            hi = _fmt(_kappa_bounds(rs[0].fit.gamma)[1])
            bits.append(f"median {np.median([r.outliers for r in rs]):g} outliers and bulk kappa "
                        f"{_fmt(float(np.median([r.bulk_kappa for r in rs])))} at batch {x}"
                        + (f" ({top} of {len(rs)} bulk fits at the top of its search, {hi}, and {mp} reading MP)"
                           if top or mp else ""))
            edge += top + mp
            fits += len(rs)
        if edge:
            bits.append(f"{edge} of {fits} bulk fits sit at the top of the kappa search or read MP, whose 1/delta "
                        "differ by one fixed step: the bulk reading moves in such steps")
    vals, cases = bound_cases(units)
    return vals, "; ".join(bits), cases

def _larger_setting_check(batch: BatchResult, part: str) -> str:
    """The reduction check of a subset trend part: the same reading on the chapter's runs on all ``n_train`` images,
    where its 95% t-interval does not lie above 0 (a larger setting that shows no rise either); ``""`` otherwise."""
    if not {1000, 100} <= {f.batch_size for f in batch.of("lenet")} or _trained_gate(batch, "lenet", [1000, 100]):
        return ""
    m = _falls_measurement(batch, "lenet", 1000, 100, "ks" if part == "whole" else "bulk")
    if not m.ran or len(m.values) < 2:
        return ""
    iv = hstats.t_interval(m.values)
    if iv.low > 0:
        return ""
    n, size = batch.setup.n_train, 5000 // replicates.BLOCKS
    return (f"the paper does not name LeNet's data; the nearest setting run beside these subsets is the chapter's runs on "
            f"{n:,} training images ({n / size:.3g} times a subset's images and SGD steps at each batch size), where "
            f"the same reading is {iv.estimate:.3g} [{iv.low:.3g}, {iv.high:.3g}] over {iv.n} seeds "
            f"(lenet-falls{'-bulk' if part == 'bulk' else ''}), not above 0: the larger setting shows no rise")

def _subset_kappa(batch: BatchResult, sub: SubsetsResult, protocol: str, b: int) -> Measurement:
    """The paper's delta over the measured one per subset (the seed mean), with each run's delta and the direct test
    of the paper's law pooled over the runs."""
    runs = sub.of(protocol, b)
    kp = PAPER_KAPPA[("lenet", b)]
    dp = _delta(kp, PAPER_GAMMA["lenet"])
    flat = [r for rs in runs.values() for r in rs]
    vals = [float(np.mean([dp / r.fit.delta for r in rs])) for rs in runs.values()]
    null = np.concatenate([r.paper_null for r in flat])
    kss = np.array([r.paper_ks for r in flat])
    beyond = int(np.sum(kss > null.max())) if null.size else 0
    note = "; ".join([f"delta per subset: " + "; ".join(f"subset {blk}: {', '.join(_fmt(r.fit.delta) for r in rs)}"
                                                        for blk, rs in runs.items())]
                     + ([f"the paper's law HTMP(kappa {kp:g}, gamma {flat[0].fit.gamma:.3g}), its scale fitted, has KS "
                         f"{kss.min():.3g}-{kss.max():.3g} on the {len(flat)} runs against {null.size} beta-Laguerre "
                         f"spectra of that law at the same size (largest {null.max():.3g}): {beyond} of {len(flat)} runs "
                         "beyond every draw"] if null.size else []))
    kap = [r.fit.kappa for r in flat]
    return Measurement(vals, cannot_test=_noise_overlap(batch, "lenet", "ks", [(min(kap), max(kap))]), note=note,
                       runs_text=f"{len(vals)} image subsets ({len(flat)} runs)", setting=subset_setting(sub.setup, protocol))

def measure_subsets(batch: BatchResult, sub: SubsetsResult | None) -> dict[str, Measurement]:
    """The rows read from the LeNet runs on image subsets (:data:`SUBSET_KEYS`): the trend, whole spectrum and bulk
    together, per subset; the paper's kappa per subset; the same under the group's public-code protocol."""
    keys = [k for k in SUBSET_KEYS if k in TABLE]
    if sub is None or not sub.runs:
        why = ("the image subsets are MNIST-5k's (dataset mnist5k)" if sub is not None and sub.setup.dataset != "mnist5k"
               else f"none of the subset runs' batch sizes ({', '.join(map(str, replicates.SUBSET_BATCHES))}) is in "
                    "this run's batch_sizes" if sub is not None
               else "the runs on image subsets (replicates.run_subsets) were not passed")
        return {k: Measurement.not_run(why) for k in keys}
    out = {}
    for key, protocol, (big, small) in (("lenet-falls-images", "book", (1000, 100)),
                                        ("lenet-falls-images-250-100", "book", (250, 100)),
                                        ("lenet-falls-protocol", "public", (1000, 100))):
        if key not in TABLE:
            continue
        have = {r.batch_size for r in sub.runs if r.protocol == protocol}
        if not {big, small} <= have:
            out[key] = Measurement.not_run(f"batches {big} and {small} are not both among the subset runs",
                                           why="not_in_run", what=f"batch {big} or {small}")
        elif gate := _subset_gate(sub, protocol, (big, small)):
            out[key] = Measurement.not_run(gate)
        else:
            parts = {}
            for part in ("whole", "bulk"):
                vals, note, cases = _subset_falls(sub, protocol, big, small, part)
                if any(not math.isfinite(v) for v in vals):
                    parts[f"{key}-{part}"] = Measurement.not_run("the ESD is too small to fit a bulk without its outliers")
                    continue
                check = _larger_setting_check(batch, part) if key == "lenet-falls-images" else ""
                parts[f"{key}-{part}"] = Measurement(vals, note=note, reduction_check=check, bound_cases=cases,
                                                     runs_text=f"{len(vals)} image subsets, paired across the two "
                                                               "batch sizes")
            crossed = ("the seeds are crossed with the subsets (a seed's start and batch order repeat on every "
                       "subset), so the interval over subsets leaves the seed-to-seed variation out")
            history = ("it replaces, as the counted reading of the trend, the 4,000-image reading lenet-falls (agrees "
                       "on a criterion chosen after its numbers; now a variant); its criterion was committed before "
                       "its runs, its reading code 3 minutes after the last of them")
            out[key] = Measurement(parts=parts, setting=subset_setting(sub.setup, protocol),
                                   note="; ".join([crossed, history] if key == "lenet-falls-images" else [crossed]))
    for b in (250, 100):
        for protocol, key in ((("book", "lenet-250-images"), ("public", "lenet-250-protocol")) if b == 250 else
                              (("book", "lenet-100-images"), ("public", "lenet-100-protocol"))):
            if not sub.of(protocol, b):
                out[key] = Measurement.not_run(f"batch {b} is not among the subset runs", why="not_in_run",
                                               what=f"batch {b}")
            elif gate := _subset_gate(sub, protocol, (b,)):
                out[key] = Measurement.not_run(gate)
            else:
                out[key] = _subset_kappa(batch, sub, protocol, b)
    return out

def rule_oc(spec, keep: float, n: int) -> tuple[float, float]:
    """``(P(agrees), P(disagrees))`` of a sign row ``spec`` on a per-seed 0/1 indicator (1: the seed's test keeps the
    law) at ``n`` seeds, each kept with probability ``keep``: exact, every count through :func:`htlib.stats.sign_test`
    with the row's share, margin and confidence, weighted by its binomial probability.

    Examples
    --------
    >>> spec = TABLE["ntk-lenet"].parts[0]
    >>> [round(v, 4) for v in rule_oc(spec, 0.95, 6)]  # 6 seeds cannot beat the margin; 2 rejections disagree
    [0.0, 0.0328]
    >>> [round(v, 4) for v in rule_oc(spec, 0.8, 40)]  # a law rejected on 20% of seeds, at 40 seeds
    [0.0079, 0.9241]
    """
    alpha = 1.0 - spec.confidence
    agree = disagree = 0.0
    for k in range(n + 1):
        t = hstats.sign_test([1.0] * k + [0.0] * (n - k), ">", spec.level, spec.confidence, share=spec.share,
                             margin=spec.margin)
        w = float(stats.binom.pmf(k, n, keep))
        agree += w * (t.p < alpha)
        disagree += w * (t.p >= alpha and t.p_opposite < alpha)
    return agree, disagree

POWER_NAMES = {"lognormal": "log-normal (the mean and spread of its log eigenvalues)",
               "pareto": "Pareto (from its smallest eigenvalue, with the fitted law's tail exponent 1 + delta)",
               "mp": "Marchenko-Pastur (a real Wishart's eigenvalues, gamma 0.5)"}

def power_text(power: dict, spec, n_seeds: int, n: int, grid, reps: int) -> str:
    """The per-seed test's rejections of each named alternative (:func:`run_power`), and what the rule ``spec``
    makes of them at ``n_seeds`` seeds: the exact P(agrees) and P(disagrees) at the lower end of each rejection
    rate's 95% Clopper-Pearson interval (the least power the draws allow)."""
    if not power:
        return ""
    ip = POWER_FIELDS.index("p")
    bits = []
    for law, rows in power.items():
        rej = int(np.sum(rows[:, ip] <= GOF_ALPHA))
        ratio = rows[:, POWER_FIELDS.index("ks")] / rows[:, POWER_FIELDS.index("null_max")]
        low = float(stats.binomtest(rej, len(rows)).proportion_ci(0.95, method="exact").low)
        oc = {m: rule_oc(spec, 1.0 - low, m) for m in dict.fromkeys((n_seeds, 20))}
        bits.append(f"{POWER_NAMES.get(law, law)}: rejected on {rej} of {len(rows)} draws (their KS "
                    f"{ratio.min():.2g} to {ratio.max():.2g} times the largest of their refits), a rejection rate of at "
                    f"least {low:.2f} (95% lower bound), so the rule agrees with probability at most "
                    + " and ".join(f"{a:.2g} at {m} seeds" for m, (a, _) in oc.items())
                    + " and disagrees with probability at least "
                    + " and ".join(f"{d:.2g} at {m}" for m, (_, d) in oc.items()))
    return (f"power of the per-seed test ({reps} refits, {n} eigenvalues, the gamma grid "
            f"{', '.join(f'{g:g}' for g in grid)}) on spectra matched to the first seed's: " + "; ".join(bits))

NTK_READ_BEFORE_RULE = (0, 1, 2, 3, 4, 5)  # LeNet NTK training seeds read before the ntk-lenet rule was fixed

def ntk_fresh_text(seeds) -> str:
    """Which of the NTK training ``seeds`` were read before the claim's rule was fixed (2026-12-06).

    Examples
    --------
    >>> ntk_fresh_text(range(6, 26))
    'none of them read before the rule was fixed (on 2026-12-06, after seeds 0 to 5)'
    >>> ntk_fresh_text([4, 5, 6])
    'seeds 4, 5 of them read before the rule was fixed (on 2026-12-06)'
    """
    seen = sorted(set(seeds) & set(NTK_READ_BEFORE_RULE))
    if not seen:
        return (f"none of them read before the rule was fixed (on 2026-12-06, after seeds {NTK_READ_BEFORE_RULE[0]} "
                f"to {NTK_READ_BEFORE_RULE[-1]})")
    return f"seeds {', '.join(map(str, seen))} of them read before the rule was fixed (on 2026-12-06)"

def gof_spread_text(tests, grid) -> str:
    """What the per-seed goodness-of-fit ``tests`` (:class:`htlib.htmp.GoFResult`, one per seed) say beyond each
    seed's p: how many lie closer to the law than every refit (p = 1) against what a calibrated test gives, how many
    seeds one refit keeps from the level (a fresh draw of refits may reject them), and how many fits sit at the
    gamma grid's lowest value.

    Examples
    --------
    >>> from types import SimpleNamespace as N
    >>> t = [N(p=1.0, null=np.zeros(19), fit=N(gamma=0.05))] * 3 + [N(p=0.1, null=np.zeros(19), fit=N(gamma=0.1))]
    >>> txt = gof_spread_text(t, (0.05, 0.1))  # 3 of 4 at p = 1; P(>= 3 of 4 at rate 1/20); one seed at p 0.1
    >>> [x in txt for x in ("3 of 4", "0.00048", "0.36", "0.64")]
    [True, True, True, True]
    """
    n = len(tests)
    reps = int(tests[0].null.size)
    top = sum(t.p >= 1.0 for t in tests)
    near = [t for t in tests if GOF_ALPHA < t.p <= GOF_ALPHA + 1.0 / (reps + 1) + 1e-12]
    low = sum(math.isclose(t.fit.gamma, min(grid)) for t in tests)
    bits = []
    if top:
        tail = float(stats.binom.sf(top - 1, n, 1.0 / (reps + 1)))
        bits.append(f"{top} of {n} seeds have p = 1 (the data closer to the fitted law than each of its {reps} refits), "
                    f"which a calibrated test gives with probability {1 / (reps + 1):.2g} per seed and {top} or more of "
                    f"{n} seeds with probability {tail:.2g}"
                    + ("; so on these spectra the test is conservative (they lie closer to the law than its own "
                       "beta-Laguerre samples do), and keeping the law on every seed is weak evidence that it "
                       "describes them" if tail < 0.05 else ""))
    if near:
        flip = (1.0 - 1.0 / reps) ** reps
        bits.append(f"{len(near)} seed(s) one refit from the level (p {GOF_ALPHA + 1.0 / (reps + 1):.2g}): a fresh set "
                    f"of {reps} refits rejects such a seed with probability about {flip:.2g} (at the rate 1/{reps} its "
                    f"refits show), so every seed stays kept on a redraw of the refits with probability about "
                    f"{(1.0 - flip) ** len(near):.2g}")
    if low:
        bits.append(f"{low} of {n} fits at the gamma grid's lowest value {min(grid):g}")
    return "; ".join(bits)

REFIT_REPS = 99  # the refits of a seed tested again where its 19 refits leave it within two of the level

def _refit_measurement(runs, refits: dict | None) -> Measurement:
    """The claim's per-seed keep indicator with the seeds near the level tested again (:func:`run_refits`)."""
    if refits is None:
        return Measurement.not_run("the tests with more refits (run_refits) were not passed", why="not_in_run",
                                   what="the tests with more refits")
    ip, ia = REFIT_FIELDS.index("p"), REFIT_FIELDS.index("as_far")
    vals = [float((refits[x.seed][ip] if x.seed in refits else x.gof[0].p) > GOF_ALPHA) for x in runs]
    def true_p(k: int) -> str:  # the 95% Clopper-Pearson interval of the share of refits at least as far
        ci = stats.binomtest(k, REFIT_REPS).proportion_ci(0.95, method="exact")
        return f"{ci.low:.2g} and {ci.high:.2g}"
    bits = [f"seed {x.seed}: p {x.gof[0].p:.2g} from {x.gof[0].null.size} refits, {refits[x.seed][ip]:.2g} from "
            f"{REFIT_REPS} fresh ones ({int(refits[x.seed][ia])} of them at least as far as the data: the test's true p "
            f"between {true_p(int(refits[x.seed][ia]))}, 95%)" for x in runs if x.seed in refits]
    if any(GOF_ALPHA * 0.5 < refits[s][ip] <= GOF_ALPHA * 2 for s in refits):
        bits.append(f"a seed whose p stays near {GOF_ALPHA:g} on both draws is decided by the draw of its refits, not by "
                    "its spectrum, and so is this reading")
    return Measurement(vals, runs_text=f"{len(runs)} training seeds ({len(refits)} tested again)",
                       note="; ".join(bits) or "no seed's p lies within two refits of the level")

NTK_RTOL_ROWS: dict[float, str] = {1e-4: "ntk-lenet-rtol1e-04"}
"""The NTK claim read at another zero cut-off of the kernel's eigenvalues (a variant): cut-off -> row key."""

def measure_ntk(res: BatchResult, gof_power: dict | None = None, refits: dict | None = None) -> dict[str, Measurement]:
    """The NTK rows: the goodness-of-fit p-values of the inverse HTMP and inverse MP laws per LeNet training seed,
    with the test's power against named alternatives (``gof_power``, :func:`run_power`) where given; the other
    cut-offs at the first seed; logistic regression not tested (:data:`LOGISTIC_NTK`)."""
    setup, out = res.setup, {}
    for k, s in TABLE.items():
        if k == "ntk-logistic" or s.variant_of == "ntk-logistic":
            out[k] = Measurement.not_run(LOGISTIC_NTK, why="no_data", data="CIFAR-10 or SVHN")
    key = "ntk-lenet"
    keys = [key] + [k for k, s in TABLE.items() if s.variant_of == key]
    runs = _ntk_groups(res).get("lenet", [])
    if not runs:
        out.update({k: Measurement.not_run("lenet is not in this run's ntk_models", why="not_in_run",
                                                       what="LeNet's NTK") for k in keys})
        return out
    acc = min(x.train_acc for x in runs)
    if acc < TRAINED_ACC:
        out.update({k: Measurement.not_run(f"lowest train accuracy of the NTK runs {acc:.4f} < {TRAINED_ACC:g}: the net "
                                           "is not at near-zero loss, and no row is judged on an untrained network")
                    for k in keys})
        return out
    if failed := [x for x in runs if x.gof[0] is None]:
        out.update({k: Measurement.not_run("the goodness-of-fit test could not be made at training seed(s) "
                                           + "; ".join(f"{x.seed} ({x.gof_errors.get(0, 'not run')})" for x in failed))
                    for k in keys})
        return out
    r, grid, setting, red = runs[0], runs[0].gammas or setup.ntk_gammas, setup.ntk_setting("lenet"), setup.ntk_reduction("lenet")
    seeds = (f"{len(runs)} training seed(s) ({', '.join(str(x.seed) for x in runs)}; "
             f"{ntk_fresh_text(x.seed for x in runs)})")
    same = [t for t, f in zip(r.rtols[1:], r.fits[1:]) if f.n == r.fit.n]
    note = (f"first seed: inverse HTMP kappa {_fmt(r.fit.kappa)}, gamma {r.fit.gamma:g}"
            + (f" ({_corner(r.fit, grid)})" if _corner(r.fit, grid) else "") + f"; {_gamma_law_text(r, grid)}"
            + (f"; rtol {', '.join(f'{t:g}' for t in same)} keeps the same eigenvalues" if same else ""))
    # Per seed, whether the test passes the law (fits) or rejects it (mp), at GOF_ALPHA: a sign test over seeds
    spec = TABLE[key].parts[0]
    power = power_text(gof_power or {}, spec, len(runs), r.fit.n, grid, r.gof[0].reps)
    spread = gof_spread_text([x.gof[0] for x in runs], grid)
    fits = Measurement([float(x.gof[0].p > GOF_ALPHA) for x in runs], runs_text=seeds,
                       note="; ".join([f"seed {x.seed}: {gof_words(x.gof[0])}" + (f" ({null_loss(x.gof[0])})"
                                                                                 if null_loss(x.gof[0]) else "")
                                       for x in runs] + [b for b in (spread, power) if b]))
    mp = Measurement([float(x.gof[0].mp_p <= GOF_ALPHA) for x in runs], runs_text=seeds,
                     note="; ".join(f"seed {x.seed}: {gof_words(x.gof[0], 'mp')}" for x in runs))
    fresh = not set(x.seed for x in runs) & set(NTK_READ_BEFORE_RULE)
    out[key] = Measurement(parts={f"{key}-fits": fits, f"{key}-mp": mp}, setting=setting, note=note,
                           fresh=f"its {len(runs)} training seeds" if fresh else "",
                           reduction_check="" if red else (
                               f"no reduction: the LeNet NTK runs are at the paper's {setup.ntk_n:,} images, "
                               f"{setup.ntk_epochs} epochs, cosine annealing from {setup.ntk_lr:g} and batch "
                               f"{setup.ntk_batch}; the setting's other deviations (data, momentum, output-traced "
                               "kernel, zero cut-off) are conventions the paper does not state"))
    out["ntk-lenet-refits"] = _refit_measurement(runs, refits)
    for i, rtol in enumerate(r.rtols[1:], 1):
        k = NTK_RTOL_ROWS.get(float(f"{rtol:.0e}"))
        if k is None:
            continue
        g = r.gof[i] if i < len(r.gof) else None
        if r.fits[i].n == r.fit.n:
            out[k] = Measurement.not_run(f"rtol {rtol:g} keeps the same {r.fit.n} eigenvalues as the claim's cut-off "
                                         f"{r.rtols[0]:g}: the claim's row reads them")
        elif g is None:
            out[k] = Measurement.not_run(f"the goodness-of-fit test at rtol {rtol:g} was not made"
                                         + (f": {r.gof_errors[i]}" if i in r.gof_errors else ""))
        else:
            out[k] = Measurement([g.p], runs_text=f"first training seed {r.seed}",
                                 note=f"{gof_words(g)}; {g.fit.n_zero} eigenvalues zero",
                                 setting=setting + f"; zero cut-off rtol {rtol:g} instead of {r.rtols[0]:g}",
                                 cannot_test=null_loss(g))
    for k in keys:
        out.setdefault(k, Measurement.not_run(f"the cut-off of {k} is not in this run's ntk_rtols",
                                                 why="not_in_run", what="this cut-off"))
    return out

def measure(batch: BatchResult, *, q_err: float, check_kappas, sup_cdf, mp_kappas, n_match: int = 0,
            phase_setting: str = "", phase_table: pd.DataFrame | None = None, phase_tables=None,
            gof_power: dict | None = None, subsets: SubsetsResult | None = None,
            ntk_refits: dict | None = None) -> dict[str, Measurement]:
    """One :class:`htlib.claims.Measurement` per :data:`TABLE` row, from the cached results and notebook tables; the
    phases row reads ``phase_tables`` (one per seed, :func:`phase_runs`) where given, else ``n_match`` of one seed;
    the image-subset rows read ``subsets`` (:func:`run_subsets`); the NTK claim's refit variant reads ``ntk_refits``
    (:func:`run_refits`)."""
    sup_cdf = [float(v) for v in sup_cdf]
    rises = sum(1 for a, b in zip(sup_cdf, sup_cdf[1:]) if not b < a)
    curve = f"{', '.join(f'{x:.3g}' for x in sup_cdf)} at kappa {', '.join(f'{k:g}' for k in mp_kappas)}"
    setup, sel = batch.setup, batch.of("lenet", "variance")  # LeNet at batch 100, initialization read literally
    if not sel or setup.init_batch != 100:
        init = Measurement.not_run("the initialization comparison runs at init_batch; the table reads batch 100")
    elif (acc := min(f.train_acc for f in sel)) < TRAINED_ACC:
        init = Measurement.not_run(
            f"train accuracy {acc:.2f} < {TRAINED_ACC:g}, test accuracy {np.mean([f.test_acc for f in sel]):.2f}: with "
            f"weights fan_in^(1/4) times larger the net does not train at lr {setup.lr:g}, and no row is judged on an "
            f"untrained network (initialization section; delta per seed {', '.join(_fmt(f.delta) for f in sel)})")
    else:
        dp = _delta(PAPER_KAPPA[("lenet", 100)], PAPER_GAMMA["lenet"])
        init = Measurement([dp / f.delta for f in sel], runs_text=f"{len(sel)} seed(s)",
                           note=f"delta per seed {', '.join(_fmt(f.delta) for f in sel)}",
                           setting=setup.setting("lenet") + "; initialization: variance sqrt(1/fan_in) read literally")
    out = {"moments": Measurement([q_err], runs_text=f"deterministic quadrature at kappa = "
                                                     f"{', '.join(f'{k:g}' for k in check_kappas)}"),
           "mp-limit": Measurement(parts={"mp-limit-last": Measurement([sup_cdf[-1]], note=curve),
                                          "mp-limit-falls": Measurement([rises])}, runs_text="closed-form CDFs on a grid"),
           "phases": _phase_measurement(batch.setup, n_match, phase_setting, phase_table, phase_tables),
           "lenet-100-init": init}
    for model in ("minialexnet", "lenet"):
        if model in batch.summary.index.get_level_values(0) or (model == "minialexnet" and not setup.alex_train):
            out.update(_kappa_measurements(batch, model))
            out.update(_falls_measurements(batch, model))
    for k, s in TABLE.items():
        if k.startswith(("minialexnet", "lenet")) and k not in out:
            out[k] = Measurement.not_run(f"{k.split('-')[0]} was not run")
    out.update(measure_subsets(batch, subsets))
    out.update(measure_ntk(batch, gof_power, ntk_refits))
    return out

def claims(batch: BatchResult, **tables) -> list[Claim]:
    """Every record of the chapter (claims, checks and variants): :data:`TABLE` judged on :func:`measure`."""
    return judge_table(TABLE, archive.merge(measure(batch, **tables), __name__))

def _phase_measurement(setup, n_match: int, setting: str, table, tables) -> Measurement:
    """The phases row: per seed, the generated spectra labelled as intended (``tables``: one per seed ``seed``,
    ``seed + 1``, ...), else ``n_match`` of one seed (``table``)."""
    if tables is None:
        return Measurement([n_match], runs_text="one seed", setting=setting or "the model's spectra, one seed",
                           note=_phase_note(table))
    seeds = [setup.seed + i for i in range(len(tables))]
    notes = [f"seed {s}: {_phase_note(t)}" for s, t in zip(seeds, tables) if _phase_note(t)]
    top, full = len(tables[0]), sum(bool(t["as intended"].all()) for t in tables)
    notes.append(f"the count is at most {top}, so an interval end above {top} is the t-interval's, not a count; "
                 f"{full} of {len(tables)} seeds label all {top} phases as intended (read exactly, a mean of at least "
                 f"{top} needs every seed at {top}; a sign test over {len(tables)} seeds cannot reach p < "
                 f"{0.5 ** len(tables):.3g})")
    return Measurement([int(t["as intended"].sum()) for t in tables], runs_text=f"{len(tables)} seeds "
                       f"({', '.join(map(str, seeds))})", setting=setting or f"the model's spectra, {len(tables)} seeds",
                       note="; ".join(notes))

def _phase_note(table: pd.DataFrame | None) -> str:
    """Which generated phases ``classify_phase`` labels otherwise, and as what."""
    if table is None or table["as intended"].all():
        return ""
    return ("; ".join(f"the {row.intended} spectrum (kappa {_fmt(row.kappa)}, spikes {row.spikes}) is labelled "
                      f"'{row.label}'" for row in table[~table["as intended"]].itertuples())
            + ": classify_phase's rules, not the model, place it there (phase table)")
