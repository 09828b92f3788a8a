"""Runs of the HTMP chapter that vary the data and the seeds, inside this module's result-cache key (apart from
:mod:`htlib.experiments.htmp.compute`, whose runs they leave untouched).

- **Image subsets.**  LeNet at the chapter's optimizer and epochs, trained on disjoint 1,000-image subsets of MNIST-5k
  (:func:`block_indices`: five blocks of 100 images of each digit, fixed once; blocks ``0 .. SUBSETS - 1`` train, block
  :data:`TEST_BLOCK` is every run's test set), at each batch size of :data:`SUBSET_BATCHES` that the chapter's
  ``batch_sizes`` holds (:func:`subset_batches`):
  - the book's LeNet (2x2 max-pooling, one scalar mean/std normalization) at the chapter's ``repeats`` seeds
    ``seed .. seed + repeats - 1`` on every subset;
  - the group's public-code protocol (a 1,000-image subsample, 2x2 average pooling, per-channel normalization), one
    seed per subset (``seed + block``).
  Each run's FC1 is fitted as the chapter fits its layers (:func:`compute.fit_layer`), with the bulk fit without its
  outliers (:func:`compute.bulk_fit`) and, where the paper gives a finite kappa at that batch size, the direct test of
  the paper's law (:func:`compute.paper_ks` against :func:`compute.paper_null`).
- **Phase seeds.**  The 5+1 phase spectra of :func:`compute.phase_spectra` at :data:`PHASE_SEEDS` seeds (cheap, not
  cached).

On MNIST, one channel, per-channel normalization is the scalar one: the two protocols differ by the pooling alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from htlib import datasets, small_nets
from htlib._checks import check_choice, check_int
from htlib.experiments.htmp import compute
from htlib.small_nets import SmallNetConfig

BLOCKS = 5  # MNIST-5k's 500 images of each digit split into 5 blocks of 100: five disjoint 1,000-image subsets
SPLIT_SEED = 20261206  # the one fixed permutation of each digit's images that defines the blocks
SUBSETS = 3  # training subsets: blocks 0, 1, 2
TEST_BLOCK = 4  # every run's test images (never trained on)
SUBSET_BATCHES = (1000, 250, 100)  # the batch sizes the LeNet rows read (1000 -> 100, 250 -> 100, the paper's kappas)
PROTOCOLS = {"book": ("max", "scalar"), "public": ("avg", "channel")}  # (pooling, normalization)
PHASE_SEEDS = 3  # seeds of the 5+1 phase spectra: seed, seed + 1, seed + 2


def block_indices(labels, blocks: int = BLOCKS, seed: int = SPLIT_SEED) -> list[np.ndarray]:
    """Disjoint, class-balanced blocks of the images with ``labels``: each class's images permuted once (``seed``)
    and cut into ``blocks`` equal parts; block ``b`` holds part ``b`` of every class, sorted.

    Examples
    --------
    >>> y = np.repeat(np.arange(3), 4)  # 3 classes of 4
    >>> b = block_indices(y, blocks=2, seed=0)
    >>> [len(x) for x in b], sorted(np.concatenate(b).tolist()) == list(range(12))
    ([6, 6], True)
    >>> [np.bincount(y[x]).tolist() for x in b]
    [[2, 2, 2], [2, 2, 2]]
    """
    y = np.asarray(labels)
    check_int("blocks", blocks, 1)
    rng = np.random.default_rng(int(seed))
    parts: list[list[np.ndarray]] = [[] for _ in range(blocks)]
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        if idx.size % blocks:
            raise ValueError(f"class {c} has {idx.size} images, not a multiple of {blocks} blocks")
        for b, part in enumerate(np.split(idx, blocks)):
            parts[b].append(part)
    return [np.sort(np.concatenate(p)) for p in parts]


@dataclass(frozen=True)
class SubsetConfig:
    """One LeNet run on block ``block`` of :func:`block_indices` (test: block :data:`TEST_BLOCK`): ``net`` gives the
    optimizer, epochs, batch size, seed (initialization and batch order) and device; ``pool`` ``"max"`` (the book's
    LeNet) or ``"avg"``; ``norm`` ``"scalar"`` (one mean and standard deviation of the training images) or
    ``"channel"`` (one per channel); ``paper_reps`` draws of the paper's-law null where the paper gives a kappa."""
    net: SmallNetConfig
    block: int
    pool: str = "max"
    norm: str = "scalar"
    paper_reps: int = compute.PAPER_TEST_REPS
    model: str = "lenet-subset"

    def __post_init__(self) -> None:
        check_int("block", self.block, 0)
        if self.block >= BLOCKS or self.block == TEST_BLOCK:
            raise ValueError(f"block must be a training block in 0..{BLOCKS - 1} other than {TEST_BLOCK}, got {self.block}")
        check_choice("pool", self.pool, ("max", "avg"))
        check_choice("norm", self.norm, ("scalar", "channel"))
        check_int("paper_reps", self.paper_reps, 1)
        if self.net.model != "lenet" or self.net.dataset != "mnist5k":
            raise ValueError(f"a subset run is LeNet on mnist5k, got {self.net.model!r} on {self.net.dataset!r}")

    @property
    def protocol(self) -> str:
        return next(k for k, v in PROTOCOLS.items() if v == (self.pool, self.norm))


