"""The HTMP chapter (paper 001): the batch-size experiment of Fig. 5 on real images, the 5+1
phases generated from the model, and the chapter's tables, claim records and figures.

Owns: :class:`BatchSizeExperiment` (the grid architectures x batch sizes x repeats),
:func:`resolve_experiment` (the ``"book"`` and ``"paper"`` presets), :func:`run_experiment`
(trains and fits every run through the result cache), :class:`RunFit`, :func:`fit_runs`,
:func:`kappa_summary`, the paper's kappa values (:data:`PAPER_KAPPA`), the claim records of the
batch-size section (:func:`batch_claims`), the Fig. 5 panels (:func:`fig5_panels`), the phase
model (:data:`PHASE_MODEL`, :func:`phase_spectra`) and the chapter's small tables.

The numerics beneath: ``htlib.small_nets`` (one SGD run), ``htlib.htmp`` (the density and the KS
fit), ``htlib.spectra`` (ESD, MP, phase labels).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from htlib import htmp, plotting, spectra
from htlib._checks import check_choice, check_int
from htlib.claims import Claim
from htlib.small_nets import DATASETS, MODELS, SmallNetConfig, SmallNetResult, train_small_net
from htlib.sweep import run_sweep

__all__ = [
    "PAPER_KAPPA",
    "BatchSizeExperiment",
    "PRESETS",
    "resolve_experiment",
    "RunFit",
    "fit_run",
    "fit_runs",
    "train_and_fit",
    "run_experiment",
    "kappa_summary",
    "kappa_spread",
    "batch_claims",
    "fig5_panels",
    "moments_table",
    "mp_convergence_table",
    "sampler_table",
    "PHASE_MODEL",
    "phase_spectra",
    "trajectory_table",
]

PAPER_KAPPA: dict[tuple[str, int], float] = {
    ("minialexnet", 1000): math.inf, ("minialexnet", 800): math.inf, ("minialexnet", 250): 5.5,
    ("minialexnet", 100): 2.3, ("lenet", 250): 1.1, ("lenet", 100): 0.9,
}
"""Paper 001, Fig. 5 (MiniAlexNet on CIFAR-10) and its text (LeNet): the fitted kappa per batch size."""


@dataclass(frozen=True)
class BatchSizeExperiment:
    """The batch-size grid of paper 001, Fig. 5: every model x batch size x repeat.

    Repeat ``r`` uses seed ``seed + r`` (split, initialization and batch order).  The remaining
    fields are those of :class:`htlib.small_nets.SmallNetConfig`.
    """

    models: tuple[str, ...] = ("lenet",)
    dataset: str = "mnist5k"
    batch_sizes: tuple[int, ...] = (1000, 800, 250, 100)
    repeats: int = 3
    epochs: int = 200
    lr: float = 0.01
    momentum: float = 0.9
    n_train: int | None = None
    n_test: int | None = None
    init: str = "std"
    data_dir: str | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.models, tuple) or not self.models:
            raise ValueError(f"models must be a non-empty tuple of {MODELS}, got {self.models!r}")
        for m in self.models:
            check_choice("models", m, MODELS)
        check_choice("dataset", self.dataset, DATASETS)
        if not self.batch_sizes:
            raise ValueError("batch_sizes must not be empty")
        for b in self.batch_sizes:
            check_int("batch_sizes", b, 1)
        check_int("repeats", self.repeats, 1)
        self.configs()  # every run's config validates itself

    def configs(self) -> list[SmallNetConfig]:
        """One :class:`SmallNetConfig` per (model, batch size, repeat), in that nesting order."""
        return [SmallNetConfig(model=m, dataset=self.dataset, batch_size=int(b), epochs=self.epochs, lr=self.lr,
                               momentum=self.momentum, n_train=self.n_train, n_test=self.n_test, init=self.init,
                               data_dir=self.data_dir or None, seed=self.seed + r)
                for m in self.models for b in self.batch_sizes for r in range(self.repeats)]


PRESETS: dict[str, BatchSizeExperiment | None] = {
    "paper": BatchSizeExperiment(models=("minialexnet",), dataset="cifar10", batch_sizes=(1000, 800, 250, 100),
                                 repeats=3, epochs=200, lr=0.01, momentum=0.9, n_train=None, init="std",
                                 data_dir="<cifar-10-batches-py>"),
    "book": None,  # built from the chapter's own parameters
}
"""``"paper"``: the setting of paper 001, Fig. 5 (needs ``data_dir``); ``"book"``: the chapter's parameters."""


