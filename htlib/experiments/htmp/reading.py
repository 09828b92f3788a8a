"""What the htmp chapter reads from its cached results (:mod:`htlib.experiments.htmp.compute`): the claims table, the
measurements :func:`htlib.claims.judge` reads, tables and prose numbers.  Outside the result-cache key."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from htlib import htmp, spectra
from htlib.claims import Claim, Measurement, judge_table, read_table
from htlib.experiments.htmp.compute import BatchResult, NTKFit, PAPER_KAPPA, _delta, _q, bulk_fit

TABLE = read_table(Path(__file__).with_name("claims.toml"))  # one htlib.claims.Spec per record key
TRAINED_ACC = 0.99  # the cannot-test gate on trained weights: below it a run has not fitted its training set
NTK_SEEN_SEEDS = frozenset({0})  # NTK seeds whose KS ratio was seen when the level was set: the claim reads the others
BOUND_NEAR = 1.1  # a fitted kappa within this factor of fit_htmp's search bound is reported as at the bound
PAPER_GAMMA: dict[str, float] = {"minialexnet": 1000 / (192 * 4 * 4), "lenet": 120 / 400}  # FC1 of the paper's nets
LENET_DATA_UNSTATED = (  # why the book's PAPER preset cannot stand for the paper's LeNet protocol
    "the paper does not name LeNet's data or its size; the group's later public code loads MNIST's 60,000 training "
    "images (15 times the SGD steps of 200 epochs on 4,000, which MNIST-5k cannot supply) or a 1,000-image subsample")

def mp_delta() -> float:
    """The MP rule's delta: the fit "finds MP" at delta >= this (1 / the level of the MP rows)."""
    return 1.0 / TABLE["minialexnet-1000"].level

def _kappa_bounds(gamma: float) -> tuple[float, float]:
    return 0.1, min(50.0, 300.0 * gamma)  # the default search range of htlib.htmp.fit_htmp

def _at_bound(kappa: float, gamma: float) -> str:
    """``"lower"``/``"upper"`` when ``kappa`` is within :data:`BOUND_NEAR` of the fit's bound, else ``""``."""
    lo, hi = _kappa_bounds(gamma)
    if not math.isfinite(kappa):
        return ""
    return "lower" if kappa <= lo * BOUND_NEAR else "upper" if kappa >= hi / BOUND_NEAR else ""

def _fmt(v: float) -> str:
    return "inf" if math.isinf(v) else format(v, ".3g")

def _span(v, f=lambda x: f"{x:.3g}") -> str:
    return f"{f(v[0])} [{f(v[1])}, {f(v[2])}]"  # (median, lowest, highest) as "m [lo, hi]"

def ks_pvalue(observed: float, null: np.ndarray) -> tuple[float, tuple[float, float], int]:
    """The bootstrap p-value ``(1 + k) / (B + 1)`` of an observed KS (``k`` of the ``B`` null values at least as
    large), its exact (Clopper-Pearson) 95 % interval, and ``k``.

    Examples
    --------
    >>> p, (lo, hi), k = ks_pvalue(0.5, np.linspace(0.0, 1.0, 101)[:-1])
    >>> round(p, 3), k, lo < p < hi
    (0.505, 50, True)
    """
    null = np.asarray(null, dtype=np.float64)
    k = int(np.sum(null >= observed))
    ci = stats.binomtest(k, null.size).proportion_ci(0.95)
    return (k + 1) / (null.size + 1), (float(ci.low), float(ci.high)), k

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
        bits.append(f"where HTMP is a Gamma law of shape delta {_delta(f.kappa, f.gamma):.3g} to "
                    f"{gamma_gap(f.kappa, f.gamma):.2g} (sup CDF)")
    return "; ".join(bits)

def null_edge(eigs, below: float = 1e-3, jump: float = 3.0) -> tuple[int, float, float]:
    """The null space of a positive semi-definite spectrum: the widest gap (in decades) between consecutive sorted
    ``|eigenvalue| / largest`` below ``below``.  Returns the count at or below the gap, the null's top and the next
    value (relative to the largest); ``(0, 0.0, smallest)`` when no gap spans ``jump`` decades.

    Examples
    --------
    >>> null_edge(np.r_[np.full(5, 1e-17), np.geomspace(1e-8, 1.0, 20)])
    (5, 1e-17, 1e-08)
    >>> null_edge(np.geomspace(1e-8, 1.0, 20))[0]
    0
    """
    a = np.sort(np.abs(np.asarray(eigs, dtype=np.float64)))
    a = a / a[-1]
    low = a[a < below]
    if low.size >= 2:
        lg = np.log10(np.maximum(low, 1e-20))  # exact zeros count as 1e-20: round-off zero
        j = int(np.argmax(np.diff(lg)))
        if lg[j + 1] - lg[j] >= jump:
            return j + 1, float(low[j]), float(low[j + 1])
    return 0, 0.0, float(a[0])

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

