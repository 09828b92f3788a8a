"""Parameter sweeps: run one function over many configs, resumably.

``run_sweep`` takes any :class:`concurrent.futures.Executor` (a process pool
here, ``distributed.Client().get_executor()`` on a Dask cluster), serves
finished configs from :mod:`htlib.cache`, and writes each new result as soon
as it arrives, so an interrupted sweep resumes where it stopped.  Results come
back in the order of the configs.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os
import re
from typing import Any, Callable, Iterator, Sequence

from tqdm import tqdm

from htlib import cache

__all__ = ["run_sweep", "process_executor", "limit_threads", "progress_enabled", "executor_kind", "executor_for",
           "dask_workers"]


def progress_enabled() -> bool:
    """Whether progress bars should be drawn here.

    Off when ``TQDM_DISABLE`` is set (the Makefile's targets), and off under pytest: nbval re-executes
    chapters in a kernel started by pytest (which sets ``PYTEST_CURRENT_TEST``) and compares stderr,
    where bars with their timings would differ on every run.  ``HTLIB_PROGRESS=1`` forces them on,
    ``HTLIB_PROGRESS=0`` off.  Everywhere else (JupyterLab, reruns through :mod:`htlib.run`, a
    terminal) they are on.
    """
    forced = os.environ.get("HTLIB_PROGRESS", "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    if os.environ.get("TQDM_DISABLE", "").strip().lower() not in ("", "0", "false"):
        return False
    return "PYTEST_CURRENT_TEST" not in os.environ


def limit_threads(n_threads: int = 1) -> None:
    """Pin torch and every BLAS/OpenMP pool of this process to ``n_threads``.

    Used as the initializer of worker processes: with one process per core,
    threaded BLAS inside each worker would only oversubscribe the machine.
    """
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(n_threads)
    threadpool_limits(n_threads)


def process_executor(max_workers: int | None = None, *, threads_per_worker: int = 1) -> cf.ProcessPoolExecutor:
    """A process pool whose workers each use ``threads_per_worker`` BLAS threads."""
    import multiprocessing as mp

    workers = max_workers or os.cpu_count() or 1
    if workers < 1:
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    return cf.ProcessPoolExecutor(
        max_workers=workers,
        mp_context=mp.get_context("spawn"),  # fork + torch threads deadlock
        initializer=limit_threads,
        initargs=(threads_per_worker,),
    )


def run_sweep(
    fn: Callable[[Any], Any],
    configs: Sequence[Any],
    *,
    executor: cf.Executor | None = None,
    use_cache: bool = True,
    progress: bool = True,
    desc: str = "runs",
) -> list[Any]:
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
        Read and write :mod:`htlib.cache`.  With ``False`` everything is recomputed
        and nothing is stored.
    progress
        Show a tqdm bar counting finished runs, where :func:`progress_enabled` allows it (not under
        pytest/nbval, not with ``TQDM_DISABLE=1``).

    Returns
    -------
    list
        ``[fn(c) for c in configs]``, in order.

    Raises
    ------
    Exception
        When configs fail, the failure of the first failing config, with a note naming it, after
        every other config has run and its result has been stored.
    """
    name = f"{fn.__module__}.{fn.__qualname__}"
    results: list[Any] = [cache.MISSING] * len(configs)
    keys = [cache.config_key(name, c) for c in configs] if use_cache else [None] * len(configs)
    todo: list[int] = []
    for i, key in enumerate(keys):
        if key is not None:
            results[i] = cache.load(key)
        if results[i] is cache.MISSING:
            todo.append(i)

    bar = tqdm(total=len(configs), initial=len(configs) - len(todo), desc=desc,
               disable=not (progress and progress_enabled()))
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
        bar.update(1)

    try:
        if executor is None:
            for i in todo:
                finish(i, lambda: fn(configs[i]))
        else:
            futures = {executor.submit(fn, configs[i]): i for i in todo}
            for future in cf.as_completed(futures):
                finish(futures[future], future.result)
    finally:
        bar.close()
    if failures:
        first = min(failures)
        err = failures[first]
        err.add_note(f"run_sweep({name}): config {first} failed: {configs[first]!r} ({len(failures)} of "
                     f"{len(configs)} configs failed; the others ran to the end"
                     f"{' and are cached: a rerun computes only the failed ones' if use_cache else ''})")
        raise err
    return results


# --------------------------------------------------------------------------- the one executor option

_DASK_ADDRESS = re.compile(r"tcp://(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:]+\]):(\d{1,5})")


def executor_kind(executor: str) -> str:
    """``"serial"``, ``"process"`` or ``"dask"`` for an executor option; ``ValueError`` for anything else.

    A Dask option is a scheduler address ``tcp://host:port`` (port 1-65535); its form is checked here,
    whether a scheduler answers there is not.

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

    ``"serial"`` yields ``None`` (run in this process); ``"process"`` a :func:`process_executor` of
    ``workers`` one-thread processes; ``"tcp://host:port"`` the ``concurrent.futures`` executor of a
    ``distributed.Client`` connected to that scheduler (``timeout`` seconds to connect), whose
    results come back here, where :func:`run_sweep` caches them.

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

        with distributed.Client(executor, timeout=timeout) as client:
            yield client.get_executor()


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
