"""Small classifiers trained with SGD at several batch sizes, for the HTMP chapter (paper 001, Fig. 5).

Owns: :class:`SmallNetConfig` and :func:`train_small_net`, which trains either

- ``model="mlp"`` on scikit-learn's bundled digits (the default; nothing to download): a
  fully connected net ``64 -> 1536 -> 500 -> 10`` with ReLU, whose widest FC layer
  (``500 x 1536``) has the aspect ratio ``500/1536 = 0.3255`` of the paper's MiniAlexNet FC1; or
- ``model="minialexnet"`` on CIFAR-10 read from a local folder (``data_dir``): three
  conv(5x5)+ReLU+maxpool(2) blocks (96, 256, 192 channels) and FC layers
  ``192*4*4 -> 1000 -> 384 -> 10``, the paper's setting (FC1 is ``1000 x 3072``).

Both use SGD with momentum (paper: lr 0.01, momentum 0.9), cross-entropy, Gaussian
initialization with std ``1/sqrt(fan_in)`` and zero biases, and return the weights of the
largest fully connected layer as float64 numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

__all__ = ["SmallNetConfig", "SmallNetResult", "build_model", "train_small_net"]

MODELS = ("mlp", "minialexnet")


@dataclass(frozen=True)
class SmallNetConfig:
    """One SGD run.

    Attributes
    ----------
    model : {"mlp", "minialexnet"}
        ``"mlp"`` trains on digits; ``"minialexnet"`` on CIFAR-10 from ``data_dir``.
    batch_size : int
        Mini-batch size (``>= 1``).
    epochs : int
        Passes over the training set (``>= 1``).
    lr, momentum : float
        SGD learning rate (``> 0``) and momentum (``0 <= momentum < 1``).
    widths : tuple of int
        Hidden widths of the MLP (ignored by MiniAlexNet).
    n_train : int
        Training samples taken (``>= 10``; capped by the data set; the rest is the test set).
    data_dir : str or None
        CIFAR-10 folder (``cifar-10-batches-py``), required for MiniAlexNet.
    seed : int
        Seeds the split, the initialization and the batch order.
    """

    model: str = "mlp"
    batch_size: int = 100
    epochs: int = 100
    lr: float = 0.01
    momentum: float = 0.9
    widths: tuple[int, ...] = (1536, 500)
    n_train: int = 1500
    data_dir: str | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}, got {self.model!r}")
        for name in ("batch_size", "epochs", "n_train"):
            v = getattr(self, name)
            low = 10 if name == "n_train" else 1
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
        if not (isinstance(self.lr, (int, float)) and math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a finite number > 0, got {self.lr!r}")
        if not (isinstance(self.momentum, (int, float)) and 0 <= self.momentum < 1):
            raise ValueError(f"momentum must lie in [0, 1), got {self.momentum!r}")
        if not self.widths or any((not isinstance(w, int)) or w < 1 for w in self.widths):
            raise ValueError(f"widths must be a non-empty tuple of integers >= 1, got {self.widths!r}")
        if self.model == "minialexnet" and not self.data_dir:
            raise ValueError("data_dir (a local CIFAR-10 folder) is required for model='minialexnet'; nothing is downloaded")


@dataclass(frozen=True)
class SmallNetResult:
    """``weights``: the largest FC layer (out x in, float64); ``train_acc``/``test_acc``."""

    config: SmallNetConfig
    weights: np.ndarray
    train_acc: float
    test_acc: float

    @property
    def gamma(self) -> float:
        h, d = self.weights.shape
        return min(h, d) / max(h, d)


class _MiniAlexNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 96, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(96, 256, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(256, 192, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(192 * 4 * 4, 1000), nn.ReLU(), nn.Linear(1000, 384), nn.ReLU(), nn.Linear(384, 10)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x.view(-1, 3, 32, 32)))


def build_model(config: SmallNetConfig, in_dim: int, n_classes: int = 10) -> nn.Module:
    """The network of ``config``, initialized with N(0, 1/fan_in) weights and zero biases."""
    if config.model == "mlp":
        dims = (in_dim, *config.widths)
        layers: list[nn.Module] = []
        for a, b in zip(dims[:-1], dims[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        layers.append(nn.Linear(dims[-1], n_classes))
        model: nn.Module = nn.Sequential(*layers)
    else:
        model = _MiniAlexNet()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Linear, nn.Conv2d)):
                fan_in = m.weight[0].numel()
                m.weight.normal_(0.0, 1.0 / math.sqrt(fan_in))
                m.bias.zero_()
    return model


def _largest_linear(model: nn.Module) -> nn.Linear:
    lins = [m for m in model.modules() if isinstance(m, nn.Linear)]
    return max(lins, key=lambda m: m.weight.numel())


def train_small_net(config: SmallNetConfig) -> SmallNetResult:
    """Train the net of ``config`` with SGD+momentum; return the largest FC layer's weights.

    Deterministic for a given config on the CPU (seeded split, initialization and batch order).
    A module-level function of one frozen config, so ``htlib.sweep.run_sweep`` caches it.
    """
    from htlib import datasets

    gen = torch.Generator().manual_seed(config.seed)
    if config.model == "mlp":
        X, y = datasets.load_digits()
        X = X / 16.0
    else:
        X, y = datasets.load_cifar10(config.data_dir, train=True)
    X = (X - X.mean(axis=0)) / (X.std(axis=0) + 1e-8)
    perm = torch.randperm(len(X), generator=gen).numpy()
    n_tr = min(config.n_train, len(X) - 1)
    tr, te = perm[:n_tr], perm[n_tr:]
    Xt = torch.as_tensor(X, dtype=torch.float32)
    yt = torch.as_tensor(y, dtype=torch.int64)
    torch.manual_seed(config.seed)
    model = build_model(config, X.shape[1])
    opt = torch.optim.SGD(model.parameters(), lr=config.lr, momentum=config.momentum)
    loss_fn = nn.CrossEntropyLoss()
    Xtr, ytr = Xt[tr], yt[tr]
    for _ in range(config.epochs):
        order = torch.randperm(n_tr, generator=gen)
        for i in range(0, n_tr, config.batch_size):
            idx = order[i : i + config.batch_size]
            opt.zero_grad(set_to_none=True)
            loss_fn(model(Xtr[idx]), ytr[idx]).backward()
            opt.step()
    with torch.no_grad():
        acc_tr = float((model(Xtr).argmax(1) == ytr).float().mean())
        acc_te = float((model(Xt[te]).argmax(1) == yt[te]).float().mean()) if len(te) else float("nan")
    W = _largest_linear(model).weight.detach().to(torch.float64).numpy().copy()
    return SmallNetResult(config=config, weights=W, train_acc=acc_tr, test_acc=acc_te)
