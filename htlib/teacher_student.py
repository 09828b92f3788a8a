"""The single-index teacher of paper 003 and the three data sets drawn from it.

Inputs ``x ~ N(0, I_d)``, a unit teacher ``beta*``, labels ``y = softplus(beta*ᵀx) + rho_e * xi``, and independent
*train*, *probe* (the ridge readout's hold-out set) and *test* sets.  The student lives in :mod:`htlib.two_layer`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["SingleIndexData", "make_single_index_data", "derived_seed", "resolve_dtype", "resolve_device"]

_DTYPES = {"float32": torch.float32, "float64": torch.float64}


def resolve_dtype(dtype: torch.dtype | str) -> torch.dtype:
    """``torch.float32``/``torch.float64`` from a dtype or its name; ``ValueError`` otherwise.

    Parameters
    ----------
    dtype : torch.dtype or str
        ``torch.float32``, ``torch.float64``, ``"float32"`` or ``"float64"``.

    Returns
    -------
    torch.dtype
        The dtype.

    Examples
    --------
    >>> import torch
    >>> from htlib.teacher_student import resolve_dtype
    >>> resolve_dtype("float64"), resolve_dtype(torch.float32)
    (torch.float64, torch.float32)
    >>> resolve_dtype("float16")
    Traceback (most recent call last):
    ...
    ValueError: dtype must be one of ['float32', 'float64'], got 'float16'
    """
    if isinstance(dtype, str):
        if dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
        return _DTYPES[dtype]
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype!r}")
    return dtype


def resolve_device(device: str) -> torch.device:
    """A torch device from ``'cpu'`` / ``'cuda'`` / ``'cuda:k'``; ``ValueError`` when unavailable.

    Parameters
    ----------
    device : str
        ``"cpu"``, ``"cuda"`` or ``"cuda:k"``.

    Returns
    -------
    torch.device
        The device.

    Examples
    --------
    >>> from htlib.teacher_student import resolve_device
    >>> resolve_device("cpu")
    device(type='cpu')
    """
    if not isinstance(device, str) or not (device == "cpu" or device.startswith("cuda")):
        raise ValueError(f"device must be 'cpu' or 'cuda[:k]', got {device!r}")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} requested but CUDA is not available")
    return torch.device(device)


def derived_seed(seed: int, stream: int) -> int:
    """An independent 63-bit seed for sub-stream ``stream`` of ``seed`` (NumPy ``SeedSequence``).

    Parameters
    ----------
    seed : int
        The parent seed, ``>= 0``.
    stream : int
        The sub-stream.

    Returns
    -------
    int
        A seed in ``[0, 2**63)``.

    Examples
    --------
    >>> from htlib.teacher_student import derived_seed
    >>> derived_seed(0, 1) == derived_seed(0, 1), derived_seed(0, 1) != derived_seed(0, 2), 0 <= derived_seed(7, 3) < 2**63
    (True, True, True)
    """
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    state = np.random.SeedSequence(int(seed), spawn_key=(int(stream),)).generate_state(1, dtype=np.uint64)
    return int(state[0] >> np.uint64(1))


@dataclass(frozen=True)
class SingleIndexData:
    """Train / probe / test sets of the single-index teacher (``X_*``: ``(m, d)``, ``y_*``: ``(m,)``; probe: the
    ridge readout's hold-out set) and its unit direction ``beta`` (``(d,)``).

    Attributes
    ----------
    X_train, X_probe, X_test : torch.Tensor
        Inputs, ``(n, d)``, ``(n, d)``, ``(n_test, d)``.
    y_train, y_probe, y_test : torch.Tensor
        Labels, ``(n,)``, ``(n,)``, ``(n_test,)``.
    beta : torch.Tensor, shape (d,)
        The unit teacher direction.

    Examples
    --------
    >>> from htlib.teacher_student import make_single_index_data
    >>> data = make_single_index_data(30, 8, n_test=5, seed=0)
    >>> tuple(data.X_probe.shape), tuple(data.y_test.shape), tuple(data.beta.shape)
    ((30, 8), (5,), (8,))
    """

    X_train: torch.Tensor
    y_train: torch.Tensor
    X_probe: torch.Tensor
    y_probe: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    beta: torch.Tensor


def make_single_index_data(n: int, d: int, n_test: int = 200, rho_e: float = 0.3, *, seed: int,
                           dtype: torch.dtype | str = torch.float32, device: str = "cpu") -> SingleIndexData:
    """Draw the three data sets (``n`` train and probe points, ``n_test`` test points) of the softplus teacher.

    Drawn in float64 on the CPU from one seeded generator, then cast: the same data (up to rounding) in either dtype
    and on any device.  Each set has its own sub-stream of ``seed``, so the train set does not depend on ``n_test``.

    Parameters
    ----------
    n : int
        Size of the train and of the probe set.
    d : int
        Input dimension.
    n_test : int, default 200
        Size of the test set.
    rho_e : float, default 0.3
        Label-noise standard deviation.
    seed : int
        Seed, ``>= 0``.
    dtype : torch.dtype or str, default torch.float32
        Element type of the result.
    device : str, default "cpu"
        Device of the result.

    Returns
    -------
    SingleIndexData
        The three sets and the teacher.

    Examples
    --------
    >>> import torch
    >>> from htlib.teacher_student import make_single_index_data
    >>> data = make_single_index_data(50, 10, n_test=5, rho_e=0.0, seed=0, dtype="float64")   # no label noise
    >>> bool(torch.allclose(data.y_train, torch.nn.functional.softplus(data.X_train @ data.beta)))
    True
    >>> other = make_single_index_data(50, 10, n_test=9, rho_e=0.0, seed=0, dtype="float64")
    >>> bool(torch.equal(data.X_train, other.X_train))   # the train set does not depend on n_test
    True
    """
    for name, value, low in (("n", n, 1), ("d", d, 1), ("n_test", n_test, 1)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if not np.isfinite(rho_e) or rho_e < 0:
        raise ValueError(f"rho_e must be a finite number >= 0, got {rho_e!r}")
    dt = resolve_dtype(dtype)
    dev = resolve_device(device)

    def gen(stream: int) -> torch.Generator:
        return torch.Generator().manual_seed(derived_seed(seed, stream))

    beta = torch.randn(d, generator=gen(0), dtype=torch.float64)
    beta /= torch.linalg.vector_norm(beta)

    def draw(m: int, stream: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = gen(stream)
        X = torch.randn(m, d, generator=g, dtype=torch.float64)
        xi = torch.randn(m, generator=g, dtype=torch.float64)
        y = torch.nn.functional.softplus(X @ beta) + rho_e * xi
        return X.to(device=dev, dtype=dt), y.to(device=dev, dtype=dt)

    X_train, y_train = draw(n, 1)
    X_probe, y_probe = draw(n, 2)
    X_test, y_test = draw(n_test, 3)
    return SingleIndexData(X_train, y_train, X_probe, y_probe, X_test, y_test, beta.to(device=dev, dtype=dt))
