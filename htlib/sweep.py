"""Parameter sweeps: run one function over many configs, resumably.

:func:`run_sweep` takes any :class:`concurrent.futures.Executor` (a process pool, or a Dask cluster's),
serves finished configs from :mod:`htlib.cache` and stores each new result as it arrives, so an interrupted
sweep resumes where it stopped.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing as mp
import os
import re
import threading
import time
from typing import Any, Callable, Iterator, Sequence

from tqdm import tqdm

from htlib import cache

__all__ = ["run_sweep", "tally", "process_executor", "limit_threads", "progress_enabled", "executor_kind", "executor_for",
           "dask_workers", "SchedulerLost", "NoWorkers", "NO_WORKER_GRACE_S"]

SCHEDULER_POLL_S = 10.0
"""While nothing finishes, a sweep on a Dask cluster asks its scheduler this often whether it is alive."""
SCHEDULER_ANSWER_S = 20.0
"""How long the scheduler has to answer; a dead one fails the sweep within the two together (30 s)."""
NO_WORKER_GRACE_S = 60.0
"""How long a sweep on a Dask cluster waits while its scheduler answers with no worker (workers restart, or are
being added) before it fails with :class:`NoWorkers`; :func:`run_sweep`'s ``no_worker_grace_s``."""


class SchedulerLost(ConnectionError):
    """The Dask scheduler of a sweep died or stopped answering; finished results are cached."""


class NoWorkers(SchedulerLost):
    """The Dask scheduler of a sweep answers but has had no worker for the grace period; finished results are
    cached."""


def _dask_client(executor: cf.Executor | None) -> Any:
    """The ``distributed.Client`` behind a Dask ``ClientExecutor``; ``None`` for any other executor."""
    return getattr(executor, "_client", None) if type(executor).__module__.startswith("distributed") else None


def _scheduler_workers(client: Any) -> int | None:
    """The number of workers the scheduler of ``client`` has; ``None`` when it is gone or does not answer."""
    if client.status != "running":  # closed, or reconnecting (which has cancelled every pending task)
        return None
    with contextlib.suppress(Exception):  # a timeout, a refused connection: no scheduler there any more
        info = client.sync(client.scheduler.identity, callback_timeout=SCHEDULER_ANSWER_S)
        return int(info.get("n_workers", len(info.get("workers", {}))))
    return None


def progress_enabled() -> bool:
    """Whether progress bars should be drawn here: ``HTLIB_PROGRESS=1``/``0`` forces them on/off; else off with
    ``TQDM_DISABLE`` and under pytest (nbval compares stderr, where bars' timings differ on every run)."""
    forced = os.environ.get("HTLIB_PROGRESS", "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    disabled = os.environ.get("TQDM_DISABLE", "").strip().lower() not in ("", "0", "false")
    return not disabled and "PYTEST_CURRENT_TEST" not in os.environ


def limit_threads(n_threads: int = 1) -> None:
    """Pin torch and every BLAS/OpenMP pool of this process to ``n_threads`` (a worker process's initializer:
    with one process per core, threaded BLAS would only oversubscribe the machine)."""
    import scipy.linalg  # noqa: F401 - loads SciPy's own OpenBLAS now: threadpoolctl limits only loaded pools
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(n_threads)
    threadpool_limits(n_threads)


PARENT_POLL_S = 1.0
"""How often a pool worker checks that the process that started it is still alive."""


def _worker_init(n_threads: int, parent: int) -> None:
    """A pool worker's initializer: :func:`limit_threads`, and exit when ``parent`` is gone (a killed kernel
    cannot shut its pool down; orphan workers would hold its pipes open, and its caller would wait forever)."""
    limit_threads(n_threads)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="htlib-parent-watch", daemon=True).start()


def process_executor(max_workers: int | None = None, *, threads_per_worker: int = 1) -> cf.ProcessPoolExecutor:
    """A process pool whose workers each use ``threads_per_worker`` BLAS threads, and exit with the process
    that made the pool (no orphans when it is killed)."""
    workers = max_workers or os.cpu_count() or 1
    if workers < 1:
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),  # fork + torch: deadlock
                                  initializer=_worker_init, initargs=(threads_per_worker, os.getpid()))


_TALLY = {"computed": 0, "from_cache": 0}
_SEEN: set[str] = set()  # the keys of the configs this process's sweeps have counted


def _count(key: str | None, how: str) -> None:
    """Count a config once however many sweeps read it (a sweep that rereads runs it made or read counts none)."""
    if key is None or key not in _SEEN:
        _TALLY[how] += 1
        if key is not None:
            _SEEN.add(key)


