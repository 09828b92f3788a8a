"""Bad input, every chapter and the environment (issue 55, item 9): each value is refused before any compute (the
dry run, which computes nothing, refuses it), with a message naming the parameter."""

from __future__ import annotations

from pathlib import Path

import pytest

from htlib import book, run

ROOT = Path(__file__).resolve().parent.parent

INT = ["2.7", "True", "nan", "inf", "1e30", "'3'", "-1", "[1]", "None", "10**9", "3\n4"]
FLOAT = ["nan", "inf", "-inf", "-1e400", "1e400", "True", "'0.5'", "None", "[0.5]", "0.5)", "__import__('os')"]
CHOICE = ["nope", "", "'d'", "d\nx", "d; import os", '"d"']
LIST = ["[]", "5", "[nan]", "[1, 'a']", "[[1]]", "[1e400]", "[True]", "(", "[-1]"]
EXECUTOR = ["threads", "tcp://", "tcp://host:99999", "tcp://a b:1", "tcp://host:8786/x", "process\n"]
WORKERS = ["0", "257", "256", "100", "-2", "2.0001"]

# (chapter, parameter, values): every chapter, each kind of parameter it has
CASES: list[tuple[str, str, list[str]]] = [
    ("mp_baseline", "h", INT), ("mp_baseline", "gammas", LIST + ["[0.5] * 13", "[1.5]"]),
    ("mp_baseline", "d", ["20001", "4"]), ("mp_baseline", "sweep_rows", ["[5]", "[5] * 13"]),
    ("phases", "bins", ["9", "1001", "80.5"]), ("phases", "small_d", ["301"]), ("phases", "workers", WORKERS),
    ("phases", "executor", EXECUTOR),
    ("spike_to_heavy_tail", "eta_gd", FLOAT), ("spike_to_heavy_tail", "device", CHOICE + ["gpu"]),
    ("spike_to_heavy_tail", "n", ["1000000000", "0"]), ("spike_to_heavy_tail", "steps", ["100000000", "1"]),
    ("one_step_adam", "seeds", INT[:6] + ["1", "21"]), ("one_step_adam", "readout", CHOICE),
    ("one_step_adam", "etas", LIST), ("one_step_adam", "scaling_ds", ["[250, 500]"]),
    ("one_step_adam", "ci_level", ["1", "0", "1.5"]), ("one_step_adam", "bias_correction", ["1", "'yes'", "None"]),
    ("one_step_adam", "workers", ["256"]),
    ("generalization", "lam", FLOAT[:7] + ["0", "-0.01", "-1e-3"]),
    ("generalization", "steplr_gammas", ["[1.5]", "[0]"]),
    ("generalization", "fig8cd_seeds", ["1", "2"]), ("generalization", "fig8a_seeds", ["2"]),
    ("generalization", "steps", ["100000"]), ("generalization", "n_boot", ["99", "100001"]),
    ("htmp", "gamma", ["1", "0", "nan"]), ("htmp", "dataset", CHOICE[:3]), ("htmp", "data_dir", ["/no/such/folder"]),
    ("htmp", "alex_widths", ["[96, 256]", "[96, 256, 192, 1]"]), ("htmp", "ntk_models", ["['resnet']", "[]"]),
    ("htmp", "epochs", ["100000000"]), ("htmp", "momentum", ["1", "-0.1"]),
    ("linear_hessian", "dataset", ["imagenet"]), ("linear_hessian", "top_k", ["1000000", "0"]),
    ("linear_hessian", "depths", ["[1000000]", "[0]"]), ("linear_hessian", "data_dir", ["/no/such/folder"]),
    ("linear_hessian", "aniso_ts", ["[0.5]", "[0, 2]"]), ("linear_hessian", "hessian_at", ["some"]),
    ("scoreboard", "source", ["/no/such/run", "book/index.md"]),
]
VALUES = [(stem, name, v) for stem, name, vs in CASES for v in vs]
UNKNOWN = [(stem, "nope", "1") for stem in ("mp_baseline", "phases", "spike_to_heavy_tail", "one_step_adam",
                                            "generalization", "htmp", "linear_hessian", "scoreboard")]


def test_the_suite_covers_every_chapter_with_at_least_100_values():
    chapters = {p.stem for p in (ROOT / "book").glob("*.ipynb")}
    assert {stem for stem, _, _ in VALUES} == chapters and len(VALUES) + len(UNKNOWN) >= 100


@pytest.mark.parametrize("stem, name, text", VALUES + UNKNOWN,
                         ids=[f"{s}-{n}-{t!r}" for s, n, t in VALUES + UNKNOWN])
def test_a_bad_value_is_refused_before_compute_naming_the_parameter(stem, name, text, tmp_path, capsys):
    code = run.main([f"book/{stem}.ipynb", "-p", name, text, "--dry-run", "--output-dir", str(tmp_path / "runs")])
    err = capsys.readouterr().err
    assert code == 2 and f"'{name}'" in err.splitlines()[0], err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("value", ["a-file", "a-file/under"])
def test_a_cache_folder_that_cannot_be_one_is_refused_naming_the_variable(value, tmp_path, monkeypatch, capsys):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("HTLIB_CACHE_DIR", str(tmp_path / value))
    assert run.main(["book/phases.ipynb", "--dry-run", "--output-dir", str(tmp_path / "runs")]) == 2
    assert "HTLIB_CACHE_DIR" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["inf", "0", "-5", "abc", "1.5", "99999999", "1e3", "60s", "6 0"])
def test_a_bad_cell_timeout_is_refused_naming_the_variable(value, monkeypatch):
    monkeypatch.setenv("HTLIB_CELL_TIMEOUT", value)
    with pytest.raises(book.BuildInputError, match="HTLIB_CELL_TIMEOUT"):
        book.cell_timeout()


@pytest.mark.parametrize("value", ["localhost:8786", "threads", "tcp://host:0"])
def test_a_bad_scheduler_variable_is_refused_naming_it(value, tmp_path, monkeypatch, capsys):
    from htlib import paper

    monkeypatch.setenv("HTLIB_SCHEDULER", value)
    assert paper.main(["--dry-run", "--output-dir", str(tmp_path / "p")]) == 2
    assert "HTLIB_SCHEDULER" in capsys.readouterr().err
