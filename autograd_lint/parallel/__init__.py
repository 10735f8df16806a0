"""Running a step over many files: in this process, or shared out among worker processes.

``pool.WorkerPool`` runs a step (a function, passed by reference) over the files, in one work-
stealing loop; ``early_helper.EarlyHelper`` is the process that does a parallel run's first step
while the main process loads the parser. Neither knows what a step does: the engine hands them
the pipeline's steps (``autograd_lint.pipeline``).
"""

from autograd_lint.parallel.pool import WorkerPool

__all__ = ["WorkerPool"]
