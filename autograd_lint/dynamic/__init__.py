"""``--dynamic``: import the user's modules in child processes and check their Functions at runtime.

The parent side (``runner``, ``options``, ``settings``, ``progress``) never imports torch or user
code; only the child (``python -m autograd_lint.dynamic.child``) does, one module per process, so
a module that hangs, crashes or exits takes down nothing but its own child.

Layout: ``options`` (the CLI flags), ``settings`` (``[tool.autograd-lint.dynamic]``), ``runner``
(schedule children, map their answers back to findings), ``child`` (import, enumerate, check),
``inputs`` (example inputs: declared, call sites, synthesized), ``checks`` (gradcheck,
gradgradcheck, raw backward results, CPU vs CUDA), ``confirm`` (per-rule confirmation of static
findings), ``dedupe`` (a runtime failure explained by a confirmed static finding is merged into
it), ``progress`` (a progress bar on a terminal).
"""