def _ntk_test(r: "NTKFit", i: int, law: str) -> dict:
    """The cached bootstrap KS test of ``law`` ("htmp" or "mp") at cut-off ``rtols[i]``, as a dict."""
    f = r.fits[i] if r.fits else r.fit
    obs, null = (f.ks, r.nulls[i]) if law == "htmp" else (f.mp_ks, r.mp_null)
    p, ci, k = ks_pvalue(obs, null)
    return dict(fit=f, ks=obs, null=null, p=p, ci=ci, k=k, law=law, rtol=r.rtols[i] if r.rtols else math.nan)

def _p_text(t: dict) -> str:
    """The bootstrap p-value in words: ``<= 1/(B+1)`` when no draw reaches the observed KS."""
    return f"p <= {t['p']:.2g}" if t["k"] == 0 else f"p {t['p']:.3g}"

def _ntk_words(t: dict) -> str:
    f, null = t["fit"], t["null"]
    what = f"kappa {_fmt(f.kappa)}, gamma {f.gamma:g}" if t["law"] == "htmp" else f"gamma {f.mp_gamma:g}"
    return (f"KS {t['ks']:.3g} ({what}) against {null.size} bootstrap KS {np.mean(null):.3g} +- {np.std(null):.2g}: "
            f"{t['k']} of {null.size} at least as large, {_p_text(t)} [{t['ci'][0]:.3g}, {t['ci'][1]:.3g}]")

def ntk_ratio(r: "NTKFit", i: int = 0) -> float:
    """The NTK claim's statistic: the inverse HTMP law's KS over the best inverse MP law's, at ``rtols[i]``."""
    f = r.fits[i] if r.fits else r.fit
    return f.ks / f.mp_ks

def _seeds(res: BatchResult, model: str, b: int, init: str = "std") -> dict[int, object]:
    return {f.seed: f for f in res.of(model, init) if f.batch_size == b}  # the runs of ``model`` at batch ``b``

def _trained_gate(res: BatchResult, model: str, batches) -> str:
    """The cannot-test reason of runs that have not fitted their training set; ``""`` if they have."""
    lows = {b: float(res.summary.loc[(model, b), "train acc lo"]) for b in batches}
    bad = [b for b, v in lows.items() if not v >= TRAINED_ACC]
    if not bad:
        return ""
    s, noise = res.summary.loc[(model, bad[0])], res.noise_of(model)
    nks = float(np.median([f.mp_ks for f in noise])) if noise else math.nan
    steps = int(s["steps"])
    return (f"lowest train accuracy {lows[bad[0]]:.2f} < {TRAINED_ACC:g} at batch {', '.join(map(str, bad))}: the runs "
            f"have not fitted their training set, after {steps} SGD step{'' if steps == 1 else 's'} at batch {bad[0]}: "
            f"train accuracy {s['train acc']:.2f}, test accuracy {s['test acc']:.2f}, KS {s['KS HTMP']:.3g} (HTMP) and "
            f"{s['KS MP']:.3g} (MP) against {nks:.3g} (MP) for pure noise of the same shape, FC1 "
            f"{s['weight change']:.1%} from its initialization (Fig. 5 table)")