def tally() -> dict[str, int]:
    """How many distinct configs this process's sweeps have computed, and how many they read from the result cache.

    An archived measurement records it (:mod:`htlib.archive`): the wall time of a run resumed from the cache covers
    only what that run computed.

    Examples
    --------
    >>> from htlib.sweep import tally
    >>> sorted(tally())
    ['computed', 'from_cache']
    """
    return dict(_TALLY)


def run_sweep(fn: Callable[[Any], Any], configs: Sequence[Any], *, executor: cf.Executor | None = None,
              use_cache: bool = True, progress: bool = True, desc: str = "runs",
              no_worker_grace_s: float | None = None) -> list[Any]:
    """Evaluate ``fn(config)`` for every config, resuming from the cache.

    Parameters
    ----------
    fn
        A module-level (picklable) function of one config.
    configs
        Hashable-by-value configs (frozen dataclasses); see :func:`htlib.cache.config_key`.
    executor
        Where to run uncached configs.  ``None`` runs them in this process.
    use_cache
        Read and write :mod:`htlib.cache` (``False``: recompute everything, store nothing).
    progress
        Show a tqdm bar counting finished runs, where :func:`progress_enabled` allows it.
    no_worker_grace_s
        On a Dask cluster, how long the sweep waits while the scheduler has no worker (default
        :data:`NO_WORKER_GRACE_S`, 60 s).

    Returns
    -------
    list
        ``[fn(c) for c in configs]``, in order.

    Raises
    ------
    Exception
        The first failing config's error, with a note naming it, after every other config has run and been stored.
    SchedulerLost
        When the Dask scheduler of ``executor`` dies or stops answering mid-sweep; :class:`NoWorkers` when it has
        had no worker for ``no_worker_grace_s`` (every worker died).
    """
    grace = NO_WORKER_GRACE_S if no_worker_grace_s is None else float(no_worker_grace_s)
    if not grace > 0 or grace == float("inf"):
        raise ValueError(f"no_worker_grace_s must be a finite number of seconds > 0, got {no_worker_grace_s!r}")
    name = f"{fn.__module__}.{fn.__qualname__}"
    keys = [cache.config_key(name, c) for c in configs] if use_cache else [None] * len(configs)
    results: list[Any] = [cache.MISSING if key is None else cache.load(key) for key in keys]
    todo = [i for i, r in enumerate(results) if r is cache.MISSING]
    for i, key in enumerate(keys):
        if results[i] is not cache.MISSING:
            _count(key, "from_cache")
    show = progress and progress_enabled()
    # A rerun (htlib.run) names a file for the bars: it relays them to its terminal, and the page stays clean.
    relay = os.environ.get("HTLIB_PROGRESS_FILE", "").strip() if show else ""
    bar_file = open(relay, "a", encoding="utf-8") if relay else None  # noqa: SIM115 - closed with the bar below
    bar = tqdm(total=len(configs), initial=len(configs) - len(todo), desc=desc, disable=not show,
               **({"file": bar_file, "ascii": True} if bar_file else {}))
    failures: dict[int, Exception] = {}

    def finish(i: int, outcome: Callable[[], Any]) -> None:
        # One config's failure must not cost the others their results: store each as it arrives.
        try:
            results[i] = outcome()
        except Exception as err:
            failures[i] = err
            return
        if keys[i] is not None:
            cache.store(keys[i], results[i])
        _count(keys[i], "computed")
        bar.update(1)

    def lost(client: Any, idle: float | None = None) -> SchedulerLost:
        done = sum(r is not cache.MISSING for r in results)
        cached = sum(r is not cache.MISSING for k, r in zip(keys, results) if k is not None)
        if idle is None:
            kept = (f"; they are kept in the result cache, so a rerun computes only the {len(configs) - done} "
                    "missing (start a new scheduler, or use the executor 'process')") if use_cache else ""
            return SchedulerLost(f"run_sweep({name}): the Dask scheduler at {client.scheduler.address} died or "
                                 f"stopped answering mid-sweep; {done} of {len(configs)} configs had finished{kept}")
        return NoWorkers(f"run_sweep({name}): the Dask scheduler at {client.scheduler.address} has had no worker "
                         f"for {idle:.0f} s (every worker died or left); {done} of {len(configs)} configs had "
                         f"finished, {cached} of them kept in the result cache, so a rerun computes only the "
                         f"{len(configs) - cached} missing (start workers with `dask worker "
                         f"{client.scheduler.address} --nthreads 1`, or use the executor 'process')")

    try:
        if executor is None:
            for i in todo:
                finish(i, lambda: fn(configs[i]))
        else:
            client = _dask_client(executor)
            # Dask keys pure tasks by their arguments: a retry on the same client would get the stored error.
            extra = {"pure": False} if client is not None else {}
            futures = {executor.submit(fn, configs[i], **extra): i for i in todo}
            pending = set(futures)
            # Not as_completed: its wait has no end when the scheduler dies without cancelling our futures, nor
            # when every worker dies while the scheduler lives (the tasks wait for a worker, forever).
            poll = min(SCHEDULER_POLL_S, grace / 4)
            no_worker_since: float | None = None
            while pending:
                done, pending = cf.wait(pending, timeout=poll if client is not None else None,
                                        return_when=cf.FIRST_COMPLETED)
                for future in done:
                    if client is not None and future.cancelled():  # Dask cancels every task when it loses them
                        raise lost(client)
                    finish(futures[future], future.result)
                if client is None or done:
                    no_worker_since = None
                    continue
                workers = _scheduler_workers(client)
                if workers is None:
                    raise lost(client)
                now = time.monotonic()
                no_worker_since = (no_worker_since or now) if workers == 0 else None
                if no_worker_since is not None and now - no_worker_since >= grace:
                    raise lost(client, now - no_worker_since)
    finally:
        bar.close()
        if bar_file is not None:
            bar_file.close()
    if failures:
        first, err = min(failures.items())  # keys are unique: the errors are never compared
        err.add_note(f"run_sweep({name}): config {first} failed: {configs[first]!r} ({len(failures)} of "
                     f"{len(configs)} configs failed; the others ran to the end"
                     f"{' and are cached: a rerun computes only the failed ones' if use_cache else ''})")
        raise err
    return results


