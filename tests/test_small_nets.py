"""Tests of htlib.small_nets: configs validate themselves, the architectures have the paper's
FC1 shapes, training is deterministic and learns, the initialization readings differ as stated,
and the "paper" preset resolves to paper 001's Fig. 5 setting without training anything."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from htlib.small_nets import (BatchSizeExperiment, SmallNetConfig, build_model, first_linear, resolve_experiment,
                              train_small_net)


def test_config_validation():
    with pytest.raises(ValueError, match="batch_size"):
        SmallNetConfig(batch_size=0)
    with pytest.raises(ValueError, match="model"):
        SmallNetConfig(model="resnet")
    with pytest.raises(ValueError, match="dataset"):
        SmallNetConfig(dataset="imagenet")
    with pytest.raises(ValueError, match="data_dir"):
        SmallNetConfig(dataset="cifar10")
    with pytest.raises(ValueError, match="init"):
        SmallNetConfig(init="xavier")
    with pytest.raises(ValueError, match="digits"):
        SmallNetConfig(model="minialexnet", dataset="digits")
    with pytest.raises(ValueError, match="repeats"):
        BatchSizeExperiment(repeats=0)
    with pytest.raises(ValueError, match="preset"):
        resolve_experiment("huge")


@pytest.mark.parametrize("model,dataset,fc1", [("minialexnet", "cifar10", (1000, 192 * 4 * 4)),
                                               ("minialexnet", "mnist5k", (1000, 192 * 3 * 3)),
                                               ("lenet", "mnist5k", (120, 400)), ("lenet", "cifar10", (120, 400))])
def test_architectures_and_fc1_shapes(model, dataset, fc1):
    cfg = SmallNetConfig(model=model, dataset=dataset, data_dir="/nonexistent")
    net = build_model(cfg)
    c, s = (3, 32) if dataset == "cifar10" else (1, 28)
    assert net(torch.zeros(2, c * s * s)).shape == (2, 10)
    assert tuple(first_linear(net).weight.shape) == fc1


def test_initialization_readings():
    # "std": N(0, 1/fan_in); "variance": N(0, sqrt(1/fan_in)), i.e. std fan_in^(-1/4)
    for init, expect in [("std", 400 ** -0.5), ("variance", 400 ** -0.25)]:
        torch.manual_seed(0)
        W = first_linear(build_model(SmallNetConfig(model="lenet", init=init))).weight.detach().numpy()
        assert W.std() == pytest.approx(expect, rel=0.02)


def test_training_is_deterministic_and_learns():
    cfg = SmallNetConfig(model="lenet", dataset="mnist5k", batch_size=50, epochs=2, n_train=600)
    a, b = train_small_net(cfg), train_small_net(cfg)
    assert a.weights.shape == (120, 400)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert a.train_acc > 0.5 and a.test_acc > 0.5  # well above chance (0.1) after 24 SGD steps
    assert a.gamma == pytest.approx(0.3)


def test_paper_preset_resolves_without_training():
    exp = resolve_experiment("paper", data_dir="/data/cifar-10-batches-py", epochs=3, batch_sizes=(7,))
    assert exp.models == ("minialexnet",) and exp.dataset == "cifar10"
    assert exp.batch_sizes == (1000, 800, 250, 100) and exp.repeats == 3 and exp.epochs == 200
    assert exp.n_train is None and exp.lr == 0.01 and exp.momentum == 0.9
    assert exp.data_dir == "/data/cifar-10-batches-py"
    cfgs = exp.configs()
    assert len(cfgs) == 12 and {c.seed for c in cfgs} == {0, 1, 2}
    assert all(c.model == "minialexnet" and c.epochs == 200 and c.n_train is None for c in cfgs)
    fc1 = first_linear(build_model(cfgs[0])).weight
    assert tuple(fc1.shape) == (1000, 3072) and 1000 / 3072 == pytest.approx(0.3255, abs=1e-4)
    with pytest.raises(ValueError, match="data_dir"):
        resolve_experiment("paper")


def test_book_preset_uses_the_chapter_parameters():
    exp = resolve_experiment("book", models=("lenet",), batch_sizes=(1000, 100), repeats=2, epochs=3)
    assert [(c.batch_size, c.seed) for c in exp.configs()] == [(1000, 0), (1000, 1), (100, 0), (100, 1)]
    assert math.isclose(exp.lr, 0.01) and exp.dataset == "mnist5k"
