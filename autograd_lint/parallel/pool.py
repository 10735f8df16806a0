"""The worker pool: runs a step over many files, in this process or in worker processes.

A step is a function ``step(state, payloads, *shared) -> one answer per payload``, passed by
reference (the engine passes ``Pipeline.summarize``, ``Pipeline.facts``, ``Pipeline.lint``).
``state`` is the process's own, made once by ``make_state`` and kept between steps: the worker
that parsed a file keeps its syntax tree for the lint, so trees never travel between processes,
only payloads (paths), the shared arguments (the project's facts) and answers.

The work is shared out as it goes, in one loop (``_share_out``): each worker is handed a small
batch whenever it is done with one, two in flight so that it never waits for the pipe. Which
batch is the policy's to say:
- ``run``: each worker's own files (``balance`` chose them), heaviest first; a worker that runs
  out takes the lightest files left to the worker with the most work left (work stealing);
- ``summarize_while_loading``: the batches the early helper has not taken yet, from the back.
"""

from __future__ import annotations

import sys
from collections import deque
from typing import TYPE_CHECKING, Callable, Optional

if TYPE_CHECKING:
    from autograd_lint.parallel.worker import WorkerProcess

Task = tuple[int, object]  # (file index, payload)
Batch = list[Task]
Step = Callable[..., list]  # step(state, payloads, *shared) -> answers, in the payloads' order

# A batch: files until their estimated cost reaches this (microseconds), so that thousands of
# small files do not each pay a round trip.
_BATCH_COST = 20_000.0
_BATCHES_IN_FLIGHT = 2


