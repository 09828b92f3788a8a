# Two commands do everything on a machine that has only Python 3.10+:
#   make html   set up .venv, render _build/html from the committed outputs (about a minute)
#   make book   set up .venv, execute every chapter, render _build/html
#   make test   set up .venv, run the unit tests and the nbval regression of every chapter
# See README.md for the other targets (lab, run, paper, refresh, test-book, bench).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
CHAPTERS := $(shell ls book/*.ipynb 2>/dev/null)

# Progress bars vary run to run; they stay out of executed reference outputs.
QUIET := TQDM_DISABLE=1 PYTHONWARNINGS=ignore::DeprecationWarning

# The arithmetic that can be pinned without moving the references, pinned: torch's own kernels and oneDNN at their
# AVX2 branches, which every AVX2 x86 processor runs; the cost, measured as ratios: benchmarks/bench_arith_pins.py.
# MKL_CBWR=AVX2 is not pinned: on this AMD EPYC (where MKL takes its AUTO branch in reproducible mode) it changed the
# two-thread trained weights, and the generalization chapter's claims cell failed make nbval under it (2026-12-06)
# where it passes unpinned; pinning MKL waits for references refreshed under the pin.  tests/portability.py reads
# this line.  Empty it to run unpinned: make nbval ARITH=
ARITH := ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2

.PHONY: venv book html test unit nbval nbval-ci nbval-cold test-book browser refresh run lab paper paper-dry-run bench bench-build clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# The CPU build of torch lies on disk here; an unpinned torch would pull several GB of CUDA.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[book,test]"
	rm -f $(VENV)/.installed-*
	touch $@

book: venv
	$(QUIET) $(ARITH) $(PY) -m htlib.book build

# The book from the committed outputs (or this source's executions, where the execution cache holds them), executing
# nothing: about a minute.
html: venv
	$(QUIET) $(PY) -m htlib.book html

test: unit nbval

# JOBS one-thread pytest workers (pytest-xdist), whole files to a worker: on two cores two one-thread
# workers finish sooner than one two-thread process.  JOBS=0 runs in one process.
JOBS ?= 2
XDIST := $(if $(filter 0,$(JOBS)),,-n $(JOBS) --dist loadfile)
THREADS := $(if $(filter 0,$(JOBS)),,OMP_NUM_THREADS=1 MKL_NUM_THREADS=1)

# UNIT_MARKS selects the tests: every one but the browser's (make browser runs those on the rendered book).
UNIT_MARKS ?= not browser
unit: venv
	$(QUIET) $(THREADS) $(PY) -m pytest tests/ -m "$(UNIT_MARKS)" --durations=15 $(XDIST)

# --keep-executed: each chapter that passes goes into the book's execution cache, so a later `make book`
# (test-book in CI) renders these executions instead of running every chapter again (tests/nbval_keep.py).
# One process: chapters with their own worker pools (htmp, generalization) run one at a time; beside each other
# on two pytest workers, htmp's training cell passed nbval's 30-min cell limit (2026-12-03).  A cell may run a day:
# on a busy machine the generalization chapter's Fig. 7 cell ran past 30 min (2026-12-05), and a per-cell limit
# cannot tell a slow machine from a hung cell.
nbval: venv
	$(QUIET) $(ARITH) $(PY) -m pytest --nbval --nbval-current-env --nbval-cell-timeout=86400 \
		--nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider --keep-executed $(CHAPTERS)

# CI's regression: every chapter but CI_SKIP, the three whose cold default run takes more than 10 min on the
# project's two-core AMD EPYC: generalization (32 min) and htmp (22 min) of a cold `make nbval` of 85 min
# (2026-12-06), and spike_to_heavy_tail since its 120 training runs of the review's eta = 1 at two sizes (about
# 13 min cold with them; CI's whole run took 57 min, above its 50-min target, 2026-12-07).  Their runs stay the
# book's evidence: `make test` re-executes them against their committed outputs, the unit tests run each end to end
# at its smallest setting, and .ci/run renders them from their committed outputs (make html).
CI_SKIP := book/generalization.ipynb book/htmp.ipynb book/spike_to_heavy_tail.ipynb
nbval-ci: venv
	$(MAKE) nbval CHAPTERS="$(filter-out $(CI_SKIP),$(CHAPTERS))"

# One short chapter's regression cold (an empty result cache under mktemp: every run recomputed) under a second
# arithmetic, COLD_ARITH: the pins with torch's kernels at their scalar branch, on one thread (tests/portability.py's
# variant "ci"): portability stays tested (.ci/run; about a minute idle).
# The phases chapter's fits and labels; the one-step chapter (its 10 seeds: 4.2 min on one thread, 2026-12-04) is the
# one to check by hand after a change to the trainer: make nbval-cold COLD_NB=book/one_step_adam.ipynb.
COLD_NB ?= book/phases.ipynb
COLD_ARITH := $(filter-out ATEN_CPU_CAPABILITY=%,$(ARITH)) ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1
nbval-cold: venv
	cache=$$(mktemp -d) && trap 'rm -rf "$$cache"' EXIT && \
	$(QUIET) $(COLD_ARITH) HTLIB_CACHE_DIR="$$cache" $(PY) -m pytest --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider $(COLD_NB)

# The rendered book, opened page by page in headless Chromium (Debian's package).
test-book: book browser

browser: venv
	command -v chromium >/dev/null || (apt-get update -q && apt-get install -y -q chromium)
	$(PY) -m pytest tests/test_browser.py -m browser

# The one deliberate way to update committed reference outputs: NB=book/x.ipynb, or all chapters.
refresh: venv
	$(QUIET) $(ARITH) $(PY) -m htlib.book refresh $(NB)

# Rerun a chapter with your own parameters: make run NB=book/one_step_adam.ipynb ARGS='-p seeds 2'
run: venv
	$(PY) -m htlib.run $(NB) $(ARGS)

# The chapters in JupyterLab, with the kernel of .venv (open book/, edit, run; progress bars on).
# LAB_ARGS passes options through, e.g. LAB_ARGS='--no-browser --port 8890'.
lab: venv
	$(VENV)/bin/jupyter-lab --ServerApp.root_dir=$(CURDIR) --LabApp.default_url=/lab/tree/book $(LAB_ARGS)

# Every chapter at the papers' own settings into runs/paper/, then the scoreboard of that run (hours;
# not part of CI; resumable through the result cache).  ARGS='--only htmp --cifar-dir /data/cifar-10-batches-py'.
# Under the book's pinned arithmetic, so that its runs, cached beside the chapters', come from the same branch.
paper: venv
	$(ARITH) $(PY) -m htlib.paper $(ARGS)

paper-dry-run: venv
	$(PY) -m htlib.paper --dry-run $(ARGS)

# Speed benchmarks (minutes).  bench-build times every chapter with an empty cache and the two
# commands from a fresh clone (together longer than a CI run).
bench: venv
	for f in $(filter-out benchmarks/bench_build.py benchmarks/bench_chapters.py,$(wildcard benchmarks/bench_*.py)); do \
		echo "== $$f"; $(PY) $$f || exit 1; done

bench-build: venv
	$(PY) benchmarks/bench_chapters.py
	$(PY) benchmarks/bench_build.py

clean:
	rm -rf _build runs .pytest_cache
