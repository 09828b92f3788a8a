"""Writes book/linear_hessian.ipynb (cells only; execute with python -m htlib.book refresh)."""

import nbformat as nbf

cells = []


def md(text):
    cells.append(nbf.v4.new_markdown_cell(text.strip("\n")))


def code(text, tags=()):
    c = nbf.v4.new_code_cell(text.strip("\n"))
    if tags:
        c.metadata["tags"] = list(tags)
    cells.append(c)


md(r"""
# Hessian of linear networks

*How the Hessian-Spectrum of Linear Networks Depends on Data* {cite}`linearhessian2026` writes the spectrum of the loss
Hessian of a deep linear network in closed form, for whitened features and for strongly balanced layers, and reads off
how the sharpness (the largest eigenvalue) depends on the features, the labels, the depth and the number of samples.
This chapter checks each formula against exact eigensolvers and against LOBPCG on Hessian–vector products, repeats
Figs. 1–8 on {glue:text}`lh_data` ({glue:text}`lh_n_images` images of {glue:text}`lh_d0` pixels), and judges every
claim about trained networks only on runs that reached the OLS loss of their data. **Setting:** balanced subsets of
{glue:text}`lh_n_bal` images (rank {glue:text}`lh_rank`), class-imbalanced subsets of {glue:text}`lh_n_imb` images,
{glue:text}`lh_epochs` full-batch GD epochs ({glue:text}`lh_tanh_epochs` for the tanh network), {glue:text}`lh_seeds`
subsets and starts per point of Figs. 6–8 ({glue:text}`lh_tanh_seeds` for the tanh network), LOBPCG at
{glue:text}`lh_hessian_at` measurement epochs. The paper uses subsets of $5000$ images of MNIST, FashionMNIST and
CIFAR-10, $10^4$ epochs everywhere and LOBPCG at every epoch it plots; `make paper` runs this chapter at those epochs.
""")

code(r'''
dataset = "mnist5k"                     # data set [in {"mnist5k", "digits", "mnist", "fashion_mnist", "cifar10"}]
data_dir = ""                           # folder of the MNIST/FashionMNIST/CIFAR-10 files ("" for mnist5k, digits)
n = 5000                                # size of the balanced subsets (paper: 5000; 0 = all) [>= 0]
epochs = 10000                          # full-batch GD epochs of the linear runs (paper: 10000) [>= 1]
tanh_epochs = 1000                      # GD epochs of the tanh runs, Fig. 7 right (paper: 10000) [>= 1]
measure_points = 5                      # exact-GGN measurements along training, Figs. 1, 2, 4 [>= 1]
hessian_at = "ends"                     # LOBPCG Hessian measurements in Figs. 1, 2, 4 (paper: "all") [in {"all", "ends"}]
trace_points = 20                       # trace measurements along training, Fig. 3 [>= 2]
top_k = 10                              # eigenvalues tracked in Figs. 1 and 4 [>= 1]
hutchinson_probes = 30                  # Rademacher probes of Hutchinson's trace, Fig. 3 [>= 2]
n_imbalanced = 0                        # subset size of the imbalance sweeps (0 = largest allowed) [>= 0]
majority_shares = [0.1, 0.2, 0.3, 0.4, 0.5]  # share of class 0 in the imbalance sweeps [each >= 0.1, <= 1]
sizes = [500, 1000, 2000, 5000]         # subset sizes of Fig. 8 [each >= 10]
seeds = 3                               # subsets and starts per point of Figs. 6-8 [>= 1]
tanh_seeds = 1                          # seeds of the tanh runs, Fig. 7 right [>= 1]
depths = [1, 2, 3, 4, 6, 8, 12]         # depths of Fig. 6 (middle) [each >= 1]
sigma_xs = [1.0, 3.0, 10.0]             # feature scales of Fig. 6 (middle) [each > 0]
aniso_ts = [0.0, 0.25, 0.5, 0.75, 0.9, 1.0]  # raw-to-whitened interpolation, Fig. 5 [each >= 0, <= 1]
workers = 2                             # worker processes for the training runs [>= 1]
seed = 0                                # base seed [>= 0]
''', tags=["parameters"])

code(r'''
import numpy as np
import matplotlib.pyplot as plt
import pandas as pd
from myst_nb import glue
from htlib import plotting
from htlib.claims import glue_text, publish_claims, robustness_frame
from htlib.experiments import linear_hessian as ch
plotting.use_book_style()
''')

code(r'''
setup = ch.Setup.from_namespace(globals())
for name, value in (("lh_data", setup.data_name), ("lh_n_images", setup.labels.size), ("lh_d0", setup.d0),
                    ("lh_n_bal", setup.n_bal),
                    ("lh_n_imb", setup.n_imb), ("lh_epochs", setup.epochs), ("lh_tanh_epochs", setup.tanh_epochs),
                    ("lh_seeds", setup.seeds), ("lh_tanh_seeds", setup.tanh_seeds),
                    ("lh_hessian_at", "the first and the last" if setup.hessian_at == "ends" else "all")):
    glue_text(name, value, ",d" if isinstance(value, (int, np.integer)) else "s")
''')