def _kappa_measurements(res: BatchResult, model: str) -> dict[str, Measurement]:
    """The paper's kappa per batch size for ``model`` (delta, or 1/delta where the paper has MP) and its variants."""
    setup, out = res.setup, {}
    for b, kp in ((b, kp) for (m, b), kp in PAPER_KAPPA.items() if m == model):
        key = f"{model}-{b}"
        keys = [k for k in (key, f"{key}-l1", f"{key}-kappa") if k in TABLE]
        runs = list(_seeds(res, model, b).values())
        if not runs:
            out.update({k: Measurement.not_run(f"batch {b} of {model} is not in this run's batch_sizes") for k in keys})
            continue
        gate = _trained_gate(res, model, [b])
        if gate and math.isinf(kp):
            gate += "; an untrained layer is MP by construction, so even a match of the paper's kappa = inf is no evidence"
        dp, s = _delta(kp, PAPER_GAMMA[model]), res.summary.loc[(model, b)]
        nk, nl = noise_kappa(res, model, "ks"), noise_kappa(res, model, "l1")
        note = (f"delta per seed {', '.join(_fmt(f.delta) for f in runs)} (kappa {', '.join(_fmt(f.kappa) for f in runs)}) "
                f"at gamma {runs[0].gamma:.3g}; the book's KS fit gives kappa {_fmt(s['kappa'])} here and {_fmt(nk[0])} "
                f"on {len(res.noise_of(model))} pure-noise matrices of the same shape, the min-shifted histogram-L1 fit "
                f"{_fmt(s['L1 kappa'])} here and {_fmt(nl[0])} on the same noise (fit comparison and noise tables)")
        if model == "lenet":
            note += f"; {_outlier_text(res, model, [b])}; {LENET_DATA_UNSTATED}"
        for k, fit, vals, extra in (  # the paper's over the measured: 0, not inf, where the fit returns MP
                (key, "ks", [1 / f.delta if math.isinf(kp) else dp / f.delta for f in runs], ""),
                (f"{key}-l1", "l1", [dp / f.l1_delta for f in runs], "; fit: min-shifted histogram L1, kappa in [0.01, 10]"),
                (f"{key}-kappa", "ks", [kp / f.kappa for f in runs], "; kappa, not delta, compared")):
            if k in TABLE:
                kap = [f.kappa if fit == "ks" else f.l1_kappa for f in runs]  # a fit giving the same on noise cannot speak
                noise = "" if math.isinf(kp) else _noise_overlap(res, model, fit, [(min(kap), max(kap))])
                out[k] = Measurement(vals, cannot_test=gate or noise, runs_text=f"{len(runs)} seed(s)",
                                     setting=setup.setting(model) + extra, note=note)
    return out

def _falls_measurement(res: BatchResult, model: str, big: int, small: int, fit: str, gate: str) -> Measurement:
    """Per seed, the ``fit``'s 1/delta at batch ``small`` minus at ``big``; ``"bulk"``: without the outliers."""
    a, b = _seeds(res, model, big), _seeds(res, model, small)
    get = {"ks": lambda f: f.delta, "l1": lambda f: f.l1_delta, "bulk": lambda f: _delta(bulk_fit(f)[1], f.gamma)}[fit]
    vals = [1 / get(b[s]) - 1 / get(a[s]) for s in sorted(set(a) & set(b))]
    if any(math.isnan(v) for v in vals):  # bulk_fit gives nan where the ESD is too small to fit a bulk
        return Measurement.not_run("the ESD is too small to fit a bulk without its outliers")
    note = (f"delta {', '.join(_fmt(get(f)) for f in a.values())} at batch {big}, "
            f"{', '.join(_fmt(get(f)) for f in b.values())} at batch {small}"
            + (f"; {_outlier_text(res, model, [big, small])}" if fit == "bulk" else ""))
    return Measurement(vals, cannot_test=gate, note=note, runs_text=f"{len(vals)} seed(s) paired across the two batch sizes")

def _falls_measurements(res: BatchResult, model: str) -> dict[str, Measurement]:
    """The trend rows of ``model`` (1/delta at batch 100 minus at 1000, and 250 -> 100) and their L1 variant."""
    setup, out, batches = res.setup, {}, sorted({f.batch_size for f in res.of(model)})
    for key, (big, small) in ((f"{model}-falls", (1000, 100)), (f"{model}-falls-250-100", (250, 100))):
        keys = [k for k in (key, f"{key}-l1") if k in TABLE]
        if keys and not {big, small} <= set(batches):
            out.update({k: Measurement.not_run(f"batches {big} and {small} of {model} are not both in this run's "
                                               "batch_sizes") for k in keys})
        if not keys or not {big, small} <= set(batches):
            continue
        gate = _trained_gate(res, model, batches[::-1])
        out[key] = Measurement(setting=setup.setting(model), parts={
            f"{key}-whole": _falls_measurement(res, model, big, small, "ks", gate),
            f"{key}-bulk": _falls_measurement(res, model, big, small, "bulk", gate)}, cannot_test=gate)
        if f"{key}-l1" in TABLE:
            kr = [(min(k), max(k)) for k in ([f.l1_kappa for f in _seeds(res, model, x).values()] for x in (big, small))]
            m = _falls_measurement(res, model, big, small, "l1", gate or _noise_overlap(res, model, "l1", kr))
            out[f"{key}-l1"] = Measurement(m.values, cannot_test=m.cannot_test, runs_text=m.runs_text, note=m.note,
                                           setting=setup.setting(model) + "; fit: min-shifted histogram L1, kappa in [0.01, 10]")
    return out

