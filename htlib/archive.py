"""Archived measurements: what a run too slow for CI measured, kept in the book with its provenance.

A claim whose runs take hours (the paper's full setting) is measured once by ``make paper`` and its per-run numbers
(a :class:`~htlib.claims.Measurement`, never weights) are kept as a small JSON file under ``book/archive/``::

    make paper ARGS='--only spike_to_heavy_tail --archive steps-01'

The chapter then reads that file in place of its own, smaller measurement, and its record says so: "archived run of
<date>, not re-executed by CI", with the parameters, the machine and the wall time.  The file is bound to the code
that measured it: the result-cache hash of the chapter's reading module and of everything it imports (its runs and
measures, :func:`htlib.cache.source_hash`; the judge and the page are left out, so a level or a sentence edited
later re-judges the archived numbers).  Once that code changes, the record reads "archived under older code" and
decides nothing until ``make paper`` archives it again.

Two processes write one file.  The chapter's kernel, asked through ``HTLIB_ARCHIVE`` (the keys) and
``HTLIB_ARCHIVE_DIR`` (the folder), writes the measurement and the code hash (:func:`merge`); ``make paper``, which
knows the parameters, the command and the wall time, completes the provenance once the chapter has finished
(:func:`stamp`).  A file without that stamp is refused: a record must say where it comes from.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any, Mapping

from htlib.cache import _PACKAGE_DIR, _result_files, atomic_write, source_hash
from htlib.claims import Measurement
from htlib.sweep import tally

_REPO = Path(__file__).resolve().parent.parent

__all__ = ["ARCHIVE_DIR", "FORMAT", "Archived", "ArchiveError", "archive_dir", "requested", "merge", "stamp",
           "read", "machine", "version"]

ARCHIVE_DIR = Path(__file__).resolve().parent.parent / "book" / "archive"
FORMAT = 1
"""The file layout's version; a file of another version is refused, never guessed at."""
_PROVENANCE = ("parameters", "command", "date", "machine", "wall_s")
_LOADED = time.time()
"""When this process imported the archive (with the chapter's code): the hash a record is bound to is read from the
files at the end of the run, so a file edited after this makes the run's numbers another code's and is refused."""


class ArchiveError(ValueError):
    """An archive file that cannot be read as a record: damaged, of another format, or without its provenance."""


@dataclasses.dataclass(frozen=True)
class Archived:
    """One archived measurement and where it comes from.

    Attributes
    ----------
    key : str
        The claims-table row it measures.
    measurement : Measurement
        What the archived run measured.
    code_hash : str
        :func:`htlib.cache.source_hash` of the chapter's reading module when it was measured.
    provenance : dict
        ``parameters`` (the chapter's parameters that differed from its defaults), ``command``, ``date`` (UTC,
        ISO 8601), ``machine`` and ``wall_s`` (the chapter's wall time in seconds).
    runs : dict or None
        ``computed`` and ``from_cache``: the sweep configs the chapter's kernel computed and read from the result
        cache (:func:`htlib.sweep.tally`); ``None`` in a file written before it was recorded.
    """

    key: str
    measurement: Measurement
    code_hash: str
    provenance: Mapping[str, Any]
    runs: Mapping[str, int] | None = None

    @property
    def day(self) -> str:
        return str(self.provenance["date"])[:10]

    def describe(self) -> str:
        """The provenance as a record shows it.

        Examples
        --------
        >>> a = Archived("k", Measurement([1.0]), "0" * 64, {"parameters": {"seeds": 3}, "command": "make paper",
        ...              "date": "2026-12-06T16:00:00Z", "machine": "x86_64, 2 cores", "wall_s": 5400.0})
        >>> a.describe()
        'archived run of 2026-12-06, not re-executed by CI: seeds = 3; 90 min wall on x86_64, 2 cores (make paper)'
        >>> dataclasses.replace(a, runs={"computed": 2, "from_cache": 40}).describe().split("; ")[-1]
        'it computed 2 of its 42 runs, the other 40 came from the result cache of an earlier run'
        """
        p = self.provenance
        params = ", ".join(f"{k} = {v!r}" for k, v in p["parameters"].items()) or "the chapter's defaults"
        wall = float(p["wall_s"])
        took = f"{wall / 60:.0f} min" if wall < 3 * 3600 else f"{wall / 3600:.1f} h"
        text = (f"archived run of {self.day}, not re-executed by CI: {params}; {took} wall on {p['machine']} "
                f"({p['command']})")
        cached, computed = (self.runs or {}).get("from_cache", 0), (self.runs or {}).get("computed", 0)
        if cached:  # a resumed run: its wall time is only that of what it computed
            text += (f"; it computed {computed} of its {computed + cached} runs, the other {cached} came from the "
                     "result cache of an earlier run")
        return text


