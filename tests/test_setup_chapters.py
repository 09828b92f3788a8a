"""Every chapter on its Setup: the parameters cell is the declaration's, the declared extremes hold, the
chapters run at their smallest valid values, no chapter builds an executor of its own, and a sweep on a
Dask cluster gives the same claims as one on local processes."""

from __future__ import annotations

import ast
import json
import math
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from htlib import book, run
from htlib.records import read_claims
from htlib.experiments import INT_MAX, ParameterError

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = [p for p in book.chapters(ROOT) if p.stem != "scoreboard"]
SETUP_CHAPTERS = [p for p in CHAPTERS if run.chapter_setup(p) is not None]
SPURIOUS = ("Unable to parse line", "Passed unknown parameter", "TCP without encryption", "Traceback")


def _ids(paths):
    return [p.stem for p in paths]


def test_the_migrated_chapters_have_a_setup():
    assert {"mp_baseline", "phases"} <= {p.stem for p in SETUP_CHAPTERS}


@pytest.mark.parametrize("path", SETUP_CHAPTERS, ids=_ids(SETUP_CHAPTERS))
def test_parameters_cell_is_generated_from_the_setup(path):
    setup = run.chapter_setup(path)
    nb = nbformat.read(str(path), as_version=4)
    (cell,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert cell.source == setup.parameters_cell(), (
        f"{path.name}: regenerate its parameters cell with print({setup.__module__}.Setup.parameters_cell())")
    nxt = nb.cells[nb.cells.index(cell) + 1]
    assert re.search(r"^setup = \w+\.Setup\.from_namespace\(globals\(\)\)", nxt.source, re.M), (
        f"{path.name}: the cell after the parameters builds the setup")
    module = sys.modules[setup.__module__]
    assert isinstance(module.PAPER, setup)
    ns: dict = {}
    exec(cell.source, ns)
    assert setup.from_namespace(ns) == setup()


def _extremes(spec):
    """(accepted, refused) values for one declared parameter, from its declaration alone."""
    m, kind = spec.meta, spec.scalar
    ok, bad = [], [None, "x"] if kind is not str else [None, 1]
    if kind in (int, float):
        step = 1 if kind is int else 1e-9
        for bound, inside in ((m.ge, True), (m.le, True), (m.gt, False), (m.lt, False)):
            if bound is None:
                continue
            if inside:
                ok.append(bound)
            else:
                ok.append(bound + step if bound is m.gt else bound - step)
        for bound, out in ((m.ge, -step), (m.gt, 0), (m.le, step), (m.lt, 0)):
            if bound is not None:
                bad.append(bound + out)
        bad += [math.inf, -math.inf, math.nan, True]
        if kind is int:
            bad += [2.7, 10**20, INT_MAX + 1, -INT_MAX - 1]
    if kind is bool:
        ok += [True, False]
        bad += [0, 1]
    if m.choices is not None:
        ok += list(m.choices)
        bad.append("no-such-choice" if kind is str else -12345)
    return ok, bad


SPECS = [(p, s) for p in SETUP_CHAPTERS for s in run.chapter_setup(p).parameters()]


@pytest.mark.parametrize("path, spec", SPECS, ids=[f"{p.stem}.{s.name}" for p, s in SPECS])
def test_declared_extremes_and_one_step_outside(path, spec):
    ok, bad = _extremes(spec)
    lo = 1 if spec.meta.min_len is None else spec.meta.min_len
    wrap = (lambda v: [v] * max(lo, 1)) if spec.is_list else (lambda v: v)
    for value in ok:
        got = spec.coerce(wrap(value))
        assert got == (tuple(got) if spec.is_list else got)
    for value in bad:
        with pytest.raises(ParameterError, match=f"parameter '{spec.name}'"):
            spec.coerce(wrap(value))
    if spec.is_list:
        if lo >= 1:  # one entry short of the declared length
            with pytest.raises(ParameterError, match=f"parameter '{spec.name}' must be a list of"):
                spec.coerce(list(spec.default)[: lo - 1])
        if spec.meta.max_len is not None:
            with pytest.raises(ParameterError, match=f"parameter '{spec.name}' must be a list of"):
                spec.coerce(list(spec.default) * (spec.meta.max_len + 1))


# The smallest valid setting of each migrated chapter: every count at its declared minimum, except where a
# rule between parameters asks for more (said beside the value).
SMALLEST = {
    "mp_baseline": {"h": 5, "d": 5, "seed": 0, "w0_draws": 1, "gamma_rows": 5, "sweep_seeds": 1, "bins": 10,
                    "gammas": [1.0],       # gamma x gamma_rows needs 5 columns: gamma_rows 5 takes gamma 1
                    "sweep_rows": [5, 6]},  # two different sizes for the slope
    "phases": {"h": 60, "d": 60, "seed": 0, "confusion_seeds": 1, "small_h": 60, "small_d": 60,
               "small_seeds": 1, "bins": 10, "workers": 1},
    "spike_to_heavy_tail": {"n": 1, "d": 10, "h": 10, "steps": 2, "block": 2, "etas_adam_track": [0.1],
                            "etas_gd_track": [1000.0], "etas_review": [0.5], "appA_n": 1, "appA_d": 10,
                            "appA_h": 10, "ht_steps": 2, "slow_budget": 1, "slow_record_every": 1, "slow_seeds": 1,
                            "seeds": 1, "workers": 1},
    "one_step_adam": {"n": 1, "d": 10, "h": 10, "n_test": 1, "etas": [0.1], "seeds": 2, "fig2_gd_etas": [0.1],
                      "fig2_adam_etas": [0.1], "scaling_h": 8, "scaling_ds": [8, 9, 10], "scaling_hs": [8, 9, 10],
                      "scaling_seeds": 1, "workers": 1},
    "generalization": {"n": 1, "d": 10, "h": 10, "n_test": 1, "steps": 1, "etas": [0.1], "seeds": 2, "fig8_seeds": 1,
                       "fig8a_seeds": 1, "fig8a_n_test": 1, "fig8cd_seeds": 1,
                       "ns": [1], "lams": [0.1], "rhos": [0.1], "steplr_gammas": [0.2], "n_boot": 100, "workers": 1},
    "htmp": {"kappas": [0.5], "gammas": [0.5], "check_kappas": [0.5], "mp_kappas": [2.0], "sampler_ns": [2],
             "tail_n": 10, "batch_sizes": [1], "repeats": 1, "epochs": 1, "n_train": 10, "alex_repeats": 1,
             "alex_epochs": 1, "alex_n_train": 10, "alex_n_test": 1, "alex_widths": [1, 1, 2], "noise_seeds": 1,
             "init_batch": 1, "init_repeats": 1, "phase_n": 10, "traj_n": 1, "traj_d": 10, "traj_h": 11,
             "traj_steps": 2, "ntk_models": ["logistic"], "ntk_n": 10, "ntk_epochs": 1, "ntk_batch": 1,
             "ntk_gammas": [0.1], "ntk_boot": 1, "ntk_seeds": 1, "ntk_logistic_seeds": 1, "kappa_boot": 10,
             "workers": 1},
    "linear_hessian": {"n": 10, "epochs": 2, "tanh_epochs": 1, "held4_epochs": 1, "measure_points": 1, "trace_points": 2, "top_k": 1,
                       "hutchinson_probes": 2, "majority_shares": [0.1], "sizes": [10], "seeds": 1, "subsets": 2,
                       "tanh_seeds": 1, "depths": [1], "sigma_xs": [1.0], "aniso_ts": [0.0, 1.0],
                       "converged_epochs": 1,  # 0 turns the held runs of Figs. 1-2 off: 1 runs them
                       "n_imbalanced": 10,  # 0: the largest subset at these shares (all 5,000 images)
                       "workers": 1},
}

ABOVE_MINIMUM = {  # smallest settings above a declared minimum, and why the minimum itself is not the smallest run
    ("linear_hessian", "n"): "n = 0 means every image; 10 is the smallest balanced subset of 10 classes",
    ("linear_hessian", "epochs"): "trace_points needs at least 2 epochs",
    ("linear_hessian", "converged_epochs"): "0 turns the held runs of Figs. 1-2 off; 1 is the smallest that runs them",
    ("linear_hessian", "n_imbalanced"): "0 means the largest subset at the shares (all 5,000 images at 0.1); 10 is "
                                        "the smallest with a share of 0.1 for each of 10 classes",
}

NOT_A_COUNT = {"seed", "ntk_first"}  # integer parameters that are no size or count (a seed, a seed offset): the smallest setting may leave them

REFUSED_BELOW = {  # one step under a declared minimum, or past a cross-field rule, per chapter
    "mp_baseline": (("d", 6), ("gamma_rows", 4), ("sweep_rows", [5, 5]), ("gammas", [0.5])),
    "phases": (("d", 61), ("small_d", 61), ("small_h", 59)),
    "spike_to_heavy_tail": (("d", 9), ("h", 9), ("appA_d", 9), ("block", 11), ("steps", 1), ("seeds", 0),
                            ("slow_seeds", 0)),
    "one_step_adam": (("d", 9), ("h", 9), ("seeds", 1), ("scaling_ds", [8, 9])),
    "generalization": (("d", 9), ("h", 9), ("seeds", 1)),
    "htmp": (("traj_d", 11), ("traj_h", 10), ("alex_widths", [1, 1, 1]), ("tail_n", 9)),
    "linear_hessian": (("aniso_ts", [0.0]), ("trace_points", 3), ("subsets", 1)),
}


@pytest.mark.parametrize("stem", sorted(SMALLEST))
def test_the_smallest_setting_is_valid_and_at_the_declared_minima(stem):
    setup = run.chapter_setup(ROOT / "book" / f"{stem}.ipynb")
    values = SMALLEST[stem]
    s = setup().replace(**values)
    for spec in setup.parameters():
        # every count is set here: one left at its default (as were, until issue 40, htmp's 4 seeds x 19 NTK
        # goodness-of-fit refits and linear_hessian's 5,000-image imbalance sweeps) makes the smallest run a slow one
        if spec.scalar is int and spec.meta.choices is None and spec.name not in NOT_A_COUNT:
            assert spec.name in values, f"{stem}.{spec.name}: a count the smallest setting leaves at its default"
        if (spec.name in values and spec.scalar is int and not spec.is_list and spec.meta.ge is not None
                and (stem, spec.name) not in ABOVE_MINIMUM):
            assert values[spec.name] == spec.meta.ge, f"{stem}.{spec.name}: not its declared minimum"
    assert s.differs_from_default()
    for name, value in REFUSED_BELOW[stem]:
        with pytest.raises(ParameterError, match=f"parameter '{name}'"):
            s.replace(**{name: value})


def _rerun(stem: str, overrides: dict, out_dir: Path, cache: Path) -> tuple[Path, subprocess.CompletedProcess]:
    args = [a for name, value in overrides.items()
            for a in ("-p", name, value if isinstance(value, str) else json.dumps(value))]
    env = {**os.environ, "HTLIB_CACHE_DIR": str(cache), "TQDM_DISABLE": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "htlib.run", f"book/{stem}.ipynb", *args, "--output-dir",
                           str(out_dir), "--no-html"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    decl = run.declared_parameters(ROOT / "book" / f"{stem}.ipynb")
    return run.output_path(decl.notebook, decl.check(overrides), out_dir), proc


@pytest.fixture(scope="module")
def smallest_run(tmp_path_factory):
    """``smallest_run(stem)``: (executed notebook, finished process) of the chapter rerun at SMALLEST[stem], each
    with its own empty result cache (so it computes), run once per module: the phases run is also the process run of
    test_a_rerun_on_a_dask_cluster_gives_the_claims_of_the_process_run (--dist loadfile keeps this file on one
    worker)."""
    done: dict[str, tuple[Path, subprocess.CompletedProcess]] = {}

    def get(stem: str) -> tuple[Path, subprocess.CompletedProcess]:
        if stem not in done:
            tmp = tmp_path_factory.mktemp(f"smallest-{stem}")
            done[stem] = _rerun(stem, SMALLEST[stem], tmp / "runs", tmp / "cache")
        return done[stem]
    return get


@pytest.mark.slow
@pytest.mark.parametrize("stem", sorted(SMALLEST))
def test_each_chapter_runs_at_its_smallest_setting_without_spurious_warnings(stem, smallest_run):
    out, proc = smallest_run(stem)
    assert not [w for w in SPURIOUS if w in proc.stderr + proc.stdout], proc.stderr[-3000:]
    assert read_claims(out), f"{stem} at its smallest setting published no claims"


def _text_outputs(notebook: Path) -> list[str]:
    nb = nbformat.read(str(notebook), as_version=4)
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            if o.get("name") == "stderr":
                continue
            text = o.get("text") or o.get("data", {}).get("text/plain") or ""
            out.append(text if isinstance(text, str) else "".join(text))
    return out


def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", text)]


@pytest.mark.slow
def test_a_rerun_on_a_dask_cluster_gives_the_claims_of_the_process_run(tmp_path, smallest_run):
    """phases through htlib.run, once on local worker processes, once on a LocalCluster's scheduler
    address, each with its own empty result cache (so both compute).  The process run is the smallest-setting
    test's (SMALLEST["phases"]: executor at its default, "process", on one worker), shared."""
    import distributed
    small = SMALLEST["phases"]
    s = run.chapter_setup(ROOT / "book" / "phases.ipynb")().replace(**small)
    assert "executor" not in small and (s.executor, s.workers) == ("process", 1)
    local, _ = smallest_run("phases")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://127.0.0.1:")
        remote, proc = _rerun("phases", {**small, "executor": address}, tmp_path / "runs", tmp_path / "cache-dask")
        # the cluster did the work: its worker ran the labelled cases
        assert "run_phase_case" in cluster.scheduler.task_prefixes
    a, b = read_claims(local), read_claims(remote)
    assert len(a) == len(b) == 7
    for x, y in zip(a, b):
        assert (x.claim, x.verdict) == (y.claim, y.verdict)
        nx, ny = _numbers(x.measured), _numbers(y.measured)
        assert len(nx) == len(ny) and all(math.isclose(u, v, rel_tol=1e-9, abs_tol=0) for u, v in zip(nx, ny))
    # the whole printed record (tables, glued numbers) is the same: the chapter is deterministic
    assert _text_outputs(local) == _text_outputs(remote)
    assert not [w for w in SPURIOUS if w in proc.stderr], proc.stderr[-3000:]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("how", ["flag", "env"])
def test_paper_dry_run_refuses_a_scheduler_that_does_not_answer(how, tmp_path):
    import distributed  # noqa: F401
    address = f"tcp://127.0.0.1:{_free_port()}"
    args, env = ["--scheduler", address], dict(os.environ)
    if how == "env":
        args, env["HTLIB_SCHEDULER"] = [], address
    proc = subprocess.run([sys.executable, "-m", "htlib.paper", "--dry-run", "--output-dir", str(tmp_path / "p"),
                           *args], capture_output=True, text=True, cwd=ROOT, env=env)
    assert proc.returncode == 2
    assert f"no Dask scheduler answers at {address}" in proc.stderr and "dask scheduler" in proc.stderr
    assert "make paper:" not in proc.stdout  # refused before the plan


def test_paper_dry_run_with_a_live_scheduler_scales_the_estimates(tmp_path, capsys, monkeypatch):
    import distributed
    from htlib import paper

    monkeypatch.delenv("HTLIB_SCHEDULER", raising=False)
    with distributed.LocalCluster(n_workers=4, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        assert paper.main(["--dry-run", "--output-dir", str(tmp_path / "p"), "--only", "phases, mp_baseline",
                           "--scheduler", address]) == 0
    printed = capsys.readouterr().out
    assert "the 4 Dask worker(s)" in printed and f"executor='{address}'" in printed
    phases_line = next(line for line in printed.splitlines() if line.strip().startswith("phases"))
    minutes = float(re.search(r"~\s*([0-9.]+) min", phases_line).group(1))
    expected = paper.estimate_minutes("phases") * paper.LOCAL_WORKERS / 4
    assert minutes == pytest.approx(expected, abs=0.05)
    assert "without the scheduler: mp_baseline" in printed  # it has no sweep to send


# --------------------------------------------------------------------------- one executor option

_OWN_EXECUTOR = {"ProcessPoolExecutor", "ThreadPoolExecutor", "process_executor", "make_executor", "Client",
                 "LocalCluster"}


def _own_executors(source: str) -> list[str]:
    """Names of executor constructors the code calls, imports or defines (docstrings and prose ignored)."""
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    tree = ast.parse("\n".join(lines))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in _OWN_EXECUTOR:
                found.append(f"calls {name}")
        elif isinstance(node, ast.ImportFrom):
            found += [f"imports {a.name}" for a in node.names if a.name in _OWN_EXECUTOR]
        elif isinstance(node, ast.FunctionDef) and node.name in _OWN_EXECUTOR:
            found.append(f"defines {node.name}")
    return found


def _chapter_sources(path: Path) -> dict[str, str]:
    nb = nbformat.read(str(path), as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    out = {path.name: code}
    for module in re.findall(r"^\s*from\s+htlib\.experiments\s+import\s+(\w+)", code, re.M):
        for file in sorted((ROOT / "htlib" / "experiments" / module).glob("*.py")):  # compute, reading
            out[file.relative_to(ROOT).as_posix()] = file.read_text(encoding="utf-8")
        assert len(out) > 1, f"htlib/experiments/{module}/ holds no module"
    return out


NOT_YET_ON_THE_EXECUTOR_OPTION: set[str] = set()
"""Chapters that still build their own executor (they move onto SweepSetup in their own issues)."""


@pytest.mark.parametrize("path", [
    pytest.param(p, marks=pytest.mark.xfail(strict=False, reason=(
        f"not yet on the one executor option: {', '.join(sorted(NOT_YET_ON_THE_EXECUTOR_OPTION))}")))
    if p.stem in NOT_YET_ON_THE_EXECUTOR_OPTION else p for p in CHAPTERS], ids=_ids(CHAPTERS))
def test_no_chapter_builds_an_executor_of_its_own(path):
    """Executors come from htlib.sweep.executor_for (through Setup.executor_context) alone."""
    offences = {name: found for name, src in _chapter_sources(path).items() if (found := _own_executors(src))}
    assert not offences, f"{path.stem} builds its own executor: {offences}"


def test_the_executor_check_can_fail():
    assert _own_executors("from htlib.sweep import process_executor\nwith process_executor(2) as p:\n    pass")
    assert _own_executors("pool = exp.make_executor(executor, workers)")
    assert not _own_executors('"""ProcessPoolExecutor in a docstring"""\nwith setup.executor_context() as pool:\n'
                              "    pass")


# The sizes and counts a user once could set to values no machine runs (issue 40): each is refused at once, before
# any compute, by the Setup's memory and time estimate or by a rule between fields, naming the parameter.
TOO_LARGE = [("spike_to_heavy_tail", "n", 10**9), ("spike_to_heavy_tail", "steps", 10**8),
             ("htmp", "epochs", 10**8), ("htmp", "batch_sizes", [100_000]), ("htmp", "ntk_seeds", 10**5),
             ("linear_hessian", "n", 10**7), ("linear_hessian", "top_k", 10**8)]


@pytest.mark.parametrize("stem, name, value", TOO_LARGE, ids=[f"{s}-{n}" for s, n, _ in TOO_LARGE])
def test_a_size_no_machine_runs_is_refused_at_once_naming_the_parameter(stem, name, value):
    import time
    setup = run.chapter_setup(ROOT / "book" / f"{stem}.ipynb")
    start = time.perf_counter()
    with pytest.raises(ParameterError, match=rf"parameter '{name}'"):
        setup(**{name: value})
    assert time.perf_counter() - start < 5.0


@pytest.mark.parametrize("path", SETUP_CHAPTERS, ids=_ids(SETUP_CHAPTERS))
def test_the_defaults_and_the_paper_preset_fit_the_limits(path):
    import importlib
    from htlib.params import MEMORY_LIMIT, TIME_LIMIT
    setup = run.chapter_setup(path)
    paper = importlib.import_module(setup.__module__).PAPER
    for s in (setup(), paper):
        for cost in s.costs():
            assert cost.memory <= MEMORY_LIMIT / 4 and cost.seconds <= TIME_LIMIT / 4, (path.stem, cost)
