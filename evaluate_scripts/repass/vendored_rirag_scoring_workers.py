# Vendored for the RePASs evaluate metric from rirag.scoring.workers by rirag.hub.vendor: do not edit; run
# `python -m rirag.hub.vendor evaluate_scripts/repass` after changing the original.
"""CPU forward passes spread over worker processes: one process per core, one torch thread each.

On a CPU a small cross-encoder's forward pass is compute-bound and torch's intra-op threads scale poorly on the
short inputs RePASs feeds it, so ``RePASsConfig(workers=N)`` hands whole exact-length batches to ``N`` processes
instead. Each worker loads a model by name on first use (``rirag.scoring.models.load_classifier``) and returns
logits; the parent keeps tokenization, caching and bookkeeping, so scores do not depend on the worker count
beyond float rounding (``benchmarks/repass_speed.py`` reports the difference).

Pools are started lazily with the ``spawn`` method (a forked torch runtime can deadlock), kept per worker count
for the life of the process, and shut down at exit. ``spawn`` re-imports the caller's main module in each worker,
so a script that sets ``workers > 1`` needs the usual ``if __name__ == "__main__":`` guard. A pool that breaks (a
worker killed, e.g. out of memory) is dropped and the call is redone in the parent process.

Scores agree with the in-process path up to float rounding (the workers run one torch thread; the parent may run
more), which can move a 5-decimal rounding by 1e-5.
"""

from __future__ import annotations

import atexit
import logging
import os
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Sequence

import numpy as np

from .vendored_rirag_scoring_constants import AUTO_WORKERS
from .vendored_rirag_scoring_models import prepared_model

logger = logging.getLogger(__name__)

#: Each worker holds its own copy of the models (the official coverage model is ~1.6 GB in float32), so "auto"
#: stops here; pass a number to go beyond.
MAX_AUTO_WORKERS = 4
#: Below this many tokens a call runs in the parent process: starting workers would cost more than it saves.
POOL_MIN_TOKENS = 20_000
#: Batches are grouped into about this many tasks per worker, for load balance with little IPC.
TASKS_PER_WORKER = 8

_POOLS: dict[int, ProcessPoolExecutor] = {}
_EXIT_HOOK = False


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def resolve_workers(workers: int | str, device: str) -> int:
    """The number of processes for ``workers`` (an int or ``"auto"``) on ``device``; accelerators use one."""
    if str(device) != "cpu":
        return 1
    if workers == AUTO_WORKERS:
        return max(1, min(available_cores(), MAX_AUTO_WORKERS))
    return int(workers)


def _init_worker() -> None:
    import torch

    torch.set_num_threads(1)


def _forward(name: str, precision: str, batches: list[dict[str, np.ndarray]]) -> list[np.ndarray]:
    """Logits (float32) of each batch of token arrays, computed in a worker."""
    import torch

    model = prepared_model(name, "cpu", precision)
    out = []
    with torch.inference_mode():
        for features in batches:
            logits = model(**{k: torch.from_numpy(v) for k, v in features.items()}).logits
            out.append(logits.float().numpy())
    return out


def get_pool(workers: int) -> ProcessPoolExecutor:
    """The process pool of ``workers`` processes (started on first use, reused after)."""
    pool = _POOLS.get(workers)
    if pool is None:
        import multiprocessing

        logger.info("starting %d RePASs worker processes (1 torch thread each)", workers)
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_init_worker)
        global _EXIT_HOOK
        if not _EXIT_HOOK:
            atexit.register(shutdown_pools)
            _EXIT_HOOK = True
        _POOLS[workers] = pool
    return pool


def drop_pool(workers: int) -> None:
    """Forget (and stop) the pool of ``workers`` processes, e.g. after one of them died."""
    pool = _POOLS.pop(workers, None)
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)


def shutdown_pools() -> None:
    """Stop every worker process (also registered to run at exit)."""
    while _POOLS:
        _, pool = _POOLS.popitem()
        pool.shutdown(wait=True, cancel_futures=True)


def balanced_tasks(costs: Sequence[int], n_tasks: int) -> list[list[int]]:
    """Batch indices grouped into at most ``n_tasks`` tasks of similar total cost (largest first, greedy)."""
    n_tasks = max(1, min(n_tasks, len(costs)))
    tasks: list[list[int]] = [[] for _ in range(n_tasks)]
    load = [0] * n_tasks
    for i in sorted(range(len(costs)), key=lambda i: -costs[i]):
        t = min(range(n_tasks), key=load.__getitem__)
        tasks[t].append(i)
        load[t] += costs[i]
    return [t for t in tasks if t]


def submit(name: str, precision: str, workers: int, batches: list[dict[str, np.ndarray]], costs: Sequence[int]
           ) -> list[tuple[list[int], Future]]:
    """Send ``batches`` to the pool as balanced tasks; returns (batch indices, future of their logits) pairs."""
    pool = get_pool(workers)
    return [(task, pool.submit(_forward, name, precision, [batches[i] for i in task]))
            for task in balanced_tasks(costs, workers * TASKS_PER_WORKER)]


def pool_worth_it(workers: int, tokens: int) -> bool:
    return workers > 1 and tokens >= POOL_MIN_TOKENS