@dataclass(frozen=True)
class SubsetFit:
    """One subset run: its config's ``block``, ``protocol`` and ``seed``, FC1's fits (``fit``,
    :class:`compute.LayerFit`), the bulk without its outliers (``outliers``, ``bulk_kappa``: :func:`compute.bulk_fit`)
    and, where the paper gives a finite kappa at the batch size, the direct test of its law (``paper_ks`` against
    ``paper_null``; nan and empty elsewhere)."""
    block: int
    protocol: str
    seed: int
    fit: compute.LayerFit
    outliers: int
    bulk_kappa: float
    paper_ks: float = math.nan
    paper_null: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def batch_size(self) -> int:
        return self.fit.batch_size

    @property
    def bulk_delta(self) -> float:
        return compute._delta(self.bulk_kappa, self.fit.gamma)


def _normalize(Xtr: np.ndarray, Xte: np.ndarray, norm: str, channels: int) -> tuple[np.ndarray, np.ndarray]:
    """Both image sets standardized by the training images' mean and standard deviation: one pair (``"scalar"``) or
    one per channel (``"channel"``; images flattened channel by channel)."""
    if norm == "scalar":
        mu, sd = Xtr.mean(), Xtr.std() + 1e-8
        return (Xtr - mu) / sd, (Xte - mu) / sd
    c = Xtr.reshape(len(Xtr), channels, -1)
    mu, sd = c.mean(axis=(0, 2)), c.std(axis=(0, 2)) + 1e-8
    f = lambda X: ((X.reshape(len(X), channels, -1) - mu[:, None]) / sd[:, None]).reshape(X.shape)  # noqa: E731
    return f(Xtr), f(Xte)


def subset_data(block: int, norm: str = "scalar"):
    """The training images and labels of ``block`` and the test ones (block :data:`TEST_BLOCK`), normalized."""
    X, y = datasets.load_dataset("mnist5k")
    blocks = block_indices(y)
    tr, te = blocks[block], blocks[TEST_BLOCK]
    Xtr, Xte = _normalize(X[tr], X[te], norm, channels=1)
    return Xtr, y[tr], Xte, y[te]


def build_lenet(net: SmallNetConfig, pool: str) -> nn.Module:
    """The book's LeNet of ``net`` (:func:`htlib.small_nets.build_model`, initialized there), its 2x2 max-pools
    replaced by 2x2 average pools where ``pool`` is ``"avg"`` (pooling has no weights: the initialization is the
    same)."""
    model = small_nets.build_model(net)
    if pool == "avg":
        feats = model.features
        for i, m in enumerate(feats):
            if isinstance(m, nn.MaxPool2d):
                feats[i] = nn.AvgPool2d(2)
    return model


def train_subset(config: SubsetConfig) -> SubsetFit:
    """One cached job: train LeNet on the config's subset with SGD and momentum (cross-entropy, the batch order
    reshuffled each epoch from the seed, one thread) and fit FC1 as the chapter does."""
    net = config.net
    Xtr, ytr, Xte, yte = subset_data(config.block, config.norm)
    with small_nets._one_thread(), small_nets._cuda_exact(net.device):
        gen = torch.Generator().manual_seed(net.seed)
        torch.manual_seed(net.seed)
        model = build_lenet(net, config.pool)
        W0 = small_nets.first_linear(model).weight.detach().clone()
        dev = torch.device(net.device)
        model = model.to(dev).to(memory_format=torch.channels_last)
        shape = (-1, *model.shape)
        to = lambda a, dt: torch.as_tensor(a, dtype=dt, device=dev)  # noqa: E731
        Xt = to(Xtr, torch.float32).reshape(shape).contiguous(memory_format=torch.channels_last)
        Xv = to(Xte, torch.float32).reshape(shape).contiguous(memory_format=torch.channels_last)
        yt, yv = to(ytr, torch.int64), to(yte, torch.int64)
        opt = torch.optim.SGD(model.parameters(), lr=net.lr, momentum=net.momentum)
        loss_fn = nn.CrossEntropyLoss()
        n = len(Xt)
        for _ in range(net.epochs):
            order = torch.randperm(n, generator=gen).to(dev)
            for i in range(0, n, net.batch_size):
                idx = order[i:i + net.batch_size]
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(Xt[idx]), yt[idx])
                loss.backward()
                opt.step()
            if not math.isfinite(float(loss.detach())):
                raise ValueError(f"training diverged (non-finite loss) for {config}")
        with torch.no_grad():
            acc = [float((model(X).argmax(1) == y).float().mean()) for X, y in ((Xt, yt), (Xv, yv))]
        W1 = small_nets.first_linear(model).weight.detach().cpu()
    change = float(torch.linalg.norm(W1 - W0) / torch.linalg.norm(W0))
    f = compute.fit_layer(W1.to(torch.float64).numpy().copy(), model="lenet", batch_size=net.batch_size, seed=net.seed,
                          train_acc=acc[0], test_acc=acc[1], weight_change=change,
                          steps=net.epochs * math.ceil(n / net.batch_size))
    outliers, bulk = compute.bulk_fit(f)
    kp = compute.PAPER_KAPPA.get(("lenet", net.batch_size), math.inf)
    ks, null = math.nan, np.zeros(0)
    if math.isfinite(kp):
        ks = compute.paper_ks(f.eigs, kp, f.gamma)
        null = compute.paper_null(compute.PaperTestConfig(float(kp), float(f.gamma), int(f.eigs.size),
                                                          int(config.paper_reps),
                                                          (5000 + net.batch_size, config.block, net.seed)))
    return SubsetFit(config.block, config.protocol, net.seed, f, int(outliers), float(bulk), float(ks), null)


