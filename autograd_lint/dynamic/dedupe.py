"""One finding per bug: a runtime failure explained by a confirmed static finding is merged into it.

gradcheck (AGL901), gradgradcheck (AGL902) and the raw-backward check (AGL903) run on every
Function ``--dynamic`` can build inputs for, so a bug that a static rule already points at shows
up twice: ``AGL101 backward returns 1 value for 2 inputs`` on the return line, and ``AGL903
backward returned 1 value for 2 inputs`` on the class line. The static finding says more (the
line, the rule page, often a fix), so it is kept; once it is ``confirmed`` on this class, the
runtime finding it explains is not reported separately but appended to its evidence. A runtime
failure that no confirmed static finding explains (a wrong formula, a second bug) stays.

Parent side: no torch.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from autograd_lint.catalogue import RULES
from autograd_lint.findings import Finding

# What AGL903 can find wrong in backward's raw result (dynamic/checks.py), one kind per problem.
AGL903_KINDS = ("count", "shape", "dtype", "device", "type")
# What AGL905 saw for a non-contiguous gradient: other gradients, or an exception.
AGL905_KINDS = ("values", "raises")
# The runtime codes whose findings name their kinds (``RuntimeResult.kinds``), and those kinds.
KINDS: dict[str, tuple[str, ...]] = {"AGL903": AGL903_KINDS, "AGL905": AGL905_KINDS}


def _explainers(runtime: str) -> frozenset[str]:
    """The static rules whose catalogue row says they explain ``runtime`` ("AGL901", "AGL903:count")."""
    return frozenset(code for code, info in RULES.items() if runtime in info.explains)


# Runtime code -> the static rules whose bug makes that check fail on the same class (the
# catalogue's ``explains``). gradcheck (AGL901) fails when backward raises or returns gradients
# that cannot be right (a wrong count, None, not scaled by grad_output, from the wrong or a
# changed saved tensor, float32 meeting float64); gradgradcheck (AGL902) when backward leaves
# autograd or writes into grad_output: the second derivative is wrong while the first is right.
# AGL905 (a non-contiguous gradient changes backward's result) is explained by a gradient handed
# to a kernel as it came (AGL403), or by an in-place write into the gradient (AGL301): on the
# expanded gradient of `y.sum()` it raises, or a masked write zeroes every element at once.
# Likewise AGL906 (autocast) by AGL603, and AGL907 (undefined gradients) by AGL306.
EXPLAINED_BY: dict[str, frozenset[str]] = {code: _explainers(code) for code, info in RULES.items()
                                           if not info.static and code != "AGL903"}
# AGL903 reports several problems at once; each must be explained for the finding to be merged.
# A kind is explained by the rules that name it ("AGL903:count") or the whole code.
KIND_EXPLAINED_BY: dict[str, dict[str, frozenset[str]]] = {
    code: {kind: _explainers(f"{code}:{kind}") | EXPLAINED_BY.get(code, frozenset()) for kind in kinds}
    for code, kinds in KINDS.items()
}


@dataclass(frozen=True)
class RuntimeResult:
    """A runtime finding as the runner built it, with what dedupe needs to know about it."""

    finding: Finding
    detail: str  # the check's own message, without the class name the finding's message starts with
    class_names: frozenset[str]  # the class's __name__ and __qualname__
    kinds: tuple[str, ...] = ()  # AGL903: some of AGL903_KINDS


@dataclass(frozen=True)
class Merge:
    runtime: Finding
    into: Finding  # the static finding as it was before the merge


def merge_explained(static: list[Finding],
                    runtime: list[RuntimeResult]) -> tuple[list[Finding], list[Finding], list[Merge]]:
    """(static findings, with merged evidence; runtime findings still reported; the merges)."""
    static = list(static)
    kept: list[Finding] = []
    merges: list[Merge] = []
    for result in runtime:
        index = _explaining(static, result)
        if index is None:
            kept.append(result.finding)
            continue
        merges.append(Merge(result.finding, static[index]))
        static[index] = replace(static[index], evidence=_merged_evidence(static[index], result))
    return static, kept, merges


def _explaining(static: list[Finding], result: RuntimeResult) -> Optional[int]:
    """The index of the first confirmed static finding on the same class that explains ``result``."""
    same_class = [(index, finding) for index, finding in enumerate(static)
                  if finding.confirmation == "confirmed" and finding.function_class in result.class_names]
    code = result.finding.code
    if code in KINDS and result.kinds:
        by_kind = KIND_EXPLAINED_BY[code]
        explainers = [next((index for index, finding in same_class
                            if finding.code in by_kind.get(kind, ())), None)
                      for kind in result.kinds]
        return None if None in explainers else min(explainers)
    return next((index for index, finding in same_class if finding.code in EXPLAINED_BY.get(code, ())), None)


def _merged_evidence(static: Finding, result: RuntimeResult) -> str:
    return f"{static.evidence}; also fails {result.finding.code} (merged into this finding): {result.detail}"


def merged_line(merge: Merge) -> str:
    """How the per-class report (``--dynamic-report``) records a merge."""
    return f"{merge.runtime.code} -> {merge.into.code} (line {merge.into.line})"