def resolve_experiment(preset: str, *, data_dir: str = "", **book) -> BatchSizeExperiment:
    """The experiment of ``preset``.

    ``"paper"`` returns the paper's setting (MiniAlexNet, CIFAR-10 from ``data_dir``, all
    images, batch sizes 1000/800/250/100, 200 epochs, three repeats, SGD lr 0.01 momentum 0.9)
    and ignores ``book``; ``"book"`` builds ``BatchSizeExperiment(**book)``.
    """
    check_choice("preset", preset, tuple(PRESETS))
    if preset == "paper":
        if not data_dir:
            raise ValueError("preset='paper' needs data_dir, a local CIFAR-10 folder (cifar-10-batches-py); nothing is downloaded")
        return replace(PRESETS["paper"], data_dir=data_dir)
    return BatchSizeExperiment(**book)


@dataclass(frozen=True)
class RunFit:
    """One trained run and the HTMP fit of its FC1 ESD (``kappa = inf``: MP fitted at least as well).

    ``scale``/``ks``: HTMP's KS-fitted scale and distance; ``mp_scale``/``mp_ks``: the same for MP
    (scale fitted by KS, :func:`htlib.htmp.fit_scale_ks`).
    """

    model: str
    batch_size: int
    seed: int
    train_acc: float
    test_acc: float
    gamma: float
    eigs: np.ndarray
    kappa: float
    scale: float
    ks: float
    mp_scale: float
    mp_ks: float


def fit_run(r: SmallNetResult) -> RunFit:
    """Fit HTMP (``htlib.htmp.fit_htmp``: KS over kappa and scale, against MP) to the eigenvalues
    of ``W Wᵀ`` (the smaller Gram side) of one run's first FC layer."""
    lam = spectra.esd(r.weights)
    f = htmp.fit_htmp(lam, r.gamma)
    return RunFit(r.config.model, r.config.batch_size, r.config.seed, r.train_acc, r.test_acc, r.gamma, lam,
                  f.kappa, f.scale, f.ks, f.mp_scale, f.mp_ks)


def fit_runs(results: list[SmallNetResult]) -> list[RunFit]:
    """:func:`fit_run` of every result."""
    return [fit_run(r) for r in results]


def train_and_fit(config: SmallNetConfig) -> RunFit:
    """One SGD run and its HTMP fit: a module-level function of one frozen config, cached by the sweep."""
    return fit_run(train_small_net(config))


def run_experiment(exp: BatchSizeExperiment) -> list[RunFit]:
    """Every run of ``exp``, trained and fitted (through the result cache), in ``exp.configs()`` order."""
    return run_sweep(train_and_fit, exp.configs(), progress=False)


def kappa_summary(fits: list[RunFit]) -> pd.DataFrame:
    """Per (model, batch size): median, min and max of the fitted kappa over repeats, the paper's
    kappa (:data:`PAPER_KAPPA`, NaN where it gives none), mean accuracies and KS distances.

    The median is used because ``kappa = inf`` (MP) is a possible outcome of a repeat.
    """
    df = pd.DataFrame([dict(model=f.model, batch=f.batch_size, kappa=f.kappa, train_acc=f.train_acc,
                            test_acc=f.test_acc, ks=f.ks, mp_ks=f.mp_ks) for f in fits])
    g = df.groupby(["model", "batch"], sort=False)
    out = pd.DataFrame({"kappa median": g.kappa.median(), "kappa min": g.kappa.min(), "kappa max": g.kappa.max(),
                        "paper kappa": np.nan, "repeats": g.kappa.size(), "train acc": g.train_acc.mean(),
                        "test acc": g.test_acc.mean(), "KS HTMP": g.ks.mean(), "KS MP": g.mp_ks.mean()})
    out["paper kappa"] = [PAPER_KAPPA.get(i, np.nan) for i in out.index]
    return out


def kappa_spread(summary: pd.DataFrame, model: str, batches=None) -> str:
    """``"batch 250: 5.5 [3.1, 7.0]; ..."``: the seed-median kappa and its range over repeats."""
    rows = summary.loc[model]
    batches = list(rows.index) if batches is None else [b for b in batches if b in rows.index]
    return "; ".join(f"batch {b}: {rows.loc[b, 'kappa median']:.3g} [{rows.loc[b, 'kappa min']:.3g}, "
                     f"{rows.loc[b, 'kappa max']:.3g}]" for b in batches)


def _within_factor(measured: float, paper: float, factor: float = 2.0) -> bool:
    if math.isinf(paper) or math.isinf(measured):
        return math.isinf(paper) and math.isinf(measured)
    return paper / factor <= measured <= paper * factor


