"""Project-wide facts, gathered in a cheap first pass over every linted file.

Some rules need to know about other files: a Function base class defined elsewhere (AGL105,
base-class resolution), ``.apply(...)`` call sites (AGL101's legacy defaults), and which Function
classes any ``gradcheck`` reaches (AGL502). Each file contributes a small ``FileFacts``; the merged
``ProjectFacts`` is handed to the per-file analysis, so serial, parallel and cached runs see the
same facts.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Iterable, Optional

from autograd_lint.analysis.module_index import FUNCTION_BASES, ModuleIndex, build_module_index


@dataclass
class FileFacts:
    # class name -> (resolved last names of its bases, is it directly a Function class)
    classes: list[tuple[str, list[str], bool]] = field(default_factory=list)
    apply_arg_counts: dict[str, list[Optional[int]]] = field(default_factory=dict)
    gradchecked_names: set[str] = field(default_factory=set)
    # module-level function -> Function classes it applies (`def cube(x): return Cube.apply(x)`),
    # so a gradcheck of the helper in another file reaches the class.
    helpers: dict[str, set[str]] = field(default_factory=dict)


@dataclass
class ProjectFacts:
    function_names: frozenset[str] = frozenset()
    subclassed_names: frozenset[str] = frozenset()  # Function classes some other class derives from
    apply_arg_counts: dict[str, list[Optional[int]]] = field(default_factory=dict)
    gradchecked_names: frozenset[str] = frozenset()

    @classmethod
    def merge(cls, all_facts: Iterable[FileFacts]) -> "ProjectFacts":
        all_facts = list(all_facts)
        classes = [c for facts in all_facts for c in facts.classes]
        function_names = {name for name, _, direct in classes if direct}
        changed = True
        while changed:  # subclasses of subclasses, across files
            changed = False
            for name, bases, _ in classes:
                if name not in function_names and any(b in function_names for b in bases):
                    function_names.add(name)
                    changed = True
        subclassed = {b for name, bases, _ in classes if name in function_names for b in bases}
        apply_counts: dict[str, list[Optional[int]]] = {}
        gradchecked: set[str] = set()
        for facts in all_facts:
            for name, counts in facts.apply_arg_counts.items():
                apply_counts.setdefault(name, []).extend(counts)
            gradchecked |= facts.gradchecked_names
        helpers: dict[str, set[str]] = {}
        for facts in all_facts:
            for name, applied in facts.helpers.items():
                helpers.setdefault(name, set()).update(applied)
        for _ in range(2):  # helpers calling helpers, two levels
            gradchecked |= {c for name in list(gradchecked) for c in helpers.get(name, ())}
        return cls(
            function_names=frozenset(function_names),
            subclassed_names=frozenset(subclassed & function_names),
            apply_arg_counts=apply_counts,
            gradchecked_names=frozenset(gradchecked),
        )


def facts_from_index(index: ModuleIndex) -> FileFacts:
    facts = FileFacts()
    for info in index.classes:
        base_names = [q.rsplit(".", 1)[-1] for q in info.qualified_bases if q]
        direct = any(q in FUNCTION_BASES for q in info.qualified_bases)
        facts.classes.append((info.name, base_names, direct or info.is_function))
    facts.apply_arg_counts = {k: list(v) for k, v in index.apply_arg_counts.items()}
    for call in index.gradcheck_calls:
        facts.gradchecked_names |= call.reached_names
    for statement in index.tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            applied = {
                node.value.id
                for node in ast.walk(statement)
                if isinstance(node, ast.Attribute) and node.attr == "apply" and isinstance(node.value, ast.Name)
            }
            if applied:
                facts.helpers[statement.name] = applied
    for alias, class_name in index.aliases.items():  # `cube = Cube.apply`
        facts.helpers.setdefault(alias, set()).add(class_name)
    return facts
