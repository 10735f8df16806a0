"""AGL502 function-not-gradchecked (opt-in, project-wide): no gradcheck call reaches this Function."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding

CODE = "AGL502"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        if model.forward is None or model.own("backward") is None and model.own("vjp") is None:
            continue  # an abstract base or a forward-only Function: nothing to check
        if module.key_of(model) not in module.project.gradchecked_keys:
            yield module.at_class(
                CODE, model,
                f"no gradcheck/gradgradcheck call in the project reaches {model.name}: "
                f"its backward formula is untested",
            )