def subset_batches(setup: compute.Setup) -> tuple[int, ...]:
    """The batch sizes of :data:`SUBSET_BATCHES` that the subset runs train: those in the chapter's ``batch_sizes``
    (a rerun that leaves a batch size out trains it on no subset either).

    Examples
    --------
    >>> subset_batches(compute.Setup()), subset_batches(compute.Setup(batch_sizes=[1000, 100, 32]))
    ((1000, 250, 100), (1000, 100))
    """
    return tuple(b for b in SUBSET_BATCHES if b in setup.batch_sizes)


def subset_configs(setup: compute.Setup, protocol: str = "book") -> list[SubsetConfig]:
    """The subset runs of ``protocol`` at each of :func:`subset_batches`: ``"book"`` at the chapter's ``repeats``
    seeds on every subset, ``"public"`` at seed ``seed + block``; ``[]`` unless the chapter runs on MNIST-5k."""
    check_choice("protocol", protocol, tuple(PROTOCOLS))
    if setup.dataset != "mnist5k":
        return []
    pool, norm = PROTOCOLS[protocol]
    runs = [(blk, setup.seed + r) for blk in range(SUBSETS) for r in range(setup.repeats)] if protocol == "book" else \
        [(blk, setup.seed + blk) for blk in range(SUBSETS)]
    return [SubsetConfig(SmallNetConfig(model="lenet", dataset="mnist5k", batch_size=int(b), epochs=int(setup.epochs),
                                        lr=float(setup.lr), momentum=float(setup.momentum),
                                        n_train=5000 // BLOCKS, seed=int(s),
                                        device=setup.device), blk, pool, norm)
            for b in subset_batches(setup) for blk, s in runs]


def _cost(c: SubsetConfig) -> float:
    return c.net.epochs * (1.0 + 50.0 / c.net.batch_size)  # per image; the small batches are the slow ones


@dataclass(frozen=True)
class SubsetsResult:
    """The subset runs of :func:`run_subsets`: ``runs`` in config order, each a :class:`SubsetFit`."""
    setup: compute.Setup
    runs: list

    def of(self, protocol: str, batch: int) -> dict[int, list]:
        """The runs of ``protocol`` at ``batch``, by subset (block), in seed order."""
        out: dict[int, list] = {}
        for r in self.runs:
            if r.protocol == protocol and r.batch_size == batch:
                out.setdefault(r.block, []).append(r)
        return {b: sorted(v, key=lambda r: r.seed) for b, v in sorted(out.items())}


def run_subsets(setup: compute.Setup, protocols=tuple(PROTOCOLS)) -> SubsetsResult:
    """Every run of :func:`subset_configs` for ``protocols``, one sweep each (the book's first), the costliest first,
    on the Setup's workers, through the result cache."""
    from htlib.sweep import run_sweep

    out = []
    with setup.executor_context() as pool:
        for p in protocols:
            jobs = subset_configs(setup, p)
            order = sorted(range(len(jobs)), key=lambda i: -_cost(jobs[i]))
            done = run_sweep(train_subset, [jobs[i] for i in order], executor=pool, progress=False) if jobs else []
            res = [None] * len(jobs)
            for i, r in zip(order, done):
                res[i] = r
            out += res
    return SubsetsResult(setup, out)


def phase_runs(setup: compute.Setup) -> list:
    """:func:`compute.phase_spectra` at seeds ``seed .. seed + PHASE_SEEDS - 1``: per seed ``(eigs, table)``."""
    return [compute.phase_spectra(setup.phase_n, setup.phase_gamma, setup.seed + r) for r in range(PHASE_SEEDS)]