class WorkerPool:
    """Runs steps over the files, in this process (one job) or in ``jobs`` worker processes; a
    file stays with the worker that first answered for it."""

    def __init__(self, jobs: int, file_count: int, make_state: Callable[[], object],
                 preload: Callable[[], None] = lambda: None) -> None:
        """``make_state``: each process's state, made once (a picklable callable: a spawned
        worker gets it through a pipe). ``preload``: imports a parallel run does in this process
        before the workers start, so that they share them (see ``summarize_while_loading``)."""
        self.jobs = max(1, min(jobs, file_count))
        self.make_state, self.preload = make_state, preload
        self.local: Optional[object] = make_state() if self.jobs == 1 else None
        self._workers: list[WorkerProcess] = []
        self.owners: dict[int, int] = {}  # file index -> worker, once one answered for it or balance() chose one
        self.load: list[tuple[float, float]] = [(0.0, 0.0)] * self.jobs  # see balance()

    @property
    def workers(self) -> list[WorkerProcess]:
        """One ``WorkerProcess`` per worker, made when first needed (a run that stays in one
        process, a cached run or pre-commit's few files, never imports multiprocessing); each
        process starts (forks) at its first batch."""
        if not self._workers and self.local is None:
            import multiprocessing

            from autograd_lint.parallel.worker import WorkerProcess

            context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
            self._workers = [WorkerProcess(context, self.make_state) for _ in range(self.jobs)]
        return self._workers

    def worker_of(self, index: int) -> int:
        return self.owners.get(index, index % self.jobs)

    def balance(self, costs: dict[int, tuple[float, float]]) -> None:
        """Give each file that has no owner yet to a worker, so that both steps that follow
        end as early as they can. ``costs``: (parsing it, analysing it), in seconds or in
        any one unit.

        Steps 2 and 3 cost far more per file than step 1 and go to a few files of very
        different sizes (dealing them out by index left the workers' loads far apart:
        bench/NOTES.md); each step waits for its slowest worker, so the greedy choice (heaviest
        file first) is the worker that keeps the sum of the two steps' slowest loads lowest. A
        file that step 1 read elsewhere is read again by its new owner: little next to parsing
        it."""
        for index in sorted(costs, key=lambda i: (-sum(costs[i]), i)):
            if index in self.owners:
                continue
            parse, analyse = costs[index]

            def finish(worker: int) -> tuple[float, int]:
                parsing = [p + (parse if w == worker else 0) for w, (p, _) in enumerate(self.load)]
                analysing = [a + (analyse if w == worker else 0) for w, (_, a) in enumerate(self.load)]
                return max(parsing) + max(analysing), worker

            worker = min(finish(w) for w in range(self.jobs))[1]
            self.owners[index] = worker
            self.load[worker] = (self.load[worker][0] + parse, self.load[worker][1] + analyse)

    def run(self, step: Step, tasks: list[Task], costs: dict[int, float], *shared: object) -> dict[int, object]:
        """``step`` over ``tasks``; returns file index -> answer. Each worker takes the files it
        owns (or that ``balance`` gave it), heaviest first, a few at a time, and a worker that
        runs out takes the lightest files left to another (reading and parsing them itself): the
        worker that answers for a file owns it from then on.

        Estimates miss (the fix_available pass of one large file, the machine's speed drifting:
        bench/NOTES.md), and each step waits for its slowest worker. ``costs``: file index ->
        estimated microseconds. ``shared``: the step's last arguments (the project facts), sent
        to each worker once, not with every batch."""
        if self.local is not None or not tasks:
            return self._run_here(step, tasks, shared)
        queues: dict[int, deque[Task]] = {w: deque() for w in range(self.jobs)}
        for index, payload in sorted(tasks, key=lambda task: -costs.get(task[0], 0.0)):
            queues[self.worker_of(index)].append((index, payload))
        left = {w: sum(costs.get(index, 0.0) for index, _ in queue) for w, queue in queues.items()}

        def next_batch(worker: int) -> Batch:
            victim = worker if queues[worker] else max(left, key=lambda w: (left[w], -w))
            queue, batch, cost = queues[victim], [], 0.0
            while queue and cost < _BATCH_COST:
                task = queue.popleft() if victim == worker else queue.pop()
                batch.append(task)
                cost += costs.get(task[0], 0.0)
            left[victim] -= cost
            return batch

        answers, answered_by = self._share_out(step, next_batch, shared)
        self.owners.update(answered_by)
        return answers

    def summarize_while_loading(self, step: Step, tasks: list[Task], costs: dict[int, float]) -> dict[int, object]:
        """Step 1 of a parallel run, with the parser loaded once instead of once per worker.

        Loading libcst is a large part of a worker's share of a cold run (bench/NOTES.md).
        Here a helper process (``early_helper``), forked before it is loaded, does the step
        while this process loads the parser, the rules and the fixers (``preload``); the
        workers forked after that have them for nothing, and take the batches still waiting
        from the other end. The step needs no parser, and reading the files takes about as long
        as the import, so neither core waits. (Where processes are spawned, not forked, workers
        load the parser themselves: nothing to gain.) The files stay unowned: ``balance``
        gives them out for the steps that parse them."""
        if self.local is not None or not tasks or sys.platform != "linux":
            return self.run(step, tasks, costs)
        from autograd_lint.parallel.early_helper import EarlyHelper

        # Small batches: the step ends when the helper's last one does.
        batches = _batches(tasks, costs, _BATCH_COST / 4)
        try:
            helper = EarlyHelper(batches, self.make_state, step)
        except OSError:  # cannot fork now (a process limit): the workers do it all
            return self.run(step, tasks, costs)

        def claimed(claim: Callable[[], Optional[int]]) -> Callable[[int], Batch]:
            def next_batch(worker: int) -> Batch:
                batch = claim()
                return batches[batch] if batch is not None else []
            return next_batch

        try:
            self.preload()
            helper.decode_as_they_come()
            answers, _ = self._share_out(step, claimed(helper.claim_from_back), ())
        except BaseException:  # interrupted: the helper stops after its batch, and is waited for
            helper.stop()
            helper.answers()
            raise
        helped, unanswered = helper.answers()  # a batch both did has the same answers twice
        answers.update(helped)
        if unanswered:  # the helper died: do what it had taken
            left = iter(unanswered)
            answers.update(self._share_out(step, claimed(lambda: next(left, None)), ())[0])
        return answers

    def close(self) -> None:
        """Stop the workers (each told at once, then each waited for)."""
        for worker in self._workers:
            worker.stop()
        for worker in self._workers:
            worker.join()

    # --- the loop ---------------------------------------------------------------------------
    def _run_here(self, step: Step, tasks: list[Task], shared: tuple) -> dict[int, object]:
        if not tasks:
            return {}
        answers = step(self.local, [payload for _, payload in tasks], *shared)
        return {index: answer for (index, _), answer in zip(tasks, answers)}

    def _share_out(self, step: Step, next_batch: Callable[[int], Batch],
                   shared: tuple) -> tuple[dict[int, object], dict[int, int]]:
        """Each worker is given ``next_batch(worker)`` (empty: nothing more for it) whenever it
        is done with one. Returns (file index -> answer, file index -> the worker that answered)."""
        from multiprocessing.connection import wait

        answers: dict[int, object] = {}
        answered_by: dict[int, int] = {}
        workers = self.workers
        told: set[int] = set()  # workers that have the shared arguments

        def submit(worker: int) -> None:
            batch = next_batch(worker)
            if batch:
                # The shared arguments go with a worker's first batch, when it has nothing in
                # flight and so is reading (see parallel/worker.py).
                extra = None if worker in told else shared
                told.add(worker)
                workers[worker].send([index for index, _ in batch], step, [p for _, p in batch], extra)

        for worker in range(self.jobs):
            for _ in range(_BATCHES_IN_FLIGHT):  # the next batch waits in the pipe: no idle gap
                submit(worker)
        worker_of = {w.connection: i for i, w in enumerate(workers) if w.connection is not None}
        while any(w.in_flight for w in workers):
            for connection in wait([w.connection for w in workers if w.in_flight]):
                worker = worker_of[connection]
                indexes, batch_answers = workers[worker].receive()
                answers.update(zip(indexes, batch_answers))
                answered_by.update(dict.fromkeys(indexes, worker))
                submit(worker)
        return answers, answered_by


def _batches(tasks: list[Task], costs: dict[int, float], size: float) -> list[Batch]:
    """``tasks`` in order, cut into batches of about ``size`` microseconds each."""
    batches: list[Batch] = [[]]
    cost = 0.0
    for task in tasks:
        if cost >= size:
            batches.append([])
            cost = 0.0
        batches[-1].append(task)
        cost += costs.get(task[0], 0.0)
    return [batch for batch in batches if batch]
