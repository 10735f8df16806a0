"""The worker pool's processes and pipes (autograd_lint/parallel/worker.py): a step that fails in
a worker fails here with the worker's traceback, a worker that dies is reported, and in both
cases the pool closes without hanging; a large shared argument (the project's facts of a large
project) crosses the pipe in both directions' worst case. Each scenario runs in a child process
with a time limit, so that a hang fails the test instead of stopping the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_SCENARIO = """
import os, sys, time
from autograd_lint.parallel import WorkerPool
from autograd_lint.parallel.worker import WorkerDied

def fails_on_three(state, payloads):
    if 3 in payloads:
        raise ValueError("no threes here")
    return payloads

def dies_on_five(state, payloads):
    if 5 in payloads:
        os._exit(9)
    time.sleep(0.01)
    return payloads

def echoes_with_big_answers(state, payloads, shared):
    return [(payload, len(shared), "x" * 300_000) for payload in payloads]

def unpicklable(state, payloads):
    return [lambda: payload for payload in payloads]

tasks = [(i, i) for i in range(10)]
costs = {i: 30_000.0 for i in range(10)}
scenario = sys.argv[1]
pool = WorkerPool(2, 10, dict)
try:
    if scenario == "raises":
        try:
            pool.run(fails_on_three, tasks, costs)
        except ValueError as error:
            print("raised:", error, "| cause names the step:", "fails_on_three" in str(error.__cause__))
    elif scenario == "dies":
        try:
            pool.run(dies_on_five, tasks, costs)
        except WorkerDied as error:
            print("died:", "exit code 9" in str(error))
    elif scenario == "big":
        answers = pool.run(echoes_with_big_answers, tasks, costs, "s" * 3_000_000)
        print("big:", sorted(answers) == list(range(10)) and all(a[1] == 3_000_000 for a in answers.values()))
        answers = pool.run(echoes_with_big_answers, tasks, costs, "t" * 10)  # the next step: new shared
        print("next:", all(a[1] == 10 for a in answers.values()))
    elif scenario == "unpicklable":
        try:
            pool.run(unpicklable, tasks, costs)
        except Exception as error:
            print("unpicklable:", type(error).__name__)
finally:
    pool.close()
print("closed")
"""


def _run(scenario: str) -> str:
    process = subprocess.run([sys.executable, "-c", _SCENARIO, scenario], capture_output=True, text=True,
                             timeout=120, cwd=REPO)
    assert process.returncode == 0, process.stderr
    return process.stdout


def test_a_step_that_raises_in_a_worker_raises_here_with_its_traceback():
    assert _run("raises") == "raised: no threes here | cause names the step: True\nclosed\n"


def test_a_worker_that_dies_is_reported_and_the_pool_still_closes():
    assert _run("dies") == "died: True\nclosed\n"


def test_large_shared_arguments_and_answers_cross_without_a_deadlock():
    assert _run("big") == "big: True\nnext: True\nclosed\n"


def test_an_answer_that_cannot_be_pickled_is_an_error_here():
    output = _run("unpicklable")
    assert output.startswith("unpicklable: ") and output.endswith("closed\n")