md(r"""
The model is $f(X) = X W_1^\top W_2^\top \cdots W_L^\top$ with samples as the rows of $X\in\mathbb{R}^{n\times d_0}$,
labels $Y\in\mathbb{R}^{n\times d_L}$ and the loss $\mathcal{L} = \frac{1}{2n}\|f(X)-Y\|_F^2$ (see {ref}`conv-linear`).
Its Hessian is the generalized Gauss–Newton (GGN) matrix $\frac1n J^\top J$ plus a term proportional to the residual,
so at a zero-loss point the two coincide. The GGN shares its nonzero eigenvalues with the NTK $\frac1n JJ^\top$, and
with $A_\ell = W_L\cdots W_{\ell+1}$, $B_\ell = W_{\ell-1}\cdots W_1$ and $C = X^\top X/n$ they are the eigenvalues of
the $d_0 d_L\times d_0 d_L$ matrix

$$
M = \sum_{\ell=1}^{L} T_\ell,\qquad T_\ell = \big(C^{1/2} B_\ell^\top B_\ell C^{1/2}\big)\otimes\big(A_\ell A_\ell^\top\big),
$$

which `htlib.linear.ggn_spectrum` diagonalizes exactly (densely, or by Lanczos iteration on a product that never forms
$M$). The paper's closed forms follow from $M$ when $C = \sigma_x^2 I$:

* **Two layers:** eigenvalues $\sigma_x^2\big(s_i(W_1)^2+s_j(W_2)^2\big)$ over all pairs, so
  $\lambda_{\max} = \|W_1\|_2^2+\|W_2\|_2^2$; a block-diagonal Hessian would give $\max(\|W_1\|_2^2,\|W_2\|_2^2)$.
* **Trace** (any data): $\operatorname{Tr} = \frac1n\sum_\ell \|X B_\ell^\top\|_F^2\,\|A_\ell\|_F^2$.
* **Strongly balanced** layers $W_\ell = Q_\ell S Q_{\ell-1}^\top$: $\lambda_{ij} = \sigma_x^2\sum_{\ell}
  s_i^{2(\ell-1)}s_j^{2(L-\ell)}$, and $\sigma_x^2 s_i^{2(L-1)}$ with multiplicity $(d_0-r)+(d_L-r)$.
* **Balanced interpolating minimizer:** $\lambda_{\max} = \frac{L}{n}\|X\|_2^{2/L}\|Y\|_2^{2(L-1)/L}$, for one-hot labels
  $L\,\sigma_x^{2/L}m^{1-1/L}$ with $m$ the largest class proportion (the *majority share*; the paper's
  $\alpha_{\max}$).

The test suite checks every one of these against full autograd Hessians of tiny float64 networks.

**What whitening does to the closed forms.** The paper whitens the features to their polar factor,
$X = \sqrt n\,\sigma_x U V^\top$, and assumes $\Sigma = \sqrt n\, I_{d_0}$, that is $C = \sigma_x^2 I$ with rank
$r = d_0$. Images are rank-deficient: a {glue:text}`lh_n_bal`-image subset of {glue:text}`lh_data` has rank
{glue:text}`lh_rank` of {glue:text}`lh_d0`, because some pixels are blank in every image. Whitening that keeps only the
$r$ directions the data has ($U_r, V_r$: singular values above $\max(n,d_0)\,\epsilon\,s_{\max}$) gives
$C = \sigma_x^2 P$, the projection on the row space of $X$, not the identity. Every closed form then holds with $P$
in place of $I$: $s_i(W_1 P)^2 + s_j(W_2)^2$ for two layers, and the singular values of $WP$ for balanced layers. The
part of $W_1$ outside the row space (its weight on the blank pixels) never receives a gradient and never enters the
Hessian, but it does enter $\|W_1\|_2$. So the key panels (Figs. 1, 2 and 4) run twice: on the same features written in
an orthonormal basis of their row space, $n\times r$ with $C = \sigma_x^2 I_r$, where the paper's assumption holds with
$d_0 = r$ (*row-space whitening*, the runs the claims are judged on), and on the {glue:text}`lh_d0` rank-whitened pixels
(the twin runs, compared with the exact GGN). The literal full polar factor would also give $C = I$, but only by turning
the blank pixels into features with arbitrary values.

Training is the paper's: full-batch GD from $\eta_{\max}$, the learning rate halved whenever the loss improves by less
than 0.1% over 100 epochs. Linear networks train on the sufficient statistics $X^\top X/n$, $X^\top Y/n$ in the
eigenbasis of $X^\top X$ and only on its row space (the same iterates at a fraction of the cost), tanh networks on the
full data. Every trained run is checked against the **OLS loss** of its data, the smallest loss any linear map reaches:
a run has *converged* when its final loss exceeds the OLS loss by at most {glue:text}`lh_conv_tol` of the zero map's loss,
and its learning rate has *collapsed* when the halving rule has brought it below {glue:text}`lh_collapse` of
$\eta_{\max}$.
""")

code(r'''
glue_text("lh_conv_tol", ch.CONVERGED_EXCESS, ".1g")
glue_text("lh_collapse", ch.COLLAPSED_LR, ".2g")
glue_text("lh_dip_frac", ch.DIP_FRAC, ".0%");
''')

# ------------------------------------------------------------------ Figs. 1 and 2
md(r"""
(linear-fig12)=
## Figures 1 and 2: two layers, the closed form and the sum of squared norms

The paper trains a two-layer linear MLP of width 256 from PyTorch's default (Kaiming-uniform) initialization on whitened
features ($\sigma_x=1$, $\eta_{\max}=10^{-3}$) and compares the top-{glue:text}`lh_top_k` Hessian eigenvalues (LOBPCG)
with the closed form $s_i(W_1)^2+s_j(W_2)^2$ (Fig. 1), and the sharpness with $\|W_1\|_2^2+\|W_2\|_2^2$ and with the
block-diagonal $\max(\|W_1\|_2^2,\|W_2\|_2^2)$ (Fig. 2). We compute the exact GGN and the closed forms at every
measurement epoch and LOBPCG at {glue:text}`lh_hessian_at` (each LOBPCG run on the {glue:text}`lh_n_params12` parameters
costs about as much as the training).
""")

code(r'''
fig12 = ch.run_fig12(setup)
e12, e12r = fig12.end("rowspace"), fig12.end("rank")
''')

code(r'''
# long cell: one-off figure code (two panels)
fig, ax = plt.subplots(1, 2, figsize=(8, 3.3))
r, rr = fig12.runs["rowspace"], fig12.runs["rank"]
for i in range(setup.top_k):
    ax[0].plot(r["epochs"], r["numeric"][:, i], "o", ms=6, color=plotting.color(0), label="LOBPCG" if i == 0 else None)
    ax[0].plot(r["epochs"], r["closed_I"][:, i], "-", lw=1, color=plotting.color(1), label="closed form" if i == 0 else None)
    ax[0].plot(r["epochs"], r["ggn"][:, i], "x", ms=4, color=plotting.color(2), label="exact GGN" if i == 0 else None)
ax[0].set(xlabel="epoch", ylabel="eigenvalue", title="(a) top eigenvalues, row space")
for run, mk, name in ((r, "o", "row space"), (rr, "s", "rank-whitened")):
    ax[1].plot(run["epochs"], run["ggn"][:, 0], mk, color=plotting.color(0), label=rf"$\lambda_{{\max}}$, {name}")
    ax[1].plot(run["epochs"], run["spec_norms2"].sum(1), "-" if mk == "o" else "--", color=plotting.color(1),
               label=rf"$\|W_1\|^2+\|W_2\|^2$, {name}")
ax[1].plot(rr["epochs"], rr["spec_norm2_P"] + rr["spec_norms2"][:, 1], ":", color=plotting.color(4),
           label=r"$\|W_1P\|^2+\|W_2\|^2$, rank-whitened")
ax[1].plot(r["epochs"], r["spec_norms2"].max(1), "-.", color=plotting.color(2), label=r"$\max(\|W_1\|^2,\|W_2\|^2)$")
ax[1].set(xlabel="epoch", ylabel="top eigenvalue", title="(b) sharpness")
fig.legend(*ax[0].get_legend_handles_labels(), loc="outside lower left", ncols=3, fontsize=9)
ax[1].legend(fontsize=9, loc="center left", bbox_to_anchor=(1.02, 0.5))
glue("fig-lh-12", fig, display=False)
plt.close(fig)
''', tags=["remove-input"])

md(r"""
```{glue:figure} fig-lh-12
:name: fig-lh-12
:alt: Left, the top eigenvalues of the two-layer network along training: LOBPCG points at the first and last epoch on the closed-form lines. Right, the exact sharpness against the sum and the maximum of the squared spectral norms, for row-space and rank-whitened features.

Figs. 1 and 2 of the paper: a two-layer width-256 linear MLP, Kaiming start, $\eta_{\max}=10^{-3}$,
{glue:text}`lh_epochs` epochs on {glue:text}`lh_n_bal` images. (a) Row-space features ($C=I$): the top-{glue:text}`lh_top_k`
Hessian eigenvalues (LOBPCG), the closed form $s_i(W_1)^2+s_j(W_2)^2$ and the exact GGN. (b) The exact $\lambda_{\max}$
against $\|W_1\|_2^2+\|W_2\|_2^2$ and $\max(\|W_1\|_2^2,\|W_2\|_2^2)$, for row-space and for rank-whitened features,
where only $\|W_1P\|_2^2+\|W_2\|_2^2$ matches.
```
""")