def measure_ntk(res: BatchResult) -> dict[str, Measurement]:
    """The NTK rows: the KS ratio of the unseen training seeds; variants: the first seed's bootstrap KS tests."""
    setup, groups, out = res.setup, _ntk_groups(res), {}
    for model in ("logistic", "lenet"):
        key = f"ntk-{model}"
        keys = [key] + [k for k, s in TABLE.items() if s.variant_of == key]
        runs = groups.get(model, [])
        if not runs:
            out.update({k: Measurement.not_run(f"{model} is not in this run's ntk_models") for k in keys})
            continue
        r, grid, setting = runs[0], runs[0].gammas or setup.ntk_gammas, setup.ntk_setting(model)
        acc = min(x.train_acc for x in runs)
        gate = "" if acc >= TRAINED_ACC else (f"lowest train accuracy of the NTK runs {acc:.4f} < {TRAINED_ACC:g}: the net "
                                              "is not at near-zero loss (NTK table)")
        red, claim_gate = setup.ntk_reduction(model), gate
        if model == "logistic" and red and not gate:  # the claim's gate; the variants test the spectrum at hand
            claim_gate = (f"{red}: logistic regression's kernel 10 (X X^T + 1) is the Gram of its inputs whatever its weights, "
                          f"so other inputs are another spectrum ({r.fit.n_zero} eigenvalues zero at rtol {r.rtols[0]:g}; NTK table)")
        unseen = [x for x in runs if x.seed not in NTK_SEEN_SEEDS]
        seen = [x for x in runs if x.seed in NTK_SEEN_SEEDS]
        per_cut = "; ".join(f"{ntk_ratio(r, i):.3g} at rtol {t:g}" for i, t in enumerate(r.rtols or ()))
        note = ("; ".join(f"seed {x.seed}: {ntk_ratio(x):.3g} (seen when the level was set, not read)" for x in seen)
                + f"; first seed per cut-off: {per_cut}; inverse HTMP kappa {_fmt(r.fit.kappa)}, gamma {r.fit.gamma:g}; "
                + _gamma_law_text(r, grid))
        if not unseen and not claim_gate:
            claim_gate = (f"only training seed(s) {', '.join(str(x.seed) for x in seen)} were run, whose ratio was seen when "
                          "the level was set (ntk_seeds runs more)")
        out[key] = Measurement(
            [ntk_ratio(x) for x in unseen], cannot_test=claim_gate, note=note,
            reduction_check="" if red else (
                f"no reduction: the {model} NTK runs are at the paper's {setup.ntk_n:,} images, {setup.ntk_epochs} epochs, "
                f"cosine annealing from {setup.ntk_lr:g} and batch {setup.ntk_batch}; the setting's other deviations "
                "(data, momentum, output-traced kernel, zero cut-off) are conventions the paper does not state"),
            runs_text=f"{len(unseen)} training seed(s) ({', '.join(str(x.seed) for x in unseen)}) unseen when the level was set",
            setting=(setting + f"; the level was set after the ratio of training seed(s) "
                     f"{', '.join(map(str, sorted(NTK_SEEN_SEEDS)))} had been seen, so the claim reads the other seeds"))
        boot = (f"first training seed {r.seed}; {r.nulls[0].size if r.nulls else 0} seeded i.i.d. parametric-bootstrap "
                "replicates of the KS null (drawn from the fitted law at the same n, refitted at the same gamma)")
        for i, rtol in enumerate(r.rtols or (math.nan,)):
            k = f"{key}-boot" if i == 0 else f"{key}-rtol{rtol:.0e}"  # a key holds no "."
            if k not in TABLE:
                continue
            t = _ntk_test(r, i, "htmp")
            corner = _corner(t["fit"], grid)
            why = gate or (f"the KS {t['ks']:.3g} lies below all {t['null'].size} null draws (p = 1): the i.i.d. null is too "
                           "wide for this spectrum (NTK table)" if t["k"] == t["null"].size else
                           f"the fit sits at the corner of its search ({corner}), and the null does not redo the gamma "
                           "selection (NTK table)" if corner else "")
            out[k] = Measurement([t["p"]], cannot_test=why, runs_text=boot,
                                 note=f"{_ntk_words(t)} (exact 95 % interval of p); {t['fit'].n_zero} eigenvalues zero",
                                 setting=setting + ("" if i == 0 else f"; zero cut-off rtol {rtol:g} instead of {r.rtols[0]:g}"))
        mp, edge = _ntk_test(r, 0, "mp"), _grid_edge("inverse MP gamma", r.fit.mp_gamma, grid)
        out[f"{key}-mp"] = Measurement([mp["p"]], cannot_test=gate, runs_text=boot,
                                       note=_ntk_words(mp) + (f"; {edge}, so a law beyond the grid is not tried" if edge else ""),
                                       setting=setting + "; inverse MP instead of HTMP")
        for k in keys:
            out.setdefault(k, Measurement.not_run(f"the cut-off of {k} is not in this run's ntk_rtols"))
    return out

