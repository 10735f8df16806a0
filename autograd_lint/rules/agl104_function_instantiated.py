"""AGL104 function-instantiated: MyFn() / MyFn()(x) instead of MyFn.apply(x)."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding

CODE = "AGL104"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for name, site in module.index.instantiations:
        key = module.scope.function_key(name)
        if key is None:
            continue  # the name means something else here: a class of its own, or we cannot tell
        class_name = key.rpartition(".")[2]
        if module.project.defines(key, "__call__"):
            continue  # a deliberate callable wrapper object: calling the instance runs its own __call__
        finding = module.finding(
            CODE, site,
            f"{name}() instantiates a Function class: call {name}.apply(...) instead "
            f"(calling an instance raises 'Legacy autograd function with non-static forward method is deprecated')",
        )
        yield replace(finding, function_class=class_name)  # the class instantiated (--dynamic runs it)