code(r'''
glue_text("lh_top_k", setup.top_k, "d")
glue_text("lh_rank", int(fig12.runs["rank"]["rank"]), ",d")
glue_text("lh_n_params12", 256 * (int(fig12.runs["rowspace"]["rank"]) + 10), ",d")
for key, fmt in (("gap0", ".2g"), ("gap", ".2g"), ("gap_ggn", ".1g"), ("lam", ".4g"), ("sum", ".4g"), ("max", ".4g"),
                 ("loss", ".3g"), ("ols", ".3g")):
    glue_text(f"lh12_{key}", e12[key], fmt)
glue_text("lh12_which", "the sum" if abs(e12["lam"] - e12["sum"]) < abs(e12["lam"] - e12["max"]) else "the maximum", "s")
for key, fmt in (("gap0", ".2g"), ("gap", ".2g"), ("gap_P", ".1g"), ("lam", ".4g"), ("sum", ".4g"), ("sum_P", ".4g"),
                 ("blank", ".1%"), ("loss", ".3g")):
    glue_text(f"lh12r_{key}", e12r[key], fmt)
ch.convergence_table(list(fig12.runs.values()), list(fig12.runs), ["features"]).round(4)
''')

md(r"""
On row-space features, where the paper's assumption $C = I$ holds, the largest relative gap between the closed form and
the LOBPCG top-{glue:text}`lh_top_k` falls from {glue:text}`lh12_gap0` at the Kaiming start to {glue:text}`lh12_gap` at
the end, and LOBPCG finds $\lambda_{\max}=$ {glue:text}`lh12_lam` against $\|W_1\|_2^2+\|W_2\|_2^2=$ {glue:text}`lh12_sum`
and $\max(\|W_1\|_2^2,\|W_2\|_2^2)=$ {glue:text}`lh12_max`: {glue:text}`lh12_which` is the right formula. The remaining gap is the
Hessian's residual term: the exact GGN differs from LOBPCG by {glue:text}`lh12_gap_ggn` at the end, where the loss is
{glue:text}`lh12_loss` against the OLS loss {glue:text}`lh12_ols` (the table above), so the residual term is small
but not zero.

On the rank-whitened pixels the same network tells a different story, and the residual has nothing to do with it. The
closed form with $C=I$ is off by {glue:text}`lh12r_gap` at the end (it was {glue:text}`lh12r_gap0` at the start), and
$\|W_1\|_2^2+\|W_2\|_2^2=$ {glue:text}`lh12r_sum` overshoots the exact $\lambda_{\max}=$ {glue:text}`lh12r_lam`. The gap
is $W_1$'s weight on the directions the images do not span: {glue:text}`lh12r_blank` of $\|W_1\|_F^2$ sits there from
the start and is never trained. With $C=P$ the closed form is exact to {glue:text}`lh12r_gap_P`, and
$\|W_1P\|_2^2+\|W_2\|_2^2=$ {glue:text}`lh12r_sum_P` is the sharpness.
""")

code(r'''
pd.concat({w: fig12.table(w) for w in fig12.runs}, names=["features"]).map(lambda v: f"{v:.4g}")
''')

# ------------------------------------------------------------------ Fig. 3
md(r"""
(linear-fig3)=
## Figure 3: the trace follows the squared parameter norm

For whitened data the trace is $d_2\|W_1\|_F^2+d_0\|W_2\|_F^2$ for two layers, and a weighted sum of products of
Frobenius norms in general. The paper uses this to explain progressive flattening and later sharpening: the trace should
move with the squared parameter norm. We train a two-layer width-256 and a four-layer width-$64$ network
($\eta_{\max}=5\times10^{-4}$, Kaiming start, rank-whitened pixels: the trace formula holds for any $C$) and measure, at
{glue:text}`lh_trace_points` log-spaced epochs, the exact GGN trace, Hutchinson's estimate of the Hessian trace, and the
squared Frobenius norm of every layer. Two monotone curves correlate trivially, so the test is stricter: we correlate the
*changes* of the trace and of the squared norm between consecutive measurements, and we ask whether each curve falls and
then rises, where both the fall and the rise must exceed {glue:text}`lh_dip_frac` of the curve's own range (a test
relative to the series' own variation, so a shallow dip counts as much as a deep one).
""")

code(r'''
fig3 = ch.run_fig3(setup)
st3, norms3 = fig3.stats, fig3.norms_table()
''')

code(r'''
# long cell: one-off figure code (a panel per run, the layers' norms relative to their start)
fig, axes = plt.subplots(1, 2, figsize=(8, 3.3), sharey=True)
for ax, r, name in zip(axes, fig3.runs, fig3.names):
    ep = np.maximum(r["epochs"], 1)
    ax.plot(ep, r["ggn_trace"] / r["ggn_trace"][0], "-", lw=2, color=plotting.color(0), label="exact trace")
    ax.errorbar(ep, r["hutch"] / r["ggn_trace"][0], yerr=r["hutch_se"] / r["ggn_trace"][0], fmt="o", ms=3,
                color=plotting.color(0), label="Hutchinson")
    ax.plot(ep, r["sq_norm"] / r["sq_norm"][0], "--", lw=2, color=plotting.color(1), label="squared norm")
    for l in range(r["layer_sq_norms"].shape[1]):
        ax.plot(ep, r["layer_sq_norms"][:, l] / r["layer_sq_norms"][0, l], ":", color=plotting.color(2 + l),
                label=rf"$\|W_{l + 1}\|_F^2$")
    ax.set(xscale="log", xlabel="epoch (0 drawn at 1)", title=name)
    ax.legend(fontsize=9, loc="upper left")
axes[0].set_ylabel("relative to the start")
glue("fig-lh-3", fig, display=False)
plt.close(fig)
''', tags=["remove-input"])

md(r"""
```{glue:figure} fig-lh-3
:name: fig-lh-3
:alt: Two panels, one per network: the exact trace, Hutchinson's estimate, the squared parameter norm and each layer's squared norm, all divided by their values at the start, against the epoch on a log axis.

Fig. 3 of the paper: the exact GGN trace, Hutchinson's estimate of the Hessian trace ({glue:text}`lh_probes` probes) and
the squared parameter norm, with each layer's squared Frobenius norm, all relative to their value at the start; Kaiming
start, $\eta_{\max}=5\times10^{-4}$, {glue:text}`lh_epochs` epochs on {glue:text}`lh_n_bal` rank-whitened images.
```
""")

code(r'''
glue_text("lh_trace_points", setup.trace_points, "d")
glue_text("lh_probes", setup.hutchinson_probes, "d")
def dips(s):  # what the two curves of one run do, in words
    both = {(True, True): "both the trace and the norm fall and then rise", (True, False): "the trace falls and then "
            "rises but the norm does not", (False, True): "the norm falls and then rises but the trace does not"}
    return both.get((s["dip_trace"], s["dip_norm"]), "neither the trace nor the norm falls and then rises")
for s, k, name in zip(st3, ("2", "4"), fig3.names):
    row = norms3.loc[(name, "total")]
    for key, value in (("corr", f"{s['corr_diff']:.3f}"), ("rise", f"{s['rise_norm']:.2%}"), ("hz", f"{s['hutch_z']:.2g}"),
                       ("dips", dips(s)), ("norm", " → ".join(f"{row[c]:.2f}" for c in ("start", "at the trace minimum", "end")))):
        glue_text(f"lh3_{key}_{k}", value, "s")
''')

code(r'''
w = {k: norms3.loc[(n, layer)] for k, n, layer in (("w1", fig3.names[0], "W1"), ("w2", fig3.names[0], "W2"),
                                                      ("tr", fig3.names[0], "trace"))}
for k, row in w.items():
    glue_text(f"lh3_drop_{k}", 1 - row["at the trace minimum"] / row["start"], ".1%")
same = all((norms3.loc[n]["epoch of its minimum"] == norms3.loc[(n, "trace")]["epoch of its minimum"]).all()
           for n in fig3.names)
glue_text("lh3_same", "every layer reaches its minimum at the same epoch as the trace, so the layers shrink and grow "
          "together and no norm moves from one layer to another" if same else "the layers do not all reach their "
          "minimum at the trace's epoch", "s")
fig3.stats_table().round(4)
''')