def archive_dir() -> Path:
    """Where archive files are read and written: ``$HTLIB_ARCHIVE_DIR``, else ``book/archive``."""
    return Path(os.environ.get("HTLIB_ARCHIVE_DIR") or ARCHIVE_DIR)


def requested() -> set[str]:
    """The claim keys this process is asked to archive (``$HTLIB_ARCHIVE``, comma-separated; set by ``make paper``)."""
    return {k.strip() for k in os.environ.get("HTLIB_ARCHIVE", "").split(",") if k.strip()}


def _chapter(module: str) -> str:
    parts = module.split(".")
    if len(parts) < 3 or parts[:2] != ["htlib", "experiments"]:
        raise ValueError(f"module must be a chapter's module htlib.experiments.<chapter>.<name>, got {module!r}")
    return parts[2]


def _path(module: str, key: str, folder: Path | None = None) -> Path:
    return (folder or archive_dir()) / _chapter(module) / f"{key}.json"


def _to_json(m: Measurement) -> dict:
    out = {f.name: getattr(m, f.name) for f in dataclasses.fields(m) if f.name != "parts"}
    out["parts"] = {k: _to_json(p) for k, p in m.parts.items()}
    return out


def _from_json(d: Mapping) -> Measurement:
    names = {f.name for f in dataclasses.fields(Measurement)}
    if bad := sorted(set(d) - names):
        raise ArchiveError(f"fields that are not Measurement fields: {bad}")
    d = dict(d)
    d["parts"] = {k: _from_json(p) for k, p in d.get("parts", {}).items()}
    for name in ("values", "draws"):
        d[name] = tuple(d.get(name, ()))
    if d.get("deviations") is not None:
        d["deviations"] = tuple(d["deviations"])
    return Measurement(**d)


def machine() -> str:
    """The processor, its cores and the accelerator, as a provenance names them."""
    model = platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:  # not Linux: the architecture alone
        pass
    text = f"{model}, {os.cpu_count()} cores"
    try:
        import torch

        if torch.cuda.is_available():
            text += f", {torch.cuda.get_device_name(0)}"
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    return text


def read(module: str, key: str, folder: Path | None = None) -> Archived | None:
    """The archived measurement of row ``key`` of the chapter of ``module``; ``None`` where none is archived.

    Raises
    ------
    ArchiveError
        For a file that is not a complete record (damaged, another format, no provenance stamp): a record that
        cannot say where it comes from is never read as evidence.
    """
    path = _path(module, key, folder)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ArchiveError(f"{path}: not readable as JSON ({err})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ArchiveError(f"{path}: format {data.get('format') if isinstance(data, dict) else None!r}, "
                           f"this htlib reads {FORMAT}")
    if data.get("key") != key or data.get("chapter") != _chapter(module):
        raise ArchiveError(f"{path}: holds {data.get('chapter')!r}/{data.get('key')!r}, not "
                           f"{_chapter(module)!r}/{key!r}")
    provenance = data.get("provenance") or {}
    if missing := [k for k in _PROVENANCE if k not in provenance]:
        raise ArchiveError(f"{path}: provenance lacks {missing} (make paper stamps them when the chapter finishes; "
                           "a file written outside make paper is not a record)")
    try:
        measurement = _from_json(data["measurement"])
    except (KeyError, TypeError, ValueError) as err:
        raise ArchiveError(f"{path}: its measurement cannot be rebuilt ({err})") from None
    runs = data.get("runs")
    if runs is not None and not (isinstance(runs, dict) and all(isinstance(runs.get(k), int) and runs[k] >= 0
                                                                   for k in ("computed", "from_cache"))):
        raise ArchiveError(f"{path}: 'runs' must hold counts 'computed' and 'from_cache', got {runs!r}")
    return Archived(key, measurement, str(data.get("code_hash", "")), provenance, runs)


