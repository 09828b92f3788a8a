"""htlib.datasets: loaders read small files written here in the real formats; nothing is downloaded."""

from __future__ import annotations

import gzip
import pickle
import struct

import numpy as np
import pytest

from htlib import datasets


def _write_idx(path, array, compress=False):
    type_byte = {np.dtype(np.uint8): 0x08, np.dtype(">i4"): 0x0C}[array.dtype]
    header = bytes([0, 0, type_byte, array.ndim]) + b"".join(struct.pack(">I", s) for s in array.shape)
    payload = header + array.tobytes()
    opener = gzip.open if compress else open
    with opener(path, "wb") as fh:
        fh.write(payload)


@pytest.mark.parametrize("compress", [False, True])
def test_idx_loaders(tmp_path, compress):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(5, 3, 4), dtype=np.uint8)
    labels = np.array([3, 1, 4, 1, 5], dtype=np.uint8)
    suffix = ".gz" if compress else ""
    _write_idx(tmp_path / f"train-images-idx3-ubyte{suffix}", images, compress)
    _write_idx(tmp_path / f"train-labels-idx1-ubyte{suffix}", labels, compress)
    for loader in (datasets.load_mnist, datasets.load_fashion_mnist):
        X, y = loader(tmp_path)
        assert X.shape == (5, 12) and X.dtype == np.float64
        np.testing.assert_allclose(X, images.reshape(5, 12) / 255.0)
        np.testing.assert_array_equal(y, labels)
    X, y = datasets.load_dataset("mnist", tmp_path)
    assert X.shape == (5, 12)
    wide = np.arange(6, dtype=">i4").reshape(2, 3)
    _write_idx(tmp_path / "ints", wide)
    np.testing.assert_array_equal(datasets.read_idx(tmp_path / "ints"), wide)


def test_idx_bad_files(tmp_path):
    (tmp_path / "bad").write_bytes(b"\x01\x02\x08\x01\x00\x00\x00\x01\x05")
    with pytest.raises(ValueError, match="magic"):
        datasets.read_idx(tmp_path / "bad")
    (tmp_path / "short").write_bytes(bytes([0, 0, 8, 1]) + struct.pack(">I", 3) + b"\x01")
    with pytest.raises(ValueError, match="shape"):
        datasets.read_idx(tmp_path / "short")


def test_cifar10_loader(tmp_path):
    rng = np.random.default_rng(1)
    truth_x, truth_y = [], []
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 256, size=(2, 3072), dtype=np.uint8)
        lab = list(rng.integers(0, 10, size=2))
        with open(tmp_path / name, "wb") as fh:
            pickle.dump({b"data": data, b"labels": lab}, fh)
        if name != "test_batch":
            truth_x.append(data)
            truth_y += lab
    X, y = datasets.load_cifar10(tmp_path)
    assert X.shape == (10, 3072)
    np.testing.assert_allclose(X, np.concatenate(truth_x) / 255.0)
    np.testing.assert_array_equal(y, truth_y)
    Xt, yt = datasets.load_cifar10(tmp_path, train=False)
    assert Xt.shape == (2, 3072)


def test_missing_directory_message(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte.*nothing is downloaded"):
        datasets.load_mnist(missing)
    with pytest.raises(FileNotFoundError, match="data_batch_1.*nothing is downloaded"):
        datasets.load_cifar10(missing)
    with pytest.raises(ValueError, match="data_dir is required"):
        datasets.load_dataset("cifar10")
    with pytest.raises(ValueError, match="name must be one of"):
        datasets.load_dataset("imagenet")


def test_digits_default():
    X, y = datasets.load_digits()
    assert X.shape == (1797, 64) and y.shape == (1797,)
    assert X.min() == 0 and X.max() == 16
    np.testing.assert_array_equal(np.unique(y), np.arange(10))


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a network connection fails the test."""
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_mnist5k_bundled_without_network(no_network):
    X, y = datasets.load_mnist5k()
    assert X.shape == (5000, 784) and X.dtype == np.float64
    assert y.shape == (5000,) and np.issubdtype(y.dtype, np.integer)
    np.testing.assert_array_equal(np.bincount(y), np.full(10, 500))  # 500 images per digit
    assert X.min() == 0.0 and X.max() == 1.0
    # real images, not noise: the digit-mean images differ and every image has ink
    assert np.all(X.sum(1) > 0)
    means = np.stack([X[y == c].mean(0) for c in range(10)])
    assert np.linalg.matrix_rank(means) == 10
    X2, y2 = datasets.load_dataset("mnist5k")
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, y)