md(r"""
The changes of the trace and of the squared norm correlate with coefficients {glue:text}`lh3_corr_2` (two layers) and
{glue:text}`lh3_corr_4` (four layers). The total squared norm goes {glue:text}`lh3_norm_2` in the two-layer run and
{glue:text}`lh3_norm_4` in the four-layer run (at the start, at the trace's minimum, at the end), a rise of
{glue:text}`lh3_rise_2` and {glue:text}`lh3_rise_4` after its minimum: small in absolute terms, but measured against the
series' own range. In the two-layer run {glue:text}`lh3_dips_2`; in the four-layer run {glue:text}`lh3_dips_4`. The
per-layer norms (table below) show how: {glue:text}`lh3_same`. The trace moves much more
than the total norm because it weights the layers differently: for two layers it is $r\,\|W_2\|_F^2 + d_2\|W_1P\|_F^2$,
dominated by the output layer, whose squared norm drops by {glue:text}`lh3_drop_w2` to the trace's minimum, while the
total is dominated by $\|W_1\|_F^2$, which drops by {glue:text}`lh3_drop_w1`; the trace drops by
{glue:text}`lh3_drop_tr`.

Hutchinson's estimate of the *Hessian* trace agrees with the exact *GGN* trace (within {glue:text}`lh3_hz_2` and
{glue:text}`lh3_hz_4` standard errors at worst) even before the loss is small. That is no accident: a linear network is
linear in each $W_\ell$ separately, so the residual term $\frac1n\sum_k r_k\nabla^2 f_k$ has zero diagonal blocks and
contributes nothing to the trace. For linear networks $\operatorname{Tr}H = \operatorname{Tr}\,\mathrm{GGN}$ at every
point.
""")

code(r'''
norms3.round(3)
''')

# ------------------------------------------------------------------ Fig. 4
md(r"""
(linear-fig4)=
## Figure 4: four layers and the balanced closed form

Fig. 4 of the paper compares the top-{glue:text}`lh_top_k` Hessian eigenvalues of a four-layer width-$64$ network
($\eta_{\max}=10^{-2}$) with the closed form for strongly balanced layers,
$\lambda_{ij}=\sum_\ell s_i^{2(\ell-1)}s_j^{2(L-\ell)}$. The network starts from balanced weights whose shared singular
values are drawn from $\mathcal U[0,1]$, and gradient flow keeps balanced layers balanced. A trained network is balanced
only approximately, so the closed form needs a choice of the $s_i$: we use the balanced network with the same end-to-end
map, $s_i = \sigma_i(W)^{1/L}$ with $W=W_L\cdots W_1$. Balance is measured by
$\max_\ell \|W_{\ell+1}^\top W_{\ell+1}-W_\ell W_\ell^\top\|_F / \max(\|W_{\ell+1}^\top W_{\ell+1}\|_F, \|W_\ell
W_\ell^\top\|_F)$, which is $0$ for balanced layers. We run the row-space features (the claim), the rank-whitened pixels
(the twin, against the exact GGN), the same network from PyTorch's default start (an observation of the book's, below),
and the rank-whitened balanced run once more with the learning rate held at $\eta_{\max}$, to see what stalls it.
""")

code(r'''
fig4 = ch.run_fig4(setup)
b4, b4r, k4 = fig4.end("balanced", "rowspace"), fig4.end("balanced", "rank"), fig4.end("kaiming", "rowspace")
held4 = ch.convergence(fig4.runs[("balanced", "rank", "held")])
''')

code(r'''
# long cell: one-off figure code (two panels)
fig, ax = plt.subplots(1, 2, figsize=(8, 3.3))
r = fig4.runs[("balanced", "rowspace")]
for i in range(setup.top_k):
    ax[0].plot(r["epochs"], r["numeric"][:, i], "o", ms=6, color=plotting.color(0), label="LOBPCG" if i == 0 else None)
    ax[0].plot(r["epochs"], r["closed_I"][:, i], "-", lw=1, color=plotting.color(1), label="closed form" if i == 0 else None)
    ax[0].plot(r["epochs"], r["ggn"][:, i], "x", ms=4, color=plotting.color(2), label="exact GGN" if i == 0 else None)
ax[0].set(xlabel="epoch", ylabel="eigenvalue", title="(a) balanced start, row space")
ax[0].legend(fontsize=9)
for j, (key, name) in enumerate(((("balanced", "rowspace"), "balanced, row space"), (("balanced", "rank"), "balanced, rank"),
                                 (("balanced", "rank", "held"), r"balanced, rank, $\eta=\eta_{\max}$"),
                                 (("kaiming", "rowspace"), "Kaiming, row space"))):
    ax[1].plot(fig4.runs[key]["loss"] - fig4.runs[key]["ols_loss"], color=plotting.color(j), label=name)
ax[1].set(yscale="log", xlabel="epoch", ylabel="loss minus OLS loss", title="(b) convergence")
ax[1].legend(fontsize=9)
glue("fig-lh-4", fig, display=False)
plt.close(fig)
''', tags=["remove-input"])

md(r"""
```{glue:figure} fig-lh-4
:name: fig-lh-4
:alt: Left, the top eigenvalues of the balanced four-layer network along training, LOBPCG points at the ends on the closed-form lines. Right, each run's loss minus the OLS loss on a log axis: the balanced runs level off far above zero, the Kaiming run reaches it.

Fig. 4 of the paper: a four-layer width-$64$ linear MLP, $\eta_{\max}=10^{-2}$, {glue:text}`lh_epochs` epochs on
{glue:text}`lh_n_bal` images. (a) Balanced start on row-space features: the top-{glue:text}`lh_top_k` Hessian eigenvalues
(LOBPCG), the balanced closed form and the exact GGN. (b) Each run's loss above the OLS loss of its data.
```
""")

code(r'''
for key, fmt in (("gap0", ".2g"), ("gap", ".2g"), ("closed_ggn0", ".1g"), ("balance", ".1g")):
    glue_text(f"lh4_{key}", b4[key], fmt)
for key, fmt in (("closed_ggn0", ".1%"), ("gap", ".2g")):
    glue_text(f"lh4r_{key}", b4r[key], fmt)
for key, fmt in (("balance0", ".2f"), ("balance", ".2f"), ("gap", ".2g"), ("final loss", ".3g"), ("OLS loss", ".3g")):
    glue_text(f"lh4k_{key.replace(' ', '_')}", k4[key], fmt)
fig4.convergence_table().round(4)
''')

code(r'''
stall = (f"**The balanced runs stall, and the halving rule is not what stalls them.** The row-space run's loss stops at "
         f"{b4['final loss']:.3g} against the OLS loss {b4['OLS loss']:.3g}; from epoch {b4['collapse_epoch']} on the "
         f"learning rate is halved every 100 epochs, down to {b4['lr_end']:.1g}. With the rate held at its maximum the "
         f"rank-whitened run ends {held4['excess']:.2g} of the zero map's loss above the OLS loss, against "
         f"{b4r['excess']:.2g} with halving: the halving freezes a plateau that the constant rate barely leaves. It is the "
         f"saddle of the directions whose initial singular value is small (the smallest is {b4['s_min']:.2g}; under "
         "balanced GD a singular value grows like a power of itself), and it, not the number of samples, keeps the loss "
         "above the OLS loss. The claims about *solutions* (Figs. 6-8) are therefore judged on exact minimizers."
         if b4["stalled"] and not held4["converged"] else
         f"The balanced row-space run ends at loss {b4['final loss']:.3g} against the OLS loss {b4['OLS loss']:.3g}.")
glue_text("lh4_stall", stall, "s");
''')