def merge(measurements: Mapping[str, Measurement], module: str, folder: Path | None = None) -> dict[str, Measurement]:
    """A chapter's measurements, where they did not run, read from their archive files.

    ``module`` is the chapter's reading module (``__name__`` there).  Only a row this run did not measure (a
    not-run record: its runs are too slow for these parameters) is read from the archive, so a rerun never hides
    its own numbers behind older ones.  A row archived under the current code becomes its archived measurement,
    the provenance in its ``note``; one archived under older code stays not run and says so.  The rows named in
    ``$HTLIB_ARCHIVE`` are written instead (``make paper``'s ``--archive``): this run measures them.

    Examples
    --------
    >>> merge({"k": Measurement([1.0])}, "htlib.experiments.none.reading")["k"].values
    (1.0,)
    >>> merge({"k": Measurement.not_run("too slow")}, "htlib.experiments.none.reading")["k"].not_run_reason
    'too slow'
    """
    out = dict(measurements)
    now = source_hash(module=module)
    asked = requested()
    if unknown := sorted(asked - set(out)):
        raise ValueError(f"HTLIB_ARCHIVE names rows {unknown} this chapter does not measure; its rows: {sorted(out)}")
    for key in asked:
        write(out[key], module, key, now, folder)
    for key in sorted(k for k in set(out) - asked if not out[k].ran):
        archived = read(module, key, folder)
        if archived is None:
            continue
        if archived.code_hash != now:
            out[key] = Measurement.not_run(
                f"archived under older code ({archived.describe()}); the runs and measures have changed since "
                f"(code {archived.code_hash[:12]}, now {now[:12]}), so it decides nothing until make paper "
                f"archives it again")
        else:
            m = archived.measurement
            out[key] = dataclasses.replace(m, note="; ".join(t for t in (m.note.strip(), archived.describe()) if t))
    return out


def write(measurement: Measurement, module: str, key: str, code_hash: str, folder: Path | None = None) -> Path:
    """Write the kernel's half of an archive file (the measurement and the code hash); :func:`stamp` completes it."""
    if not measurement.ran:
        raise ValueError(f"row {key!r} did not run at these parameters ({measurement.not_run_reason}); there is "
                         "nothing to archive")
    if edited := [p.name for p in _result_files(_PACKAGE_DIR, module) if p.stat().st_mtime > _LOADED]:
        raise ArchiveError(f"the code of {module} was edited while this run was going ({', '.join(edited)}): its "
                           "numbers come from the code loaded before, which the code hash would not name; nothing is "
                           "archived, run make paper again")
    path = _path(module, key, folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"format": FORMAT, "chapter": _chapter(module), "key": key, "code_hash": code_hash,
            "measurement": _to_json(measurement), "runs": tally()}
    atomic_write(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path


def stamp(path: Path, *, parameters: Mapping[str, Any], command: str, wall_s: float,
          date: datetime.datetime | None = None, commit: str | None = None) -> Path:
    """Complete the provenance of an archive file the chapter's kernel wrote (``make paper``, after the chapter).
    ``commit``: the checkout the run started from (default: :func:`version` now; a run that archives several rows
    passes the one it read before writing any, else the later files would name the first as an uncommitted edit)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    date = date or datetime.datetime.now(datetime.timezone.utc)
    data["provenance"] = {"parameters": dict(parameters), "command": command, "machine": machine(),
                          "date": date.strftime("%Y-%m-%dT%H:%M:%SZ"), "wall_s": round(float(wall_s), 1),
                          "commit": commit or version()}  # -dirty: uncommitted edits
    atomic_write(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return Path(path)


def version(root: str | Path = _REPO) -> str:
    """``git describe`` of the checkout the book is built from ("unknown" outside a git checkout): the footer of every
    page and the claims dataset name it."""
    try:
        out = subprocess.run(["git", "describe", "--always", "--tags"], cwd=root,
                             capture_output=True, text=True, timeout=10)
        # git status compares contents where a file's time changed (describe --dirty reads a rewritten, unchanged
        # file as an edit)
        edits = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if out.returncode != 0 or not out.stdout.strip():
        return "unknown"
    return out.stdout.strip() + ("-dirty" if edits.returncode == 0 and edits.stdout.strip() else "")