def _falls(med: np.ndarray) -> str:
    """``"falls"`` (non-increasing along the batches and lower at the last), ``"stays at MP"`` (all
    ``inf``) or ``"does not fall"``."""
    if np.all(np.isinf(med)):
        return "stays at MP"
    finite = np.where(np.isinf(med), 1e9, med)
    return "falls" if bool(np.all(np.diff(finite) <= 0) and finite[-1] < finite[0]) else "does not fall"


def batch_claims(summary: pd.DataFrame, setting: dict[str, str]) -> list[Claim]:
    """The claim records of the batch-size section: the paper's kappa per batch size for
    MiniAlexNet and LeNet, and "smaller batches, heavier tails" for each architecture run.

    ``setting`` maps each architecture run to a short description of its run (data, images,
    epochs), used as the reason when the setting differs from the paper's.  Criterion, fixed in
    advance: the seed-median kappa within a factor 2 of the paper's at every batch size the paper
    reports (``inf`` must be met by ``inf``).
    """
    out = []
    for model, where, words in (("minialexnet", "Fig. 5", "MiniAlexNet (CIFAR-10): kappa = inf, inf, 5.5, 2.3 at batch sizes 1000, 800, 250, 100"),
                                ("lenet", "Fig. 5 (text)", "LeNet: kappa = 1.1 at batch 250 and 0.9 at batch 100")):
        batches = [b for (m, b) in PAPER_KAPPA if m == model]
        ran = model in summary.index.get_level_values(0) and all((model, b) in summary.index for b in batches)
        if not ran:
            out.append(Claim("001", where, words, "seed-median kappa within a factor 2 of the paper's at each batch size",
                             "", "not tested", reason=f"{model} not in this run", section="htmp-batch"))
            continue
        ok = all(_within_factor(summary.loc[(model, b), "kappa median"], PAPER_KAPPA[(model, b)]) for b in batches)
        out.append(Claim("001", where, words,
                         f"seed-median kappa within a factor 2 of the paper's at each batch size ({model}, MNIST-5k)",
                         kappa_spread(summary, model, batches), "agrees" if ok else "disagrees",
                         reason=setting[model], section="htmp-batch"))
    for model in dict.fromkeys(summary.index.get_level_values(0)):
        med = summary.loc[model, "kappa median"].to_numpy()
        falls = _falls(med) == "falls"
        out.append(Claim("001", "Fig. 5", f"smaller batches give heavier tails ({model}): kappa falls as the batch size falls",
                         f"seed-median kappa of {model} non-increasing from the largest to the smallest batch, "
                         "and lower at the smallest than at the largest",
                         ", ".join(f"{v:.3g}" for v in med), "agrees" if falls else "disagrees",
                         reason=setting[model], section="htmp-batch"))
    return out


def fig5_panels(fits: list[RunFit], model: str, seed: int, *, bins: int = 40) -> plt.Figure:
    """Paper 001's Fig. 5 for one architecture and one repeat: per batch size, the ESD histogram,
    the fitted HTMP density (red dotted, when kappa is finite) and the MP density with its scale
    fitted by KS (black dashed).  Two panels per row."""
    sel = [f for f in fits if f.model == model and f.seed == seed]
    ncols = 2
    nrows = math.ceil(len(sel) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(10, 3.8 * nrows), squeeze=False)
    for i, (ax, f) in enumerate(zip(axes.ravel(), sel)):
        plotting.esd_hist(ax, f.eigs, bins=bins, color_index=i)
        grid = np.linspace(f.eigs.max() * 1e-3, f.eigs.max() * 1.05, 400)
        if math.isfinite(f.kappa):
            ax.plot(grid, htmp.htmp_pdf(grid, f.kappa, f.gamma, scale=f.scale), "r:", lw=2, label=rf"HTMP $\kappa={f.kappa:.3g}$")
        ax.plot(grid, spectra.mp_density(grid, f.gamma, f.mp_scale), "k--", lw=1, label="MP (KS scale)")
        ax.set_title(f"{model}, batch {f.batch_size}: " + (rf"$\kappa={f.kappa:.3g}$" if math.isfinite(f.kappa) else r"$\kappa=\infty$"))
        ax.legend(fontsize=9)
    for ax in axes.ravel()[len(sel):]:
        ax.axis("off")
    return fig


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


PHASE_MODEL: tuple[tuple[str, float, tuple[float, ...]], ...] = (
    ("random-like", math.inf, ()), ("bleeding-out", math.inf, (1.9, 2.0, 2.1)),
    ("bulk+spikes", math.inf, (4.0, 6.0, 9.0)), ("bulk-decay", 5.5, (4.0, 6.0, 9.0)),
    ("heavy-tailed", 0.5, (4.0, 6.0, 9.0)), ("rank-collapse", 0.05, (4.0, 6.0, 9.0)),
)
"""The 5+1 phases from paper 001's model: (intended phase, kappa of the bulk, population spikes)."""