md(r"""
From the balanced start on row-space features the closed form is exact at epoch 0 (its gap to the exact GGN is
{glue:text}`lh4_closed_ggn0`; the gap to LOBPCG, {glue:text}`lh4_gap0`, is the residual term of a network far from a
minimum) and matches the LOBPCG top-{glue:text}`lh_top_k` to {glue:text}`lh4_gap` at the end, with the layers still
balanced to {glue:text}`lh4_balance`. On the rank-whitened pixels the closed form with $C=I$ is already
{glue:text}`lh4r_closed_ggn0` off the exact GGN at the exactly balanced start, because $C=P$ there, and
{glue:text}`lh4r_gap` off at the end (against the exact GGN).

{glue:text}`lh4_stall`

**An observation of the book's, not a claim of the paper's: the default start stays unbalanced.** From PyTorch's default
initialization the balance gap goes only from {glue:text}`lh4k_balance0` to {glue:text}`lh4k_balance`, and the balanced
closed form is off by {glue:text}`lh4k_gap` at the end, where the loss is {glue:text}`lh4k_final_loss` against the OLS
loss {glue:text}`lh4k_OLS_loss`. Gradient flow conserves $W_{\ell+1}^\top W_{\ell+1}-W_\ell W_\ell^\top$, and GD with
a small step nearly does, so training keeps the start's imbalance. The paper expects balanced layers only under weight
decay or at the edge of stability, neither of which this protocol has, so the row is a variant in the robustness table.
""")

code(r'''
fig4.table().map(lambda v: f"{v:.3g}")
''')

# ------------------------------------------------------------------ Fig. 5
md(r"""
(linear-fig5)=
## Figure 5: bounds between anisotropic and isotropic features

The paper's Fig. 5 writes the OLS solution $W^\top = X^+Y$ as a balanced two-layer network of width 128 and compares
its sharpness with a lower and an upper bound. Its three sentences: (i) for highly anisotropic features the lower bound
is tight, (ii) for isotropic features the upper bound is tight, (iii) the true sharpness floats between the two bounds as
the degree of isotropy changes. The theorem that states the bounds is lost in the text we have, so we test two
**readings**. Every term $T_\ell$ of $M$ is positive semi-definite with top eigenvalue
$t_\ell = \tfrac1n\|X B_\ell^\top\|_2^2\,\|A_\ell\|_2^2$ (the spectral-norm twin of the trace formula).

* **Reading A** (Weyl's inequalities, any weights and data): $\max_\ell t_\ell \le \lambda_{\max} \le \sum_\ell t_\ell$.
* **Reading B:** $t_1 \le \lambda_{\max} \le L\,t_1$, where for a balanced network
  $t_1 = \frac{\|X\|_2^2}{n}\|W\|_2^{2-2/L}$ is the term of the feature variance; it holds because $\max_\ell t_\ell = t_1$
  and $\sum_\ell t_\ell \le L t_1$ for balanced layers.

Both share the lower bound, which is tight when one term dominates, as on raw pixels. For a balanced network on isotropic
features every $T_\ell$ shares the top eigenvector $v_1\otimes u_1$, so $\sum_\ell t_\ell = L t_1$ is attained. The tests
check both pairs on random networks with random anisotropic features against dense Hessians. We vary the anisotropy in a
controlled way: from the raw pixels ($t=0$) we interpolate the singular values geometrically towards the whitened
features ($t=1$), $X_t = U_r S^{1-t}(\sqrt n)^t V_r^\top$, condition number $\kappa^{1-t}$, and take the OLS solution at
each $t$. There $X^\top R=0$, and the residual term of a linear network's Hessian is bilinear in $X^\top R$, so the
Hessian *equals* the GGN: the exact $\lambda_{\max}$ below is the Hessian's, with no Hessian–vector products.
""")

code(r'''
fig5 = ch.run_fig5(setup)
tab5, imb5 = fig5.table(), fig5.imbalance_table()
''')

code(r'''
# long cell: one-off figure code (two panels)
fig, ax = plt.subplots(1, 2, figsize=(8, 3.3))
t, a = list(fig5.ts), fig5.aniso
ax[0].plot(t, a["ggn"], "o-", color=plotting.color(0), label=r"exact $\lambda_{\max}$")
ax[0].plot(t, a["t_1"], "^--", color=plotting.color(2), label=r"lower: $t_1=\max_\ell t_\ell$")
ax[0].plot(t, a["t_sum"], "v:", color=plotting.color(3), label=r"upper A: $\sum_\ell t_\ell$")
ax[0].plot(t, a["L_t_1"], "s--", color=plotting.color(1), label=r"upper B: $L\,t_1$")
ax[0].set(yscale="log", xlabel="t (0 = raw pixels, 1 = whitened)", ylabel=r"$\lambda_{\max}$", title="(a) the bounds")
ax[0].legend(fontsize=9)
for name, c in (("A", 3), ("B", 1)):
    ax[1].plot(t, tab5[f"{name}: position"], "o-", color=plotting.color(c), label=f"reading {name}")
ax[1].set(xlabel="t (0 = raw pixels, 1 = whitened)", ylabel="(λ − lower) / (upper − lower)", title="(b) position")
ax[1].legend(fontsize=9)
glue("fig-lh-5", fig, display=False)
plt.close(fig)
''', tags=["remove-input"])

md(r"""
```{glue:figure} fig-lh-5
:name: fig-lh-5
:alt: Left, on a log axis, the exact sharpness of the OLS network and the bounds of both readings from raw pixels to whitened features. Right, the position of the truth inside each interval: under reading A it stays near one, under reading B it travels from zero to one.

Fig. 5 of the paper: the OLS solution of {glue:text}`lh_n_bal` images as a balanced two-layer width-128 network, from
raw pixels (condition number {glue:text}`lh5_kappa` on the row space) to whitened features. (a) The exact sharpness and
the bounds of both readings. (b) The position of the truth in each interval.
```
""")

code(r'''
first, last = tab5.iloc[0], tab5.iloc[-1]
glue_text("lh5_kappa", first["kappa"], ".3g")
for key, fmt in (("A: lam/low", ".5f"), ("A: up/lam", ".5f"), ("A: width/lam", ".1e"), ("A: position", ".3f"),
                 ("B: up/lam", ".4f"), ("B: position", ".1e")):
    glue_text("lh5_raw_" + key.replace(": ", "_").replace("/", "_"), first[key], fmt)
glue_text("lh5_white_lo", last["B: lam/low"], ".3g")
glue_text("lh5_white_up", last["B: up/lam"], ".6f")
glue_text("lh5_pos_b", ", ".join(f"{p:.2g}" for p in tab5["B: position"]), "s")
glue_text("lh5_pos_a", ", ".join(f"{p:.3f}" for p in tab5["A: position"]), "s")
glue_text("lh5_smin", np.median(imb5.loc["raw", "s_min pair: lam/low"]), ".2g")
tab5.map(lambda v: f"{v:.5g}")
''')

