"""AGL308 gradient-dropped: backward returns None for an input that forward's output depends on through plain arithmetic: it silently never trains.

Scaffolded by ``python -m autograd_lint.dev new-rule``. The check below is a placeholder that
flags every Function class on its ``class`` line: the new code is visibly wired end to end (the
marker of fixtures/AGL308/bad.py is met, ``--explain AGL308`` prints the page), and the
tests stay red (fixtures/AGL308/good.py, the page's "Use instead" block) until the real check
replaces it. See CONTRIBUTING.md.
"""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding

CODE = "AGL308"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        yield module.at_class(CODE, model, f"{model.name}: gradient-dropped (placeholder check, not written yet)")