def phase_spectra(n: int, gamma: float, seed: int) -> tuple[list[np.ndarray], pd.DataFrame]:
    """Each phase of :data:`PHASE_MODEL` generated by ``htmp.spiked_htmp_spectrum`` and labelled by
    ``spectra.classify_phase``; the table lists the intended phase next to the label."""
    norm = lambda s: "".join(ch for ch in s.lower() if ch.isalpha())  # noqa: E731
    eigs = [htmp.spiked_htmp_spectrum(n, k, gamma, sp, seed=seed) for _, k, sp in PHASE_MODEL]
    labels = [spectra.classify_phase(lam, gamma) for lam in eigs]
    df = pd.DataFrame([{"intended": want, "kappa": k, "spikes": str(sp), "label": lab, "as intended": norm(lab) == norm(want)}
                       for (want, k, sp), lab in zip(PHASE_MODEL, labels)])
    return eigs, df


def trajectory_table(steps, esds, gamma: float, p: int) -> pd.DataFrame:
    """Per step of a training run: HTMP's fitted kappa and KS, MP's KS, the power-law alpha and the
    phase label, for the ESD divided by ``p`` (so that MP at initialization has scale about 1)."""
    rows = []
    for t, lam in zip(steps, esds):
        lam = np.asarray(lam) / p
        fit = htmp.fit_htmp(lam, gamma)
        rows.append({"step": int(t), "kappa": fit.kappa, "KS": fit.ks, "KS of MP": fit.mp_ks,
                     "alpha (power law)": spectra.fit_power_law(lam).alpha, "phase": spectra.classify_phase(lam, gamma)})
    return pd.DataFrame(rows).set_index("step")


def setting_text(exp: BatchSizeExperiment) -> str:
    """A short description of the data, images and epochs of ``exp`` (for prose and claim reasons)."""
    images = "all" if exp.n_train is None else f"{exp.n_train:,}"
    return f"{exp.dataset}, {images} training images, {exp.epochs} epoch{'s' if exp.epochs != 1 else ''}"


def batch_findings(summary: pd.DataFrame, model: str) -> dict[str, str]:
    """Formatted findings of one architecture, for the prose: the seed-median kappa at the largest
    and the smallest batch, whether it falls as the batch shrinks, the test accuracies there, and
    the largest gap between the mean KS distances of HTMP and MP.  ``"not run"`` everywhere when
    ``model`` is not in ``summary``."""
    keys = ("k_big", "k_small", "falls", "acc_big", "acc_small", "ks_gap")
    if model not in summary.index.get_level_values(0):
        return dict.fromkeys(keys, "not run")
    s = summary.loc[model]
    med = s["kappa median"].to_numpy()
    return dict(k_big=f"{med[0]:.3g}", k_small=f"{med[-1]:.3g}", falls=_falls(med),
                acc_big=f"{s['test acc'].iloc[0]:.3f}", acc_small=f"{s['test acc'].iloc[-1]:.3f}",
                ks_gap=f"{float(np.max(np.abs(s['KS MP'] - s['KS HTMP']))):.3f}")


def tail_panels(kappa: float, gamma: float) -> plt.Figure:
    """Both tails on log-log axes: the lower tail of HTMP with slope ``delta - 1`` and the upper
    tail of the inverse law with slope ``-(1 + delta)`` (the reference lines shifted up)."""
    te = htmp.tail_exponents(kappa, gamma)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
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
        ax.legend()
    return fig


def inverse_tail_fit(kappa: float, gamma: float, n: int, seed: int) -> pd.DataFrame:
    """``spectra.fit_power_law`` on the inverses of a finite-n HTMP sample, next to the asymptotic
    exponent ``1 + delta`` and the exact local log-log slope of the inverse density at ``xmin``,
    ``10 xmin`` and ``1e4 xmin``."""
    pl = spectra.fit_power_law(1.0 / htmp.sample_htmp(n, kappa, gamma, seed=seed))
    slopes = -htmp.inverse_tail_slope(np.array([pl.xmin, 10 * pl.xmin, 1e4 * pl.xmin]), kappa, gamma)
    row = {"n": n, "predicted 1 + delta": htmp.tail_exponents(kappa, gamma).inverse_alpha, "fitted exponent": pl.alpha,
           "+-": pl.sigma, "tail points": pl.n_tail, "KS": pl.ks_distance, "xmin": pl.xmin,
           "slope at xmin": slopes[0], "at 10 xmin": slopes[1], "at 1e4 xmin": slopes[2]}
    return pd.DataFrame([row])