code(r'''
fits = {r: [ch.CRITERIA["fig5_lower"].holds(first[f"{r}: lam/low"]), ch.CRITERIA["fig5_upper"].holds(last[f"{r}: up/lam"]),
            ch.CRITERIA["fig5_floats"].holds(last[f"{r}: position"] - first[f"{r}: position"])] for r in "AB"}
glue_text("lh5_fits", "; ".join(f"reading {r} fits sentences " + (", ".join(f"({'i' * (k + 1) if k < 2 else 'iii'})"
          for k, ok in enumerate(v) if ok) or "none") for r, v in fits.items()), "s");
''')

md(r"""
On the raw pixels the exact sharpness is {glue:text}`lh5_raw_A_lam_low` times the shared lower bound: one term
dominates, and sentence (i) holds under both readings. On whitened features both upper bounds are attained
(ratio {glue:text}`lh5_white_up`) and the lower bound is {glue:text}`lh5_white_lo` times too small: sentence (ii) holds
under both. Sentence (iii) separates them. Under reading A the upper bound is also tight on the raw pixels
({glue:text}`lh5_raw_A_up_lam` times the sharpness): the interval is only {glue:text}`lh5_raw_A_width_lam` of
$\lambda_{\max}$ wide there, so the "position" of the truth in it, {glue:text}`lh5_raw_A_position`, says nothing, and along
the path the positions are {glue:text}`lh5_pos_a`: the truth does not float between the bounds, the bounds close in on it.
Under reading B the upper bound is $L$ times the lower one on raw pixels, and the truth travels across the interval, at
positions {glue:text}`lh5_pos_b` along the path: it floats between the bounds as the isotropy changes, as the paper says.
{glue:text}`lh5_fits`; the claims below are judged under reading B, with reading A in the robustness table. A third pair, with $s_{\min}(X)$ of the smallest nonzero singular value in the lower bound,
fits neither: on raw pixels its lower bound is {glue:text}`lh5_smin` times too small (median over the imbalance sweep,
table below).
""")

code(r'''
imb5.map(lambda v: f"{v:.4g}")
''')

# ------------------------------------------------------------------ Fig. 6
md(r"""
(linear-fig6)=
## Figure 6: data dependence

*Left.* The paper's setup: $X'\in\mathbb{R}^{100\times20}$ Gaussian, whitened with $\sigma_x=3$, five balanced
$20\times20$ layers sharing singular values drawn from $\mathcal U[0,1]$, and $Y=f(X)$, so the loss is zero and the GGN
is exact. We compare all $400$ possibly nonzero eigenvalues of the dense Hessian with $\lambda_{ij}$.

*Middle.* The paper plots the sharpness of balanced interpolating minimizers against depth, but the caption of this panel
is lost in the text we have, so **the setup is the book's own**: Gaussian features ($100\times20$) whitened at
$\sigma_x\in$ {glue:text}`lh6_sigmas`, labels from a random linear teacher, the OLS solution written as a balanced network
of width 20 at each depth, its top Hessian eigenvalue by Lanczos iteration (ARPACK `eigsh`) on Hessian–vector products.
Sharpness grows with depth exactly when $L \ge 2\ln(\|X\|_2/\|Y\|_2)$, marked on each curve.

*Right.* The paper trains a balanced-initialized four-layer width-$64$ network with $\eta_{\max}=10^{-2}$ on whitened
class-imbalanced subsets and plots its sharpness against the majority share $m$, with $L\,m^{1-1/L}$. The claim is about
the *solutions* training finds, and the trained runs stall before they reach one (Fig. 4), so we compute the exact
balanced minimizer of every subset (its OLS solution written as a balanced network, whose Hessian equals its GGN) and
show the trained networks beside it, with their convergence.
""")

code(r'''
fig6 = ch.run_fig6(setup)
im6 = fig6.imbalance
''')

code(r'''
# long cell: one-off figure code (three panels)
fig, ax = plt.subplots(1, 3, figsize=(8, 3.0))
m6 = fig6.exact["theory"].size
ax[0].plot(fig6.exact["numeric"][:m6], "o", ms=2, color=plotting.color(0), label="dense Hessian")
ax[0].plot(fig6.exact["theory"], "-", color=plotting.color(1), label=r"$\lambda_{ij}$")
ax[0].set(yscale="log", xlabel="index", ylabel="eigenvalue", title="(a) exact case")
for i, sx in enumerate(fig6.sigma_xs):
    ax[1].plot(fig6.depths, fig6.depth["numeric"][i], "o", color=plotting.color(i), label=rf"$\sigma_x={sx:g}$")
    ax[1].plot(fig6.depths, fig6.depth["theory"][i], "-", color=plotting.color(i))
    if fig6.depth["crossover"][i] > 0:
        ax[1].axvline(fig6.depth["crossover"][i], color=plotting.color(i), ls=":", lw=1)
ax[1].set(yscale="log", xlabel="depth L", title="(b) depth (book's setup)")
m, lam = im6.m(), im6.minimizer()
ax[2].plot(m.ravel(), lam.ravel(), "o", color=plotting.color(0), label="minimizers")
ax[2].plot(im6.m("balanced").ravel(), im6.lam("balanced").ravel(), "^", mfc="none", color=plotting.color(3), label="trained")
grid = np.linspace(m.min(), m.max(), 50)
ax[2].plot(grid, 4 * grid ** 0.75, "-", color=plotting.color(1), label=r"$L\,m^{1-1/L}$")
ax[2].set(xlabel="majority share m", title="(c) label imbalance")
for a in ax:
    a.legend(fontsize=9)
glue("fig-lh-6", fig, display=False)
plt.close(fig)
''', tags=["remove-input"])

md(r"""
```{glue:figure} fig-lh-6
:name: fig-lh-6
:alt: Three panels. Left, the dense Hessian's eigenvalues on the closed form. Middle, the sharpness of balanced interpolating minimizers against depth for three feature scales, with the crossover depths. Right, the sharpness against the majority share: exact minimizers, trained networks and the formula.

Fig. 6 of the paper. (a) The exact case (the paper's setup). (b) Sharpness against depth, a setup of the book's own
(the caption is lost): points by `eigsh`, lines the closed form, dotted the crossover depths. (c) Sharpness against the
majority share on {glue:text}`lh_n_imb`-image subsets ({glue:text}`lh_seeds` per share): exact balanced minimizers,
trained four-layer networks after {glue:text}`lh_epochs` epochs (not converged, see the table) and $L\,m^{1-1/L}$.
```
""")

code(r'''
glue_text("lh6_sigmas", "{" + ", ".join(f"{s:g}" for s in setup.sigma_xs) + "}", "s")
glue_text("lh6_left", "below" if fig6.err_left < 1e-12 else "above", "s")
glue_text("lh6_mid", "below" if fig6.err_middle < 1e-8 else "above", "s")
exp6 = ch.log_slopes(im6.m(), im6.minimizer())
glue_text("lh6_exp", f"{np.median(exp6):.3f} (range {exp6.min():.3f} to {exp6.max():.3f})", "s")
conv6 = im6.convergence("balanced")
glue_text("lh6_conv", f"{int(conv6['converged'].sum())} of {len(conv6)}", "s")
glue_text("lh6_stalled", int(conv6["stalled"].sum()), "d")
glue_text("lh6_excess", f"{conv6['excess'].min():.2g} to {conv6['excess'].max():.2g}", "s")
fig6.right_table().round(4)
''')

