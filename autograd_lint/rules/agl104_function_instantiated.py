"""AGL104 function-instantiated: MyFn() / MyFn()(x) instead of MyFn.apply(x)."""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding

CODE = "AGL104"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for name, site in module.index.instantiations:
        yield module.finding(
            CODE, site,
            f"{name}() instantiates a Function class: call {name}.apply(...) instead "
            f"(calling an instance raises 'Legacy autograd function with non-static forward method is deprecated')",
        )
