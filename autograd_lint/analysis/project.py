"""Project-wide facts, gathered in a cheap first pass over every linted file.

Some rules need to know about other files: a Function base class defined elsewhere (AGL105,
base-class resolution), ``.apply(...)`` call sites (AGL101's legacy defaults), and which Function
classes any ``gradcheck`` reaches (AGL502). Each file contributes a small ``FileFacts``; the merged
``ProjectFacts`` is handed to the per-file analysis, so serial, parallel and cached runs see the
same facts.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from typing import Iterable, Optional

from autograd_lint.analysis.ast_walk import walk
from autograd_lint.analysis.module_index import FUNCTION_BASES, ModuleIndex


@dataclass
class FileFacts:
    # class name -> (resolved last names of its bases, is it directly a Function class)
    classes: list[tuple[str, list[str], bool]] = field(default_factory=list)
    apply_arg_counts: dict[str, list[Optional[int]]] = field(default_factory=dict)
    gradchecked_names: set[str] = field(default_factory=set)
    # module-level function -> Function classes it applies (`def cube(x): return Cube.apply(x)`),
    # so a gradcheck of the helper in another file reaches the class.
    helpers: dict[str, set[str]] = field(default_factory=dict)
    # class name -> methods it defines, and the ctx attributes they set (None: ctx escapes to
    # code we cannot see), so subclasses in other files know what they inherit.
    class_members: dict[str, tuple[set[str], Optional[set[str]]]] = field(default_factory=dict)
    grad_fn_attributes: set[str] = field(default_factory=set)  # `y.grad_fn.attr = ...`


@dataclass
class ProjectFacts:
    function_names: frozenset[str] = frozenset()
    subclassed_names: frozenset[str] = frozenset()  # Function classes some other class derives from
    apply_arg_counts: dict[str, list[Optional[int]]] = field(default_factory=dict)
    gradchecked_names: frozenset[str] = frozenset()
    bases: dict[str, list[str]] = field(default_factory=dict)  # Function class -> its base names
    # Function classes directly derived from torch's Function (their chain ends there)
    roots: frozenset[str] = frozenset()
    class_members: dict[str, tuple[set[str], Optional[set[str]]]] = field(default_factory=dict)
    # ctx attributes some code sets from outside the Function, through an output's grad_fn
    grad_fn_attributes: frozenset[str] = frozenset()

    def fingerprint(self) -> str:
        """A hash of everything here, the same in every process (sets are sorted, so Python's
        per-process string hashing does not change it): the cache key of the per-file results."""
        return hashlib.blake2b(repr(_canonical(self.__dict__)).encode(), digest_size=16).hexdigest()

    def inherited(self, base_names: Iterable[str]) -> Optional[tuple[set[str], set[str]]]:
        """Methods and ctx attributes that Function classes named ``base_names`` (defined in any
        linted file) provide, with their own bases; None when some of it cannot be known."""
        methods: set[str] = set()
        attrs: set[str] = set()
        pending, seen = list(base_names), set()
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            members = self.class_members.get(name)
            if members is None or members[1] is None:
                return None
            methods |= members[0]
            attrs |= members[1]
            if name not in self.roots:
                pending.extend(self.bases.get(name, []))
        return methods, attrs

    def defines(self, class_name: str, member: str) -> bool:
        """Does the class, or one of its bases in any linted file, define ``member``? (methods
        only: unlike ``inherited``, a base whose ctx use is unknown still counts)."""
        pending, seen = [class_name], set()
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            members = self.class_members.get(name)
            if members is not None and member in members[0]:
                return True
            pending.extend(self.bases.get(name, []))
        return False

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
        members: dict[str, tuple[set[str], Optional[set[str]]]] = {}
        for facts in all_facts:
            for name, (methods, attrs) in facts.class_members.items():
                if name in members:  # two classes of that name: keep what both agree on knowing
                    old_methods, old_attrs = members[name]
                    attrs = None if attrs is None or old_attrs is None else attrs | old_attrs
                    methods = methods | old_methods
                members[name] = (methods, attrs)
        return cls(
            grad_fn_attributes=frozenset(a for facts in all_facts for a in facts.grad_fn_attributes),
            bases={name: bases for name, bases, _ in classes if name in function_names},
            roots=frozenset(name for name, _, direct in classes if direct),
            class_members=members,
            function_names=frozenset(function_names),
            subclassed_names=frozenset(subclassed & function_names),
            apply_arg_counts=apply_counts,
            gradchecked_names=frozenset(gradchecked),
        )


def facts_from_index(index: ModuleIndex) -> FileFacts:
    facts = FileFacts()
    for info in index.classes:
        # `nn.Conv2d` resolves to torch.nn.Conv2d: it is not the project's Function `Conv2d`.
        base_names = [
            q.rsplit(".", 1)[-1] for q in info.qualified_bases
            if q and (q in FUNCTION_BASES or not q.startswith("torch."))
        ]
        direct = any(q in FUNCTION_BASES for q in info.qualified_bases)
        facts.classes.append((info.name, base_names, direct or info.is_function))
        facts.class_members[info.name] = (set(info.methods), _ctx_attributes_set(info.node))
    facts.apply_arg_counts = {k: list(v) for k, v in index.apply_arg_counts.items()}
    for call in index.gradcheck_calls:
        facts.gradchecked_names |= call.reached_names
    apply_lines = sorted(line for lines in index.apply_lines.values() for line in lines)
    for statement in index.tree.body if apply_lines else ():
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            applied = {
                name for name, lines in index.apply_lines.items()
                if any(statement.lineno <= line <= (statement.end_lineno or statement.lineno) for line in lines)
            }
            if applied:
                facts.helpers[statement.name] = applied
    for alias, class_name in index.aliases.items():  # `cube = Cube.apply`
        facts.helpers.setdefault(alias, set()).add(class_name)
    return facts


_CTX_METHODS = ("forward", "setup_context", "backward", "jvp", "vjp")


def _ctx_attributes_set(node: ast.ClassDef) -> Optional[set[str]]:
    """ctx attributes a class's methods set (``ctx.x = ...``, ``setattr(ctx, "x", ...)``), read
    from ``ast`` for the first pass; None when ctx is handed to other code."""
    attrs: set[str] = set()
    for method in node.body:
        if not isinstance(method, ast.FunctionDef) or method.name not in _CTX_METHODS:
            continue
        params = method.args.posonlyargs + method.args.args
        is_classmethod = any(isinstance(d, ast.Name) and d.id == "classmethod" for d in method.decorator_list)
        params = params[1:] if is_classmethod else params
        if not params:
            continue
        ctx = params[0].arg
        for sub in walk(method):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == ctx:
                if isinstance(sub.ctx, ast.Store):
                    attrs.add(sub.attr)
                elif sub.attr == "__dict__":
                    return None
            elif isinstance(sub, ast.Call):
                for arg in sub.args:
                    if isinstance(arg, ast.Name) and arg.id == ctx:
                        literal = sub.args[1] if len(sub.args) > 1 else None
                        if (isinstance(sub.func, ast.Name) and sub.func.id == "setattr"
                                and isinstance(literal, ast.Constant) and isinstance(literal.value, str)):
                            attrs.add(literal.value)
                        else:
                            return None
    return attrs


def _canonical(value):
    if isinstance(value, dict):
        return sorted((str(k), _canonical(v)) for k, v in value.items())
    if isinstance(value, (set, frozenset)):
        return sorted(map(str, value))
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value