code(r'''
gap6 = np.median(im6.lam("balanced") / im6.minimizer() - 1, 0)
glue_text("lh6_proj", "The sharpness lies slightly below the formula (table above) because the subsets have more images "
          "than their rank, so the OLS solution cannot interpolate one-hot labels; the formula with the labels projected on "
          "the column space of X reproduces the minimizers exactly." if setup.n_imb > im6.minimizer("rank").min() else
          "The subsets have no more images than their rank, so the minimizers interpolate and equal the formula.", "s")
glue_text("lh6_gap", f"{gap6.min():+.1%} to {gap6.max():+.1%}", "s");
''')

md(r"""
The closed form reproduces all eigenvalues of the exact case to a relative error {glue:text}`lh6_left` $10^{-12}$, and
`eigsh` the depth dependence to {glue:text}`lh6_mid` $10^{-8}$ (the round-off digits vary from run to run, so the text
states only the comparison). The exact minimizers' sharpness grows with the majority share with a fitted exponent of
{glue:text}`lh6_exp` over the subsets, against the theory's $3/4$. {glue:text}`lh6_proj` The trained networks sit within
{glue:text}`lh6_gap` of the minimizers (seed medians per share), but {glue:text}`lh6_conv` runs reached the OLS loss: they
end {glue:text}`lh6_excess` of the zero map's loss above it, and in {glue:text}`lh6_stalled` of them the halving rule had
collapsed the learning rate (the table below), so they are a variant of the claim, not its test.
""")

code(r'''
conv6.round(4)
''')

# ------------------------------------------------------------------ Fig. 7
md(r"""
(linear-fig7)=
## Figure 7: ablations

The paper repeats the right panel of Fig. 6 three times, dropping one assumption each time: no whitening (raw pixels in
$[0,1]$), PyTorch's default Kaiming-uniform initialization instead of balanced weights, and a tanh MLP. These claims are
about the networks training finds, so each is judged on the trained runs, and only if every run reached the OLS loss of
its data. The tanh network trains on the full data rather than on sufficient statistics; it runs
{glue:text}`lh_tanh_epochs` epochs with {glue:text}`lh_tanh_seeds` seed(s), and its convergence check (the OLS loss of the
best *linear* map) is necessary, not sufficient.
""")

code(r'''
fig7 = ch.run_fig7(setup)
im7 = fig7.imbalance
''')

code(r'''
# long cell: one-off figure code (three panels)
fig, axes = plt.subplots(1, 3, figsize=(8, 3.0))
for ax, name in zip(axes, im7.trained):
    m, lam = im7.m(name), im7.lam(name)
    ax.plot(m.ravel(), lam.ravel(), "o", color=plotting.color(0), label="trained")
    ax.plot(np.median(m, 0), np.median(lam, 0), "-", color=plotting.color(0), lw=1)
    grid = np.linspace(m.min(), m.max(), 50)
    ax.plot(grid, 4 * grid ** 0.75, "--", color=plotting.color(1), label="isotropic theory")
    ax.set(xlabel="majority share m", title=name)
    ax.legend(fontsize=9)
axes[0].set_ylabel(r"$\lambda_{\max}$ (LOBPCG)")
glue("fig-lh-7", fig, display=False)
plt.close(fig)
''', tags=["remove-input"])

md(r"""
```{glue:figure} fig-lh-7
:name: fig-lh-7
:alt: Three panels of the final sharpness against the majority share: without whitening (large and irregular), from the Kaiming start (increasing, near the theory), and for a tanh network (increasing, below the theory).

Fig. 7 of the paper: the final LOBPCG sharpness of four-layer width-$64$ networks ($\eta_{\max}=10^{-2}$) on
{glue:text}`lh_n_imb`-image subsets against the majority share, without whitening, from the Kaiming start, and as a tanh
MLP, with the isotropic theory $L\,m^{1-1/L}$; a line joins the seed medians.
```
""")

code(r'''
conv7 = {name: im7.convergence(name) for name in im7.trained}
pd.DataFrame({name: {"runs": len(c), "converged": int(c["converged"].sum()), "stalled": int(c["stalled"].sum()),
                     "excess min": c["excess"].min(), "excess max": c["excess"].max()} for name, c in conv7.items()}).T
''')

code(r'''
rec7 = {r.key: r for r in ch.claims_fig7(setup, fig7)}
def reached(c):  # how many runs converged, in words
    bad = c[~c["converged"]]
    return (f"all {len(c)} runs reached the OLS loss" if bad.empty else f"{len(c) - len(bad)} of {len(c)} runs reached the "
            f"OLS loss (the others end {bad['excess'].min():.2g} to {bad['excess'].max():.2g} of the zero map's loss above it)")
for name, key in (("no whitening", "left"), ("Kaiming init", "middle"), ("tanh MLP", "right")):
    ex = ch.log_slopes(im7.m(name), im7.lam(name))
    glue_text(f"lh7_exp_{key}", f"{np.median(ex):.3g} (range {ex.min():.3g} to {ex.max():.3g})", "s")
    glue_text(f"lh7_conv_{key}", reached(conv7[name]), "s")
    glue_text(f"lh7_verdict_{key}", rec7[f"fig7_{key}"].verdict, "s")
glue_text("lh7_raw_med", ", ".join(f"{v:.3g}" for v in np.median(im7.lam("no whitening"), 0)), "s");
''')

md(r"""
Without whitening the seed-median sharpness over the shares is {glue:text}`lh7_raw_med`, far above the isotropic theory,
and {glue:text}`lh7_conv_left`: on raw pixels GD has not found a solution in {glue:text}`lh_epochs` epochs, so what the
paper calls the sharpness of the learnt solution is not yet measured; verdict: {glue:text}`lh7_verdict_left`. From the
Kaiming start {glue:text}`lh7_conv_middle`, and the final sharpness grows with the majority share with exponent
{glue:text}`lh7_exp_middle`; verdict: {glue:text}`lh7_verdict_middle`. For the tanh networks the exponent is
{glue:text}`lh7_exp_right`, and after {glue:text}`lh_tanh_epochs` epochs {glue:text}`lh7_conv_right` of the best *linear*
map; verdict: {glue:text}`lh7_verdict_right`.
""")

# ------------------------------------------------------------------ Fig. 8
md(r"""
(linear-fig8)=
## Figure 8: sharpness against dataset size

If the entries of $X$ and $Y$ are $\Theta(1)$, then $\|X\|_2,\|Y\|_2 = \Theta(\sqrt n)$ and the sharpness of balanced
solutions, $\frac{L}{n}\|X\|_2^{2/L}\|Y\|_2^{2(L-1)/L}$, does not depend on $n$. The paper sets this against Cohen et al.,
who observe that the sharpness GD reaches grows with $n$. The formula does depend on the data through the majority share
$m$, and small random subsets have a larger one, so the paper's own formula predicts a slight *decrease* with $n$. We
draw {glue:text}`lh_seeds` uniform random subsets per size, compute the exact balanced minimizer of each, and train the
balanced four-layer network on each, as in the paper.
""")

code(r'''
fig8 = ch.run_fig8(setup)
sl8, tab8, conv8 = fig8.slopes(), fig8.table(), fig8.convergence()
''')

