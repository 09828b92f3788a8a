"""What pinning the arithmetic costs: the chapters' kernels with and without each pin, as ratios in one run.

The regression and the book may pin the instruction-set branch of the vector libraries (``ARITH`` in the
Makefile), so that every x86 machine that can run the branch computes what the others compute.  A pin is
only worth it if it costs no measurable time (CI runs at its time limit), so each candidate is timed here
against the machine as it is, in child processes (the libraries read these variables once, at load), the
variants interleaved round by round so that a change of load hits them all alike.  Each child runs on one
thread (what the chapters' pool workers run) and is timed in CPU time, the least over the rounds (what another
process's load inflates least):

* an fp32 GEMM (1024 x 1024, torch, MKL's sgemm): the two-layer and linear networks' training;
* a short training loop of a small convolutional net (LeNet-like, 32 x 32 inputs, batch 64, SGD, 30 steps after 3
  warm-up steps:
  oneDNN's convolutions, torch's own vector kernels for activations, pooling and the optimizer);
* a float64 symmetric eigendecomposition (500 x 500, ``torch.linalg.eigvalsh``: MKL's LAPACK), what the
  chapters' spectra and Hessians use.

Each child also prints a checksum of the trained weights: a pin that changes it changes the arithmetic
(the variant simulates another processor); one that leaves it equal is what this machine already runs.

Run: ``python benchmarks/bench_arith_pins.py [rounds]``; prints a markdown table.

Measured 2026-12-06 08:36-08:40 UTC, AMD EPYC (AVX2, no AVX-512), 2 cores, torch 2.13.0+cpu, 3 rounds, load average
5.9 (two chapter runs and a test suite beside it; CPU time on one thread, so the load moves the ratios little: the
"as is, again" row shows how little)::

    variant                       capability  GEMM  training loop  eigvalsh  trained weights  GEMM result
    as is                         AVX2        1.00  1.00           1.00      same             same
    as is, again (the noise)      AVX2        1.04  0.96           1.01      same             same
    ATEN_CPU_CAPABILITY=avx2      AVX2        1.04  1.01           1.03      same             same
    ATEN_CPU_CAPABILITY=default   DEFAULT     1.01  1.33           1.02      differ           differ
    ONEDNN_MAX_CPU_ISA=AVX2       AVX2        1.02  0.88           0.97      same             same
    MKL_CBWR=AVX2                 AVX2        0.96  0.95           1.00      same             same
    MKL_CBWR=AUTO                 AVX2        1.02  0.95           0.99      same             same
    MKL_CBWR=COMPATIBLE           AVX2        3.33  0.93           1.26      differ           differ
    the pins together             AVX2        0.99  0.91           0.98      same             same

(as is: GEMM 23.7 ms, the loop 336 ms, eigvalsh 18.8 ms).  The pins (the Makefile's ``ARITH``) cost nothing measurable
here: within the noise of the repeated baseline, 4%.  On this AVX2 processor ATEN and oneDNN at AVX2 are what it runs
anyway (the same weights), and one-thread MKL gives the same weights in CNR mode; with two threads ``MKL_CBWR=AVX2``
changed them (a first run, 2026-12-06 07:59).  ``MKL_CBWR=COMPATIBLE`` (MKL's SSE2 branch) makes the GEMM 3.3x
slower: not pinned.  ``ATEN_CPU_CAPABILITY=default`` (torch's scalar kernels, CI's second variant) makes the training
loop 1.33x slower.  Not measured: the pins on an AVX-512 processor, where ATEN, oneDNN and MKL would otherwise take
their AVX-512 kernels (the Intel Xeon of the references); measure there before trusting CI's time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

VARIANTS: dict[str, dict[str, str]] = {
    "as is": {},
    "as is, again (the noise of the ratios)": {},
    "ATEN_CPU_CAPABILITY=avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "ATEN_CPU_CAPABILITY=default": {"ATEN_CPU_CAPABILITY": "default"},
    "ONEDNN_MAX_CPU_ISA=AVX2": {"ONEDNN_MAX_CPU_ISA": "AVX2"},
    "MKL_CBWR=AVX2": {"MKL_CBWR": "AVX2"},
    "MKL_CBWR=AUTO": {"MKL_CBWR": "AUTO"},
    "MKL_CBWR=COMPATIBLE": {"MKL_CBWR": "COMPATIBLE"},
    "the pins together": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2"},
}
_CLEARED = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "MKL_CBWR")

CHILD = r"""
import json, time, hashlib, torch
from torch import nn

clock = time.process_time  # CPU time of this one-thread process: what another process's load changes least

def best(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t0 = clock(); fn(); times.append(clock() - t0)
    return min(times)

g = torch.Generator().manual_seed(0)
a, b = torch.randn(1024, 1024, generator=g), torch.randn(1024, 1024, generator=g)
gemm = best(lambda: a @ b, 10)

torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(3, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                    nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                    nn.Linear(84, 10))
x, y = torch.randn(64, 3, 32, 32, generator=g), torch.randint(0, 10, (64,), generator=g)
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
def train(steps):
    for _ in range(steps):
        opt.zero_grad(); loss = loss_fn(net(x), y); loss.backward(); opt.step()
train(3)  # oneDNN builds its primitives at the first calls
t0 = clock(); train(30); loop = clock() - t0
digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in net.parameters())).hexdigest()[:12]

s = torch.randn(500, 500, generator=g, dtype=torch.float64); s = s + s.T
eig = best(lambda: torch.linalg.eigvalsh(s), 5)
gemm_digest = hashlib.sha256((a @ b).numpy().tobytes()).hexdigest()[:12]
print(json.dumps({"gemm": gemm, "loop": loop, "eig": eig, "weights": digest, "product": gemm_digest,
                  "capability": torch.backends.cpu.get_cpu_capability()}))
"""


def child(env_extra: dict[str, str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")  # CPU time measures the kernels only on one thread
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(rounds: int = 5) -> None:
    from _common import machine_line, today

    runs: dict[str, list[dict]] = {name: [] for name in VARIANTS}
    load0 = os.getloadavg()[0]
    child({})  # warms the file cache: the first process to import torch is slower than the rest
    for _ in range(rounds):
        for name, extra in VARIANTS.items():
            runs[name].append(child(extra))
    base = {k: min(r[k] for r in runs["as is"]) for k in ("gemm", "loop", "eig")}
    print(f"{today()}, {machine_line()}, one thread, CPU time, the least of "
          f"{rounds} interleaved rounds, load average {load0:.2f} at the start, {os.getloadavg()[0]:.2f} at the end\n")
    print("| variant | torch capability | GEMM time / as is | training loop / as is | eigvalsh / as is "
          "| trained weights | GEMM result |\n|---|---|---:|---:|---:|---|---|")
    ref = runs["as is"][0]
    for name, rs in runs.items():
        med = {k: min(r[k] for r in rs) for k in ("gemm", "loop", "eig")}
        same_w = "same" if all(r["weights"] == ref["weights"] for r in rs) else "differ"
        same_p = "same" if all(r["product"] == ref["product"] for r in rs) else "differ"
        print(f"| {name} | {rs[0]['capability']} | {med['gemm'] / base['gemm']:.2f} | {med['loop'] / base['loop']:.2f} "
              f"| {med['eig'] / base['eig']:.2f} | {same_w} | {same_p} |")
    print(f"\nas is: GEMM {base['gemm'] * 1e3:.1f} ms, training loop {base['loop'] * 1e3:.0f} ms, "
          f"eigvalsh {base['eig'] * 1e3:.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
