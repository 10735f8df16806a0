"""A cheap index of one module, built from Python's own ``ast`` (25x faster than libcst).

It answers the module-level questions: which names the imports bind, which classes are
Function classes (through imports, aliases and earlier subclasses), where Function classes are
instantiated or ``.apply``-ed, and where ``gradcheck``/``gradgradcheck`` are called. The detailed
per-class analysis then parses only those classes with libcst (see ``class_model``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Optional

# Qualified names that make a class a Function class when they appear among its bases.
FUNCTION_BASES = frozenset(
    {
        "torch.autograd.Function",
        "torch.autograd.function.Function",
        "torch.autograd.function.InplaceFunction",
        "torch.autograd.function._SingleLevelFunction",
    }
)
GRADCHECK_NAMES = frozenset(
    {
        "torch.autograd.gradcheck",
        "torch.autograd.gradgradcheck",
        "torch.autograd.gradcheck.gradcheck",
        "torch.autograd.gradcheck.gradgradcheck",
        "torch.testing._internal.common_utils.gradcheck",
        "torch.testing._internal.common_utils.gradgradcheck",
    }
)
_STAR_MODULES = ("torch.autograd", "torch.autograd.function")


def dotted_name(node: ast.AST) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


@dataclass
class ImportMap:
    """Local name -> fully qualified name, from every import statement of the module."""

    names: dict[str, str] = field(default_factory=dict)
    star_modules: set[str] = field(default_factory=set)

    def add(self, node: ast.AST, package: str = "") -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.names[alias.asname] = alias.name
                else:  # `import torch.autograd` binds `torch`
                    top = alias.name.split(".")[0]
                    self.names.setdefault(top, top)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative import: keep it recognisable but never torch's
                module = "." * node.level + module
            for alias in node.names:
                if alias.name == "*":
                    self.star_modules.add(module)
                else:
                    self.names[alias.asname or alias.name] = f"{module}.{alias.name}"

    def qualify(self, dotted: str) -> str:
        """Resolve the first component through the imports: ``ag.Function`` -> ``torch.autograd.Function``."""
        head, _, rest = dotted.partition(".")
        if head in self.names:
            return self.names[head] + ("." + rest if rest else "")
        if head in ("Function", "InplaceFunction", "gradcheck", "gradgradcheck") and any(
            m in _STAR_MODULES for m in self.star_modules
        ):
            module = "torch.autograd.function" if head.endswith("Function") else "torch.autograd"
            return f"{module}.{dotted}"
        return dotted


@dataclass
class ClassInfo:
    """A class statement and what its bases resolve to."""

    node: ast.ClassDef
    name: str
    bases: list[str]  # dotted source text of each base, unresolved ('' when not a dotted name)
    qualified_bases: list[str]
    is_function: bool = False
    # Set when a base is a Function class we cannot see (another file): rules that depend on
    # inherited methods or ctx attributes stay silent.
    has_unknown_function_base: bool = False
    function_bases: list[str] = field(default_factory=list)  # local names of Function-class bases
    methods: set[str] = field(default_factory=set)

    @property
    def line(self) -> int:
        return self.node.lineno


@dataclass
class CallSite:
    line: int
    column: int  # 1-based
    end_line: int
    end_column: int


@dataclass
class GradcheckCall(CallSite):
    function_name: str  # 'gradcheck' or 'gradgradcheck'
    reached_names: set[str] = field(default_factory=set)  # names referenced by the checked callable
    float32_inputs: bool = False


@dataclass
class ModuleIndex:
    tree: ast.Module
    imports: ImportMap
    classes: list[ClassInfo]
    # Function class name -> argument counts of each `.apply(...)` call (None: not countable)
    apply_arg_counts: dict[str, list[Optional[int]]] = field(default_factory=dict)
    instantiations: list[tuple[str, CallSite]] = field(default_factory=list)
    gradcheck_calls: list[GradcheckCall] = field(default_factory=list)
    # Module-level `alias = Fn.apply` / `alias = Fn` bindings, alias -> Function class name
    aliases: dict[str, str] = field(default_factory=dict)

    @property
    def function_classes(self) -> list[ClassInfo]:
        return [c for c in self.classes if c.is_function]


def build_module_index(tree: ast.Module, project_function_names: frozenset[str] = frozenset()) -> ModuleIndex:
    """Index ``tree``. ``project_function_names`` are Function classes defined in other linted files."""
    imports = ImportMap()
    classes: list[ClassInfo] = []
    calls: list[ast.Call] = []
    assigns: list[ast.Assign] = []
    function_defs: dict[str, ast.AST] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.add(node)
        elif isinstance(node, ast.ClassDef):
            bases = [dotted_name(b) or "" for b in node.bases]
            methods = {  # defined with def, or assigned: `backward = staticmethod(_backward)`
                s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
            } | {
                t.id for s in node.body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)
            }
            classes.append(ClassInfo(node, node.name, bases, [], methods=methods))
        elif isinstance(node, ast.Call):
            calls.append(node)
        elif isinstance(node, ast.Assign):
            assigns.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and not isinstance(
            node, ast.Lambda
        ):
            function_defs.setdefault(node.name, node)
    classes.sort(key=lambda c: (c.node.lineno, c.node.col_offset))
    _mark_function_classes(classes, imports, project_function_names)

    index = ModuleIndex(tree=tree, imports=imports, classes=classes)
    function_names = {c.name for c in classes if c.is_function}
    # Function classes imported from other linted files count for call sites too.
    for local, qualified in imports.names.items():
        if qualified.rsplit(".", 1)[-1] in project_function_names:
            function_names.add(local)
    _collect_aliases(index, assigns, function_names)
    _collect_calls(index, calls, function_names, function_defs)
    return index


def _mark_function_classes(
    classes: list[ClassInfo], imports: ImportMap, project_function_names: frozenset[str]
) -> None:
    local_function_names: set[str] = set()
    for info in classes:  # in source order: a base must be defined before its subclass
        info.qualified_bases = [imports.qualify(b) if b else "" for b in info.bases]
        for base, qualified in zip(info.bases, info.qualified_bases):
            if not base:
                continue
            if qualified in FUNCTION_BASES:
                info.is_function = True
            elif base in local_function_names:
                info.is_function = True
                info.function_bases.append(base)
            elif qualified.rsplit(".", 1)[-1] in project_function_names and (
                base in imports.names or "." in base
            ):
                # A Function class from another linted file, imported here.
                info.is_function = True
                info.has_unknown_function_base = True
                info.function_bases.append(base)
        if info.is_function:
            local_function_names.add(info.name)


def _collect_aliases(index: ModuleIndex, assigns: list[ast.Assign], function_names: set[str]) -> None:
    for node in assigns:
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        value = dotted_name(node.value)
        if value is None:
            continue
        head = value.split(".")[0]
        if head in function_names and value in (head, head + ".apply"):
            index.aliases[node.targets[0].id] = head


def _site(node: ast.AST) -> CallSite:
    return CallSite(
        line=node.lineno,
        column=node.col_offset + 1,
        end_line=getattr(node, "end_lineno", None) or node.lineno,
        end_column=(getattr(node, "end_col_offset", None) or node.col_offset) + 1,
    )


def _collect_calls(
    index: ModuleIndex, calls: list[ast.Call], function_names: set[str], function_defs: dict[str, ast.AST]
) -> None:
    # `GradReverse = GradReverse.apply`: after that, calling the name calls apply.
    rebound = {
        target.id
        for statement in index.tree.body
        if isinstance(statement, (ast.Assign, ast.AnnAssign))
        for target in (statement.targets if isinstance(statement, ast.Assign) else [statement.target])
        if isinstance(target, ast.Name)
    }
    for call in calls:
        func = dotted_name(call.func)
        if func is None:
            continue
        parts = func.split(".")
        if len(parts) == 2 and parts[1] == "apply":
            # Recorded for any name: the class may be defined in another linted file. Keyed by the
            # class's own name (`from ops import MyFn as F; F.apply(...)` counts for MyFn).
            countable = not any(isinstance(a, ast.Starred) for a in call.args) and not any(
                k.arg is None for k in call.keywords
            )
            count = len(call.args) + len(call.keywords) if countable else None
            class_name = index.imports.names.get(parts[0], parts[0]).rsplit(".", 1)[-1]
            index.apply_arg_counts.setdefault(class_name, []).append(count)
        elif len(parts) == 1 and func in function_names and func not in rebound:
            index.instantiations.append((func, _site(call)))
        qualified = index.imports.qualify(func)
        if qualified in GRADCHECK_NAMES or (
            parts[-1] in ("gradcheck", "gradgradcheck") and qualified.startswith("torch.")
        ):
            index.gradcheck_calls.append(_gradcheck_call(call, parts[-1], index, function_defs))


def _gradcheck_call(call: ast.Call, name: str, index: ModuleIndex, function_defs: dict[str, ast.AST]) -> GradcheckCall:
    site = _site(call)
    # What the check reaches: every name in the enclosing function (a test usually builds its
    # callable there: `op = MyFn.apply`), or in the call itself at module level. Over-approximating
    # only makes AGL502 quieter.
    scope = _enclosing_scope(index.tree, call)
    reached = _names_reached(scope if scope is not index.tree else call, index, function_defs)
    inputs = call.args[1] if len(call.args) > 1 else _keyword(call, "inputs")
    return GradcheckCall(
        site.line, site.column, site.end_line, site.end_column,
        function_name=name,
        reached_names=reached,
        float32_inputs=inputs is not None and _builds_float32(inputs, index, call),
    )


def _keyword(call: ast.Call, name: str) -> Optional[ast.AST]:
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    return None


def _names_reached(node: ast.AST, index: ModuleIndex, function_defs: dict[str, ast.AST], depth: int = 0) -> set[str]:
    """Every name the checked callable refers to, following aliases and local helper functions once."""
    reached: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute):
            reached.add(sub.attr)  # `ops.MyFn.apply`
        if isinstance(sub, ast.Name):
            reached.add(sub.id)
            if sub.id in index.aliases:
                reached.add(index.aliases[sub.id])
            if sub.id in index.imports.names:  # `from ops import MyFn as M`
                reached.add(index.imports.names[sub.id].rsplit(".", 1)[-1])
            helper = function_defs.get(sub.id)
            if helper is not None and depth < 2:
                reached |= _names_reached(helper, index, function_defs, depth + 1)
    return reached


# --- AGL501: how the gradcheck inputs were built -------------------------------------------------

_FACTORIES = frozenset({"randn", "rand", "zeros", "ones", "empty", "full", "tensor", "arange",
                        "linspace", "randint", "randn_like", "rand_like", "ones_like", "zeros_like",
                        "eye", "normal", "as_tensor"})
_DOUBLE = frozenset({"torch.double", "torch.float64", "double", "float64", "torch.complex128", "torch.cdouble"})


def _builds_float32(inputs: ast.AST, index: ModuleIndex, gradcheck: ast.Call) -> bool:
    """True when some input is certainly built as a float32 tensor that requires grad.

    Looks at the input expressions themselves and, for names, at their single assignment in the
    same function (or module). Anything it cannot see makes it answer False (precision first).
    """
    scope = _enclosing_scope(index.tree, gradcheck)
    if isinstance(inputs, ast.Name):  # `inputs = (a, b)` then gradcheck(f, inputs)
        inputs = _single_assignment(scope, inputs.id, gradcheck) or inputs
    elements = inputs.elts if isinstance(inputs, (ast.Tuple, ast.List)) else [inputs]
    for element in elements:
        if isinstance(element, ast.Name):
            element = _single_assignment(scope, element.id, gradcheck)
            if element is None:
                continue
        if _is_float32_factory(element):
            return True
    return False


def _is_float32_factory(node: ast.AST) -> bool:
    """``torch.randn(3, requires_grad=True)`` (no double dtype), or any ``<tensor>.float()``."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Attribute, ast.Name)):
        return False
    method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
    if method == "float" and not node.args:
        return True
    if method == "requires_grad_":  # torch.randn(3).requires_grad_() / x.float().requires_grad_()
        inner = node.func.value
        return _is_float32_factory(inner) or (_is_factory(inner) and not _has_double_dtype(inner))
    return _is_factory(node) and _requires_grad_set(node) and not _has_double_dtype(node)