_DASK_ADDRESS = re.compile(r"tcp://(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:]+\]):(\d{1,5})")


def executor_kind(executor: str) -> str:
    """``"serial"``, ``"process"`` or ``"dask"`` (a scheduler address ``tcp://host:port``, its form only) for an
    executor option; ``ValueError`` for anything else.

    Examples
    --------
    >>> executor_kind("process"), executor_kind("tcp://127.0.0.1:8786")
    ('process', 'dask')
    """
    if executor in ("serial", "process"):
        return executor
    m = _DASK_ADDRESS.fullmatch(executor) if isinstance(executor, str) else None
    if m is None or not 1 <= int(m.group(1)) <= 65535:
        raise ValueError(f"executor must be 'serial', 'process' or a Dask scheduler address tcp://host:port; "
                         f"got {executor!r}")
    return "dask"


@contextlib.contextmanager
def executor_for(executor: str, workers: int = 2, *, timeout: float = 10.0) -> Iterator[cf.Executor | None]:
    """The executor for :func:`run_sweep` named by a chapter's ``executor`` option, closed on exit.

    ``"serial"`` yields ``None`` (run in this process); ``"process"`` a :func:`process_executor` of ``workers``
    one-thread processes; ``"tcp://host:port"`` the executor of a ``distributed.Client`` of that scheduler.

    Examples
    --------
    >>> with executor_for("serial") as pool:
    ...     run_sweep(abs, [-1, 2], executor=pool, use_cache=False, progress=False)
    [1, 2]
    """
    kind = executor_kind(executor)
    if kind == "serial":
        yield None
    elif kind == "process":
        with process_executor(workers, threads_per_worker=1) as pool:
            yield pool
    else:
        import distributed

        client = distributed.Client(executor, timeout=timeout)
        try:
            yield client.get_executor(pure=False)  # a retry recomputes (run_sweep asks for this as well)
        finally:
            with contextlib.suppress(Exception):  # a dead scheduler's close error must not hide the sweep's
                client.close(timeout=timeout)


def dask_workers(address: str, *, timeout: float = 5.0) -> int:
    """The number of workers of the Dask scheduler at ``address``.

    Raises
    ------
    ConnectionError
        When no scheduler answers there within ``timeout`` seconds, with the reason.
    """
    executor_kind(address)
    import distributed

    try:
        with distributed.Client(address, timeout=timeout) as client:
            return len(client.scheduler_info().get("workers", {}))
    except (OSError, TimeoutError) as err:
        raise ConnectionError(f"no Dask scheduler answers at {address} within {timeout:g} s "
                              f"({type(err).__name__}: {err})") from None