def measure(batch: BatchResult, *, q_err: float, check_kappas, sup_cdf, mp_kappas, n_match: int,
            phase_setting: str = "", phase_table: pd.DataFrame | None = None) -> dict[str, Measurement]:
    """One :class:`htlib.claims.Measurement` per :data:`TABLE` row, from the cached results and notebook tables."""
    sup_cdf = [float(v) for v in sup_cdf]
    rises = sum(1 for a, b in zip(sup_cdf, sup_cdf[1:]) if not b < a)
    curve = f"{', '.join(f'{x:.3g}' for x in sup_cdf)} at kappa {', '.join(f'{k:g}' for k in mp_kappas)}"
    setup, sel = batch.setup, batch.of("lenet", "variance")  # LeNet at batch 100, initialization read literally
    if not sel or setup.init_batch != 100:
        init = Measurement.not_run("the initialization comparison runs at init_batch; the table reads batch 100")
    else:
        acc = min(f.train_acc for f in sel)
        dp = _delta(PAPER_KAPPA[("lenet", 100)], PAPER_GAMMA["lenet"])
        init = Measurement([dp / f.delta for f in sel], runs_text=f"{len(sel)} seed(s)", cannot_test="" if acc >= TRAINED_ACC
                           else f"train accuracy {acc:.2f} < {TRAINED_ACC:g}, test accuracy {np.mean([f.test_acc for f in sel]):.2f}: "
                           f"with weights fan_in^(1/4) times larger the net does not train at lr {setup.lr:g} (initialization section)",
                           note=f"delta per seed {', '.join(_fmt(f.delta) for f in sel)}",
                           setting=setup.setting("lenet") + "; initialization: variance sqrt(1/fan_in) read literally")
    out = {"moments": Measurement([q_err], runs_text=f"deterministic quadrature at kappa = "
                                                     f"{', '.join(f'{k:g}' for k in check_kappas)}"),
           "mp-limit": Measurement(parts={"mp-limit-last": Measurement([sup_cdf[-1]], note=curve),
                                          "mp-limit-falls": Measurement([rises])}, runs_text="closed-form CDFs on a grid"),
           "phases": Measurement([n_match], runs_text="one seed", setting=phase_setting or "the model's spectra, one seed",
                                 note=_phase_note(phase_table)),
           "lenet-100-init": init}
    for model in ("minialexnet", "lenet"):
        if model in batch.summary.index.get_level_values(0):
            out.update(_kappa_measurements(batch, model))
            out.update(_falls_measurements(batch, model))
    for k, s in TABLE.items():
        if k.startswith(("minialexnet", "lenet")) and k not in out:
            out[k] = Measurement.not_run(f"{k.split('-')[0]} was not run")
    out.update(measure_ntk(batch))
    return out

def claims(batch: BatchResult, **tables) -> list[Claim]:
    """Every record of the chapter (claims, checks and variants): :data:`TABLE` judged on :func:`measure`."""
    return judge_table(TABLE, measure(batch, **tables))

def _phase_note(table: pd.DataFrame | None) -> str:
    """Which generated phases ``classify_phase`` labels otherwise, and as what."""
    if table is None or table["as intended"].all():
        return ""
    return ("; ".join(f"the {row.intended} spectrum (kappa {_fmt(row.kappa)}, spikes {row.spikes}) is labelled "
                      f"'{row.label}'" for row in table[~table["as intended"]].itertuples())
            + ": classify_phase's rules, not the model, place it there (phase table)")
