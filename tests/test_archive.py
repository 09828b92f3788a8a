"""Archived measurements (htlib.archive and make paper's --archive): the provenance is kept and checked, a record
is read only where the chapter's own runs did not reach, and a file from older code or without its provenance
decides nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htlib import archive, paper, run
from htlib.cache import source_hash
from htlib.claims import Measurement, Spec, judge

MODULE = "htlib.experiments.spike.measures"  # a real chapter module: its code hash is the one a chapter computes
SPEC = Spec("steps", "003", "§5", "it takes long", "first step", "in", (3000.0, 30000.0), "mean")
ARCHIVED = Measurement([5200.0, 6100.0, 4800.0], setting="paper", deviations=(),
                       parts={"p": Measurement([1.0, 2.0, 3.0])}, runs_text="3 seeds")


def _archive(folder: Path, m: Measurement = ARCHIVED, code_hash: str | None = None, stamped: bool = True) -> Path:
    path = archive.write(m, MODULE, "steps", source_hash(module=MODULE) if code_hash is None else code_hash, folder)
    if stamped:
        archive.stamp(path, parameters={"slow_budget": 30000}, command="make paper ARGS='...'", wall_s=7260.0)
    return path


def test_a_stamped_file_rebuilds_the_measurement_exactly(tmp_path):
    _archive(tmp_path)
    got = archive.read(MODULE, "steps", tmp_path)
    assert got.measurement == ARCHIVED
    assert set(got.provenance) == {"parameters", "command", "date", "machine", "wall_s", "commit"}
    assert got.provenance["commit"] == archive.version()
    assert got.provenance["parameters"] == {"slow_budget": 30000} and got.provenance["wall_s"] == 7260.0


def test_every_file_of_one_run_names_the_checkout_the_run_started_from(tmp_path):
    """make paper reads the commit before its first write into book/archive, so the files it writes after the first
    do not call that write an uncommitted edit."""
    path = _archive(tmp_path, stamped=False)
    archive.stamp(path, parameters={}, command="make paper ARGS='...'", wall_s=1.0, commit="0123abc")
    assert archive.read(MODULE, "steps", tmp_path).provenance["commit"] == "0123abc"


def test_the_archive_fills_a_row_the_run_did_not_reach_and_the_judge_reads_it(tmp_path):
    _archive(tmp_path)
    own = {"steps": Measurement.not_run("the default budget ends first"), "other": Measurement([1.0])}
    merged = archive.merge(own, MODULE, tmp_path)
    assert merged["other"] is own["other"]
    assert merged["steps"].values == ARCHIVED.values
    assert "archived run of" in merged["steps"].note and "not re-executed by CI" in merged["steps"].note
    record = judge(SPEC, merged["steps"])
    assert record.verdict == "agrees" and record.at_paper
    assert judge(SPEC, own["steps"]).verdict == "not tested"  # without the archive


def test_a_row_the_run_measured_keeps_its_own_numbers(tmp_path):
    _archive(tmp_path)
    own = {"steps": Measurement([100.0, 120.0, 90.0])}
    assert archive.merge(own, MODULE, tmp_path)["steps"] is own["steps"]


def test_a_file_from_older_code_decides_nothing(tmp_path):
    _archive(tmp_path, code_hash="0" * 64)
    merged = archive.merge({"steps": Measurement.not_run("too slow")}, MODULE, tmp_path)
    assert not merged["steps"].ran and "archived under older code" in merged["steps"].not_run_reason
    assert judge(SPEC, merged["steps"]).verdict == "not tested"


@pytest.mark.parametrize("damage", ["unstamped", "format", "key", "json", "field", "runs"])
def test_a_file_that_is_not_a_complete_record_is_refused(tmp_path, damage):
    path = _archive(tmp_path, stamped=damage != "unstamped")
    data = json.loads(path.read_text())
    if damage == "format":
        data["format"] = 99
    elif damage == "key":
        data["key"] = "other"
    elif damage == "field":
        data["measurement"]["weights"] = [1, 2]
    elif damage == "runs":
        data["runs"] = {"computed": -1, "from_cache": 3}
    path.write_text("{" if damage == "json" else json.dumps(data))
    with pytest.raises(archive.ArchiveError):
        archive.merge({"steps": Measurement.not_run("too slow")}, MODULE, tmp_path)


def test_the_kernel_writes_what_it_is_asked_and_refuses_an_unknown_row(tmp_path, monkeypatch):
    monkeypatch.setenv("HTLIB_ARCHIVE", "steps")
    own = {"steps": ARCHIVED, "other": Measurement([1.0])}
    assert archive.merge(own, MODULE, tmp_path) == own
    assert json.loads((tmp_path / "spike" / "steps.json").read_text())["code_hash"] == source_hash(module=MODULE)
    monkeypatch.setenv("HTLIB_ARCHIVE", "nope")
    with pytest.raises(ValueError, match="HTLIB_ARCHIVE names rows"):
        archive.merge(own, MODULE, tmp_path)
    monkeypatch.setenv("HTLIB_ARCHIVE", "steps")
    with pytest.raises(ValueError, match="nothing to archive"):
        archive.merge({"steps": Measurement.not_run("too slow")}, MODULE, tmp_path)


def test_a_resumed_run_says_how_many_of_its_runs_came_from_the_cache(tmp_path, monkeypatch):
    """The kernel records its sweeps' counts (htlib.sweep.tally): a run resumed from the result cache says that its
    wall time covers only what it computed; a file written before the counts were kept reads as before."""
    from htlib import sweep

    monkeypatch.setenv("HTLIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(sweep, "_TALLY", {"computed": 0, "from_cache": 0})
    monkeypatch.setattr(sweep, "_SEEN", set())
    sweep.run_sweep(abs, [-1.0, -2.0], progress=False)  # computed and stored by an earlier process
    monkeypatch.setattr(sweep, "_TALLY", {"computed": 0, "from_cache": 0})
    monkeypatch.setattr(sweep, "_SEEN", set())
    sweep.run_sweep(abs, [-1.0, -2.0, -3.0], progress=False)  # two from the cache, one computed
    sweep.run_sweep(abs, [-3.0, -2.0], progress=False)  # read again by this process: counted once
    assert sweep.tally() == {"computed": 1, "from_cache": 2}
    _archive(tmp_path)
    got = archive.read(MODULE, "steps", tmp_path)
    assert got.runs == {"computed": 1, "from_cache": 2}
    assert "it computed 1 of its 3 runs, the other 2 came from the result cache" in got.describe()
    path = tmp_path / "spike" / "steps.json"
    data = json.loads(path.read_text())
    del data["runs"]
    path.write_text(json.dumps(data))
    old = archive.read(MODULE, "steps", tmp_path)
    assert old.runs is None and "result cache" not in old.describe()


def test_code_edited_while_the_run_went_on_is_never_archived(tmp_path, monkeypatch):
    """The code hash is read from the files when the record is written, at the end of the run: a file of the
    chapter's runs or measures edited after the kernel loaded them would bind its numbers to code that did not
    compute them, so nothing is written."""
    monkeypatch.setattr(archive, "_LOADED", 0.0)  # as if every file had been edited after the kernel started
    with pytest.raises(archive.ArchiveError, match="edited while this run was going"):
        _archive(tmp_path)
    assert not (tmp_path / "spike").exists()
    monkeypatch.setattr(archive, "_LOADED", __import__("time").time() + 60.0)
    assert _archive(tmp_path).is_file()


def test_make_paper_refuses_a_bad_archive_request_before_any_compute(capsys):
    assert paper.main(["--dry-run", "--only", "spike_to_heavy_tail", "--archive", "nope"]) == 2
    assert "--archive" in capsys.readouterr().err
    assert paper.main(["--dry-run", "--only", "spike_to_heavy_tail,htmp", "--archive", "steps-01"]) == 2
    assert "exactly one chapter" in capsys.readouterr().err
    assert paper.main(["--dry-run", "--only", "spike_to_heavy_tail", "--archive", "steps-01"]) == 0


@pytest.mark.parametrize("fails", [False, True])
def test_make_paper_stamps_and_files_the_record_only_after_the_chapter_finished(tmp_path, monkeypatch, fails):
    book_archive = tmp_path / "archive"
    monkeypatch.setattr(archive, "ARCHIVE_DIR", book_archive)

    def chapter(path, overrides, **kw):  # the kernel's side: the chapter's claims() with the inherited variables
        archive.merge({"steps": ARCHIVED}, MODULE, Path(archive.archive_dir()))
        if fails:
            raise run.RunFailed("a later cell failed")
        return path

    monkeypatch.setattr(run, "run_chapter", chapter)
    call = lambda: paper._archived_run(Path("book/spike_to_heavy_tail.ipynb"), {"slow_budget": 30000},  # noqa: E731
                                       ["steps"], tmp_path / "runs", ["--archive", "steps"])  # not made yet
    if fails:
        with pytest.raises(run.RunFailed):
            call()
        assert not book_archive.exists()
    else:
        call()
        got = archive.read(MODULE, "steps", book_archive)
        assert got.measurement == ARCHIVED and got.provenance["parameters"] == {"slow_budget": 30000}
        assert got.provenance["command"] == "make paper ARGS='--archive steps'"
    assert not list(tmp_path.glob("runs/archive-*"))  # the staging folder is gone either way
    assert "HTLIB_ARCHIVE" not in __import__("os").environ
