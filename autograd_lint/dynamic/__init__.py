"""``--dynamic``: import the user's modules in child processes and check their Functions at runtime.

The parent side (``runner``, ``processes``, ``options``, ``settings``, ``progress``) never imports
torch or user code; only the children do, one module per process (forked from the fork server,
which imported torch once, or ``python -m autograd_lint.dynamic.child``), so a module that hangs,
crashes or exits takes down nothing but its own child.

Layout: ``options`` (the CLI flags), ``settings`` (``[tool.autograd-lint.dynamic]``), ``runner``
(map the children's answers back to findings, list what was not checked), ``processes`` (start
the children, time limits), ``forkserver`` (torch imported once, one fork per module), ``child``
(import, enumerate, check),
``inputs`` (example inputs: declared, call sites, synthesized), ``checks`` (gradcheck,
gradgradcheck, raw backward results, CPU vs CUDA), ``confirm`` (per-rule confirmation of static
findings), ``dedupe`` (a runtime failure explained by a confirmed static finding is merged into
it), ``progress`` (a progress bar on a terminal).
"""