def _is_factory(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    head, _, last = (dotted_name(node.func) or "").rpartition(".")
    return head == "torch" and last in _FACTORIES


def _requires_grad_set(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):
        value = _keyword(node, "requires_grad")
        return isinstance(value, ast.Constant) and value.value is True
    return False


def _has_double_dtype(call: ast.Call) -> bool:
    dtype = _keyword(call, "dtype")
    if dtype is None:
        return False
    name = dotted_name(dtype)
    # A dtype we cannot read (a variable) may well be double: count it as double.
    return name is None or name in _DOUBLE or not name.startswith("torch.") or name.split(".")[-1] in _DOUBLE


def _enclosing_scope(tree: ast.Module, target: ast.AST) -> ast.AST:
    best: ast.AST = tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.lineno <= target.lineno <= (node.end_lineno or node.lineno):
                if best is tree or node.lineno >= best.lineno:
                    best = node
    return best


def _single_assignment(scope: ast.AST, name: str, before: ast.AST) -> Optional[ast.AST]:
    values = []
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    values.append(node.value)
                elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(node.value, (ast.Tuple, ast.List)):
                    for t, v in zip(target.elts, node.value.elts):
                        if isinstance(t, ast.Name) and t.id == name:
                            values.append(v)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With)):
            targets = [node.target] if not isinstance(node, ast.With) else [i.optional_vars for i in node.items]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets if t is not None):
                return None
    return values[0] if len(values) == 1 else None
