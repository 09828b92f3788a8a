"""Training throughput of the HTMP chapter's small nets, as a fraction of the one-thread
convolution / GEMM rate measured in the same run.

Run: ``OMP_NUM_THREADS=1 python benchmarks/bench_small_nets.py``.  Prints a markdown table, with
the load average (``os.getloadavg``) beside every figure: on a shared machine an absolute rate
means little, the fraction of the same-run baseline rate is what carries over.

Per model and batch size (LeNet and MiniAlexNet on 28x28 inputs, batches 100 and 1000) it times
full SGD steps (forward, backward, momentum update) with one thread, in the channels-last format
the chapter uses and in the default format, and converts images/s to FLOP/s with the model's
analytic cost (forward multiply-adds of every conv and linear layer x 2 FLOPs, x 3 for forward
plus backward).  Baselines, one thread each: a float32 GEMM (``n x n @ n x n``, n = 1024) and a
float32 convolution of MiniAlexNet's second block (96 -> 256 channels, 5x5, 14x14 maps, batch 100)
timed forward only.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_line, timeit, today  # noqa: E402

from htlib.small_nets import SmallNetConfig, build_model  # noqa: E402


def load() -> str:
    return "/".join(f"{v:.1f}" for v in os.getloadavg())


def forward_flops(model: nn.Module, shape) -> float:
    """FLOPs of one forward pass of one image: 2 x multiply-adds of every conv and linear layer."""
    total = 0.0

    def hook(m, inp, out):
        nonlocal total
        if isinstance(m, nn.Conv2d):
            total += 2.0 * out[0].numel() * m.in_channels * m.kernel_size[0] * m.kernel_size[1] / m.groups
        elif isinstance(m, nn.Linear):
            total += 2.0 * m.in_features * m.out_features

    hs = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    with torch.no_grad():
        model(torch.zeros(1, *shape))
    for h in hs:
        h.remove()
    return total


def step_rate(model_name: str, batch: int, channels_last: bool, steps: int) -> float:
    """Images per second of full SGD steps."""
    torch.manual_seed(0)
    model = build_model(SmallNetConfig(model=model_name, batch_size=batch))
    X = torch.randn(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        X = X.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(X), y).backward()
        opt.step()

    step()  # warm-up: oneDNN picks its kernels on the first call
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return batch * steps / (time.perf_counter() - t0)


def main() -> None:
    torch.set_num_threads(1)
    print(f"Small-net training throughput, {today()}, {machine_line()}, one thread\n")
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    gemm = 2 * 1024**3 / timeit(lambda: a @ b, repeats=5)
    gemm_load = load()
    conv = nn.Conv2d(96, 256, 5, padding=2)
    x = torch.randn(100, 96, 14, 14)
    conv_cl, x_cl = conv.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        t_conv = timeit(lambda: conv_cl(x_cl), repeats=3)
    conv_rate = 2.0 * 100 * 256 * 14 * 14 * 96 * 25 / t_conv
    conv_load = load()
    print(f"baselines: GEMM 1024 fp32 {gemm / 1e9:.1f} GFLOP/s (load {gemm_load}); conv 96->256 5x5 14x14 "
          f"channels-last fp32 forward {conv_rate / 1e9:.1f} GFLOP/s (load {conv_load})\n")
    print("| model | batch | format | FLOP/image (fwd+bwd) | images/s | GFLOP/s | / GEMM | / conv | load (1/5/15 min) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in ("lenet", "minialexnet"):
        f = 3.0 * forward_flops(build_model(SmallNetConfig(model=name)), (1, 28, 28))
        for batch in (100, 1000):
            for cl in (True, False):
                steps = (30 if batch == 100 else 4) if name == "lenet" else (4 if batch == 100 else 1)
                rate = step_rate(name, batch, cl, steps)
                print(f"| {name} | {batch} | {'channels-last' if cl else 'default'} | {f / 1e6:.1f} M | {rate:,.0f} | "
                      f"{rate * f / 1e9:.2f} | {rate * f / gemm:.2f} | {rate * f / conv_rate:.2f} | {load()} |", flush=True)


if __name__ == "__main__":
    main()