code(r'''
# long cell: one-off figure code
fig, ax = plt.subplots(figsize=(6, 3.4))
x = np.array(fig8.sizes)
lam, form, lt = fig8.minimizer(), fig8.minimizer("formula"), fig8.lam_trained()
for j in range(fig8.seeds):
    first = j == 0
    ax.plot(x, lam[j], "o-", color=plotting.color(0), label="exact minimizers" if first else None)
    ax.plot(x, form[j], "s:", mfc="none", color=plotting.color(1), label=r"$L\,m^{1-1/L}$ of the subset" if first else None)
    ax.plot(x, lt[j], "^", mfc="none", color=plotting.color(3), label="trained (not converged)" if first else None)
ax.set(xscale="log", xlabel="subset size n", ylabel=r"$\lambda_{\max}$")
ax.legend(fontsize=9, loc="center left", bbox_to_anchor=(1.02, 0.5))
glue("fig-lh-8", fig, display=False)
plt.close(fig)
''', tags=["remove-input"])

md(r"""
```{glue:figure} fig-lh-8
:name: fig-lh-8
:alt: The sharpness of the exact balanced minimizers, the paper's formula with each subset's majority share, and trained networks, against the subset size on a log axis; all decrease slightly with n.

Fig. 8 of the paper: the sharpness against the subset size, {glue:text}`lh8_span`, {glue:text}`lh_seeds` uniform random
subsets per size: the exact balanced minimizer of each subset, the paper's formula $L\,m^{1-1/L}$ with the subset's own
majority share, and the balanced four-layer network after {glue:text}`lh_epochs` epochs.
```
""")

code(r'''
dec = np.log10(fig8.sizes[-1] / fig8.sizes[0])
glue_text("lh8_span", f"n from {fig8.sizes[0]:,} to {fig8.sizes[-1]:,} ({dec:.2g} decade{'' if dec == 1 else 's'})", "s")
for key in sl8:
    glue_text("lh8_sl_" + key.replace(" / ", "_over_"), f"{np.median(sl8[key]):.3f} ({sl8[key].min():.3f} to "
              f"{sl8[key].max():.3f})", "s")
glue_text("lh8_m0", f"{tab8['m min'].iloc[0]:.3f} to {tab8['m max'].iloc[0]:.3f}", "s")
interp = [n for n, r in zip(fig8.sizes, tab8["rank"]) if n <= r]
glue_text("lh8_interp", ", ".join(f"{n:,}" for n in interp) or "none", "s")
tab8.round(4)
''')

code(r'''
glue_text("lh8_conv", f"{int(conv8['converged'].sum())} of {len(conv8)}", "s")
glue_text("lh8_stalled", int(conv8["stalled"].sum()), "d")
rec8 = [r for r in ch.claims_fig8(setup, fig8) if r.key == "fig8"][0]
glue_text("lh8_crit", rec8.criterion, "s")
glue_text("lh8_verdict", rec8.verdict, "s");
''')

md(r"""
The range of sizes is {glue:text}`lh8_span`; sizes up to the rank of the subset ({glue:text}`lh8_interp` here) can be
interpolated, larger ones cannot. The slope of $\log\lambda_{\max}$ on $\log n$ of the exact minimizers is
{glue:text}`lh8_sl_minimizer` (median and range over the subsets), against the criterion {glue:text}`lh8_crit`; verdict:
{glue:text}`lh8_verdict`. What slope there is comes from the paper's own formula: with each subset's majority share
({glue:text}`lh8_m0` at the smallest size) $L\,m^{1-1/L}$ alone has slope {glue:text}`lh8_sl_formula`, and the
minimizers divided by the formula have slope {glue:text}`lh8_sl_minimizer_over_formula`, the effect of the labels the OLS
solution cannot fit once $n$ exceeds the rank. The trained networks have slope {glue:text}`lh8_sl_trained`, but
{glue:text}`lh8_conv` runs reached the OLS loss ({glue:text}`lh8_stalled` of them with a collapsed learning rate; the
table below), so their slope is a variant, not the test of the claim. Where the loss could reach zero they sit near a
saddle, whose Hessian differs from the GGN (last column of the table above).
""")

code(r'''
conv8.round(4)
''')

# ------------------------------------------------------------------ count
md(r"""
(linear-count)=
## How many eigenvalues are nonzero

The paper states that at most $\min(d_0,d_1)\min(d_1,d_2)$ Hessian eigenvalues of a two-layer network are nonzero, and at
most $\min(d_0,\dots,d_L)^2$ for balanced deep networks. The closed forms say otherwise. For two layers every pair
$(i,j)$ with $s_i(W_1)^2+s_j(W_2)^2>0$ counts, so $d_0 d_2 - (d_0-\operatorname{rk}W_1)(d_2-\operatorname{rk}W_2)$ are
nonzero; for balanced networks the $r^2$ values $\lambda_{ij}$ come with the edge values $s_i^{2(L-1)}$ of multiplicity
$(d_0-r)+(d_L-r)$, so $r(d_0+d_L-r)$ are nonzero. We count the nonzero eigenvalues (above $10^{-10}\lambda_{\max}$) of
dense autograd Hessians of two small balanced networks at zero loss, and of the exact GGN spectra of the paper's own
architectures under its assumption $C = I$.
""")

code(r'''
count = ch.run_count(setup)
p2, p4 = count.paper["784-256-10"], count.paper["784-64-64-64-10"]
for key, c in (("2", p2), ("4", p4)):
    glue_text(f"lhc_meas_{key}", c["measured"], ",d")
    glue_text(f"lhc_bound_{key}", c["paper"], ",d")
count.table()
''')

md(r"""
The dense Hessians count exactly $r(d_0+d_L-r)$ nonzero eigenvalues, and so do the exact spectra of the paper's networks:
{glue:text}`lhc_meas_2` for the two-layer network of Figs. 1–2 against the paper's bound of {glue:text}`lhc_bound_2`,
and {glue:text}`lhc_meas_4` for the balanced four-layer network of Fig. 4 against {glue:text}`lhc_bound_4`. The bound
fails whenever a hidden layer is narrower than $\max(d_0, d_L)$, which is the case in every network the paper trains. The
paper's point stands that most of the $p$ eigenvalues vanish, but the count is set by the input and output widths.
""")

# ------------------------------------------------------------------ claims
md(r"""
## Claims

Each row gives the paper's sentence, the criterion fixed before the runs, the setting where it differs from the paper's,
our number with its uncertainty, and the verdict; every verdict other than "agrees" names its cause. Claims about
trained networks are "inconclusive" unless every run they rest on reached the OLS loss; claims about *solutions* are
judged on the exact balanced minimizers. The variants below the table (the rank-whitened twins, reading A of the Fig. 5
bounds, the Kaiming start of Fig. 4, the trained networks of Figs. 6 and 8) show how a verdict moves with a convention;
they are not counted.
""")

code(r'''
records = ch.claims(setup, fig12, fig3, fig4, fig5, fig6, fig7, fig8, count)
publish_claims(records, chapter="linear_hessian")
''')

code(r'''
robustness_frame(records)
''')

md(r"""
## What the book adds

The exact GGN route (the $d_0 d_L$ Kronecker matrix, reduced to the row space of $X$) gives every eigenvalue these
figures need without Hessian–vector products, and agrees with dense autograd Hessians to round-off. Beyond the paper it
shows what rank-deficient images do to the closed forms ($C=P$, not $I$), that the paper's bounds on the number of nonzero
eigenvalues fail in its own networks, which reading of the lost Fig. 5 theorem fits its sentences, and that the
training protocol stalls balanced starts on a saddle, so that the claims about solutions have to be checked on exact
minimizers.
""")

nb = nbf.v4.new_notebook()
nb.cells = cells
nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
               "language_info": {"name": "python"},
               "htlib": {"prose_numbers": ["20", "64"]}}
nbf.write(nb, "book/linear_hessian.ipynb")
print(len(cells), "cells")
