"""A cheap index of one module, built from Python's own ``ast`` (25x faster than libcst).

It answers the module-level questions: which names the imports bind, which classes are
Function classes (through imports, aliases and earlier subclasses), where Function classes are
instantiated or ``.apply``-ed, and where ``gradcheck``/``gradgradcheck`` are called. The detailed
per-class analysis then parses only those classes with libcst (see ``class_model``).
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass, field, replace
from typing import Iterable, Iterator, Optional

from autograd_lint.analysis.ast_walk import dotted_name, keyword_value, walk
from autograd_lint.analysis.gradcheck_inputs import builds_float32
from autograd_lint.analysis.names import ModuleName, ModuleSymbols, NameTable, Scope

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
            # A relative import keeps its dots (one per level; names.absolute resolves it against
            # the file's package): recognisable, and never torch's.
            prefix = "." * node.level
            for alias in node.names:
                if alias.name == "*":
                    self.star_modules.add(prefix + module)
                else:
                    self.names[alias.asname or alias.name] = (
                        f"{prefix}{module}.{alias.name}" if module else prefix + alias.name)

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
    # Function-class bases defined in another module: local name -> key (``module.Class``)
    base_keys: dict[str, str] = field(default_factory=dict)
    methods: set[str] = field(default_factory=set)
    # Members of the plain (non-Function) bases listed before the first Function base, which
    # Python's method order puts first (`class Spike(BackwardMixin, Function)`); None when one
    # of them is not a class of this file, so it may define anything.
    mixin_methods: Optional[set[str]] = field(default_factory=set)
    # Bases the run cannot see, so that whether this class is a Function class is unknown:
    # base -> the import it comes from, as written (``.base.Scaled``). Set for a relative import
    # in a module of no package (stdin without its file name, a file copied alone), which no
    # file of the run can answer; AGL002 reports it. A base from a third-party library
    # (``nn.Module``, ``from lib import Base``) is not unseen: it is simply not the project's.
    unseen_bases: dict[str, str] = field(default_factory=dict)

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
    tree: Optional[ast.Module]  # None in a light_index
    imports: ImportMap
    classes: list[ClassInfo]
    # Name written before `.apply(...)` -> argument counts of each such call (None: not countable)
    apply_arg_counts: dict[str, list[Optional[int]]] = field(default_factory=dict)
    # Name written before `.apply(...)` -> for each call, the kind of each positional argument
    # (``literal_kind``; "*" from a starred argument on: any number of anything)
    apply_arg_kinds: dict[str, list[tuple[str, ...]]] = field(default_factory=dict)
    instantiations: list[tuple[str, CallSite]] = field(default_factory=list)
    gradcheck_calls: list[GradcheckCall] = field(default_factory=list)
    # Function class name -> lines of its `.apply(...)` calls (which helper functions apply it)
    apply_lines: dict[str, list[int]] = field(default_factory=dict)
    # Module-level `alias = Fn.apply` / `alias = Fn` bindings, alias -> Function class name
    aliases: dict[str, str] = field(default_factory=dict)
    symbols: ModuleSymbols = field(default_factory=ModuleSymbols)  # what the top level binds
    scope: Optional[Scope] = None  # resolves this module's names, once the project is known

    @property
    def function_classes(self) -> list[ClassInfo]:
        return [c for c in self.classes if c.is_function]


def build_module_index(
    tree: ast.Module, text: str, project_function_names: frozenset[str] = frozenset(),
    skeleton: Optional["ModuleSkeleton"] = None, instantiations: bool = True,
    names: Optional[tuple[ModuleName, NameTable]] = None,
) -> ModuleIndex:
    """Index ``tree`` (parsed from ``text``). ``project_function_names`` are the Function classes
    of all linted files, so subclasses and calls of those defined elsewhere are seen too.
    ``skeleton`` is this module's ``collect_skeleton`` if already computed (it does not depend
    on the project). ``instantiations``: look for every call ``MyFn()`` of the Function classes,
    beyond the lines the skeleton walked (the rules need them; the project facts do not).
    ``names``: this module's name and the project's name table; with them a base class is a
    Function class only as the module's scope resolves it (see ``names``), otherwise (the
    project's first pass) by its name: what the project-wide facts then sort out."""
    collected = skeleton or collect_skeleton(tree, text)
    classes = [replace(c, qualified_bases=[], function_bases=[], is_function=False,
                       has_unknown_function_base=False, unseen_bases={}) for c in collected.classes]
    imports = collected.imports
    symbols = module_symbols(tree, imports)
    scope = Scope(names[0], symbols, names[1]) if names is not None else None
    _mark_function_classes(classes, imports, project_function_names, scope)

    index = ModuleIndex(tree=tree, imports=imports, classes=classes, symbols=symbols, scope=scope)
    function_names = {c.name for c in classes if c.is_function}
    # Function classes imported from other linted files count for call sites too.
    for local, qualified in imports.names.items():
        if qualified.rsplit(".", 1)[-1] in project_function_names:
            function_names.add(local)
    _collect_aliases(index, collected.assigns, function_names)
    calls = collected.calls
    if instantiations and function_names:
        calls = calls + _calls_of_names(tree, text, function_names, collected)
    _collect_calls(index, calls, function_names, collected.function_defs, collected.result_names)
    return index


def _calls_of_names(tree: ast.Module, text: str, names: set[str], skeleton: "ModuleSkeleton") -> list:
    """The calls ``name(...)`` of these names that the skeleton did not collect: a second, small
    walk down to the lines that hold them (``MyFn()``: AGL104's instantiations)."""
    lines = _call_lines(text, names, apply_and_gradcheck=False) - skeleton.interesting_lines
    if not lines:
        return []
    found = ModuleSkeleton(interesting_lines=lines, structural_lines=sorted(lines))
    _walk_statements(tree.body, tree, found)
    # A statement over several lines, one of them the skeleton's, had all its calls collected.
    known = {id(call) for call, _ in skeleton.calls}
    return [(call, scope) for call, scope in found.calls if id(call) not in known]


def light_index(index: ModuleIndex) -> ModuleIndex:
    """``index`` without its syntax trees, for a module without Function classes: what the rules
    read of it (call sites, gradcheck calls) are plain records."""
    return replace(index, tree=None, classes=[])


@dataclass
class ModuleSkeleton:
    """What one walk over a module's statements finds; it does not depend on other files."""

    imports: ImportMap = field(default_factory=ImportMap)
    classes: list[ClassInfo] = field(default_factory=list)
    calls: list[tuple[ast.Call, ast.AST]] = field(default_factory=list)  # (call, enclosing scope)
    assigns: list[ast.Assign] = field(default_factory=list)
    function_defs: dict[str, ast.AST] = field(default_factory=dict)
    # id of a call -> the one name its statement binds the result to (`k = F.apply(k, v)`)
    result_names: dict[int, str] = field(default_factory=dict)
    interesting_lines: set[int] = field(default_factory=set)  # may hold a call worth indexing
    structural_lines: list[int] = field(default_factory=list)  # sorted: those + class + import lines


def collect_skeleton(tree: ast.Module, text: str) -> ModuleSkeleton:
    """Walk the statements of ``tree`` once.

    Walking every node of a large module costs more than parsing it, so the walk goes into a
    block only if its lines hold something of interest (a class or import statement, or a call
    worth indexing: gradcheck, ``.apply``), and down to expressions only on the lines that may
    hold such a call. Calls ``MyFn()`` of Function classes are found once the project's Function
    names are known (``build_module_index``), down to the lines that call those names only:
    looking for calls of every class and imported name here took twice as long.
    """
    skeleton = ModuleSkeleton()
    skeleton.interesting_lines = _call_lines(text)
    skeleton.structural_lines = sorted(_structure_lines(text) | skeleton.interesting_lines)
    _walk_statements(tree.body, tree, skeleton)
    skeleton.classes.sort(key=lambda c: (c.node.lineno, c.node.col_offset))
    _add_members_assigned_later(tree.body, skeleton.classes)
    return skeleton


def _add_members_assigned_later(statements: list[ast.stmt], classes: list[ClassInfo]) -> None:
    """Count ``MyFn.backward = staticmethod(_backward)`` and ``setattr(MyFn, "backward", ...)``
    at module level as members of ``MyFn``: the class has them by the time anyone calls it."""
    module_classes = {id(s) for s in statements if isinstance(s, ast.ClassDef)}
    for statement in statements:
        for class_name, member in _assigned_members(statement):
            defined = [c for c in classes if c.name == class_name and id(c.node) in module_classes
                       and c.node.lineno < statement.lineno]
            if defined:  # the latest definition before the assignment is the one it changes
                defined[-1].methods.add(member)


def _assigned_members(statement: ast.stmt) -> list[tuple[str, str]]:
    """(class name, member) pairs that ``statement`` sets on a plain name from outside."""
    if isinstance(statement, ast.Assign) or (isinstance(statement, ast.AnnAssign) and statement.value is not None):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return [(t.value.id, t.attr) for t in targets
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)]
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        if (isinstance(call.func, ast.Name) and call.func.id == "setattr" and len(call.args) == 3
                and isinstance(call.args[0], ast.Name) and isinstance(call.args[1], ast.Constant)
                and isinstance(call.args[1].value, str)):
            return [(call.args[0].id, call.args[1].value)]
    return []


# A line that starts a class or import statement. Anchored on the newline before it, a literal
# the regex engine jumps to (``^`` under re.M is tried at every position: 2.5x slower).
_STRUCTURE = re.compile(r"\n[ \t]*(?:class|import|from)[ \t]")
_STRUCTURE_AT_START = re.compile(r"[ \t]*(?:class|import|from)[ \t]")


# Up to this many names, each is searched for as a literal (the fast way for a few); beyond it,
# every `name(` of the text is matched once.
_LITERAL_SEARCHES = 16
_NAME_CALL = re.compile(r"(?<![\w])([^\W\d]\w*)\s*\(")


def _call_lines(text: str, names: Iterable[str] = (), apply_and_gradcheck: bool = True) -> set[int]:
    """Lines that may hold a call worth indexing: gradcheck, ``.apply``, a call of one of ``names``
    (a module's Function classes: a few, each searched for as a literal, the fast way)."""
    positions = _gradcheck_and_apply(text) if apply_and_gradcheck else []
    names = list(names)
    if len(names) > _LITERAL_SEARCHES:
        # Many names (a generated file of thousands of classes): one scan for every call of a
        # plain name, kept when the name is one of them, where a search per name would read the
        # text once per class (quadratic).
        wanted = frozenset(names)
        positions.extend(match.start() for match in _NAME_CALL.finditer(text) if match.group(1) in wanted)
        names = [name for name in names if not name.isidentifier()]  # dotted: searched as before
    for name in names:
        for match in re.finditer(re.escape(name) + r"\s*\(", text):
            start = match.start()
            if not start or not (text[start - 1].isalnum() or text[start - 1] == "_"):  # not `xMyFn(`
                positions.append(start)
    positions.sort()
    calls: set[int] = set()
    line, position = 1, 0
    for start in positions:
        line += text.count("\n", position, start)  # in order: count newlines only since the last one
        position = start
        calls.add(line)
    return calls


def _gradcheck_and_apply(text: str) -> list[int]:
    """Where ``gradcheck`` and ``.apply`` (a whole word) start: two ``str.find`` scans, 3x faster
    than one regex for both (an alternation, which the regex engine tries at every character)."""
    positions = []
    for literal, whole_word in (("gradcheck", False), (".apply", True)):
        find, after = text.find, len(literal)
        start = find(literal)
        while start >= 0:
            end = start + after
            if not whole_word or end == len(text) or not (text[end].isalnum() or text[end] == "_"):
                positions.append(start)
            start = find(literal, end)
    return positions


def _structure_lines(text: str) -> set[int]:
    """Numbers of the lines that start with ``class``, ``import`` or ``from``."""
    lines: set[int] = {1} if _STRUCTURE_AT_START.match(text) else set()
    line, position = 1, 0
    for match in _STRUCTURE.finditer(text):  # in order: count newlines only since the last match
        line += text.count("\n", position, match.start()) + 1  # + the newline matched
        position = match.start() + 1
        lines.add(line)
    return lines


_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _walk_statements(statements: list[ast.stmt], scope: ast.AST, collected: ModuleSkeleton) -> None:
    for statement in statements:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            collected.imports.add(statement)
        elif isinstance(statement, ast.ClassDef):
            bases = [dotted_name(b) or "" for b in statement.bases]
            methods = {  # defined with def, or assigned: `backward = staticmethod(_backward)`
                s.name for s in statement.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
            } | {
                t.id for s in statement.body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)
            }
            collected.classes.append(ClassInfo(statement, statement.name, bases, [], methods=methods))
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            collected.function_defs.setdefault(statement.name, statement)
        elif isinstance(statement, ast.Assign):
            collected.assigns.append(statement)
        _collect_statement_calls(statement, scope, collected)
        if not _has_marked_line(collected.structural_lines, statement):
            continue  # nothing of interest inside: do not walk the block
        inner = statement if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else scope
        for name in _BLOCK_FIELDS:
            block = getattr(statement, name, None)
            if not block:
                continue
            for item in block:
                if isinstance(item, ast.stmt):
                    _walk_statements([item], inner if name == "body" else scope, collected)
                else:  # an except handler or a match case: its own statements
                    _walk_statements(item.body, scope, collected)
                    extra = getattr(item, "guard", None) or getattr(item, "type", None)
                    if extra is not None:
                        _collect_expression_calls(extra, scope, collected)


def _has_marked_line(lines: list[int], statement: ast.stmt) -> bool:
    first = bisect.bisect_left(lines, statement.lineno)
    return first < len(lines) and lines[first] <= (statement.end_lineno or statement.lineno)


def _collect_statement_calls(statement: ast.stmt, scope: ast.AST, collected: ModuleSkeleton) -> None:
    """Calls in the statement itself (not in its nested blocks), if its lines may hold one."""
    first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", [])])
    body = getattr(statement, "body", None)
    last = (body[0].lineno - 1) if isinstance(body, list) and body and isinstance(body[0], ast.stmt) else (
        statement.end_lineno or statement.lineno
    )
    if not any(line in collected.interesting_lines for line in range(first, max(first, last) + 1)):
        return
    target = statement.targets[0] if isinstance(statement, ast.Assign) and len(statement.targets) == 1 else (
        statement.target if isinstance(statement, ast.AnnAssign) else None)
    if isinstance(target, ast.Name) and isinstance(statement.value, ast.Call):
        collected.result_names[id(statement.value)] = target.id
    for name, value in ast.iter_fields(statement):
        if name in _BLOCK_FIELDS:
            continue
        for node in value if isinstance(value, list) else [value]:
            if isinstance(node, ast.AST):
                _collect_expression_calls(node, scope, collected)


def _collect_expression_calls(node: ast.AST, scope: ast.AST, collected: ModuleSkeleton) -> None:
    for sub in walk(node):
        if isinstance(sub, ast.Call):
            collected.calls.append((sub, scope))


def module_symbols(tree: ast.Module, imports: ImportMap) -> ModuleSymbols:
    """What the module's top level binds (in ``if``/``try`` blocks too): its imports, and the
    names it defines itself, with the dotted name assigned to them (``X = ops.Y``) if any."""
    defined: dict[str, Optional[str]] = {}
    pending = list(tree.body)
    while pending:
        statement = pending.pop(0)
        if isinstance(statement, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            defined[statement.name] = None
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            value = dotted_name(statement.value) or ""  # "": a value we cannot follow
            for target in targets:
                if isinstance(target, ast.Name):
                    if value.partition(".")[0] == target.id and target.id in defined:
                        continue  # `MyFn = MyFn.apply`: the name still leads to the class
                    defined[target.id] = value
        elif isinstance(statement, (ast.If, ast.Try)):
            pending.extend(statement.body + statement.orelse + getattr(statement, "finalbody", []))
            for handler in getattr(statement, "handlers", []):
                pending.extend(handler.body)
    for name in imports.names:
        # Bound both ways: a class or def, or an alias (`X = ops.Y`), is what the module means;
        # a fallback value (`except ImportError: FusedFn = None`) is not.
        if defined.get(name, "") == "":
            defined.pop(name, None)
    return ModuleSymbols(imports=dict(imports.names), star_imports=sorted(imports.star_modules), defined=defined)


def _mark_function_classes(
    classes: list[ClassInfo], imports: ImportMap, project_function_names: frozenset[str],
    scope: Optional[Scope] = None,
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
            elif scope is not None:
                key = scope.function_key(base)
                if key is not None:  # a Function class of another module (or of this one, later)
                    info.is_function = True
                    info.has_unknown_function_base = True
                    info.function_bases.append(base)
                    info.base_keys[base] = key
                else:
                    unseen = scope.unseen_import(base)
                    if unseen is not None:
                        info.unseen_bases[base] = unseen
            elif qualified.rsplit(".", 1)[-1] in project_function_names and (
                base in imports.names or "." in base
            ) and not qualified.startswith("torch."):  # nn.Conv2d is not a project's `Conv2d`
                # A Function class from another linted file, imported here.
                info.is_function = True
                info.has_unknown_function_base = True
                info.function_bases.append(base)
        if info.is_function:
            local_function_names.add(info.name)
            info.mixin_methods = _mixin_methods(info, classes)


# Bases that define no autograd method.
_PLAIN_BASES = frozenset({"object", "typing.Generic", "typing.Protocol", "abc.ABC"})


def _mixin_methods(info: ClassInfo, classes: list[ClassInfo]) -> Optional[set[str]]:
    """``ClassInfo.mixin_methods`` of the Function class ``info``."""
    earlier: Optional[dict[str, ClassInfo]] = None
    methods: set[str] = set()
    for base, qualified in zip(info.bases, info.qualified_bases):
        if base in info.function_bases or qualified in FUNCTION_BASES:
            break  # bases after the first Function base come after it in the method order
        if qualified in _PLAIN_BASES or qualified.split("[", 1)[0] in _PLAIN_BASES:
            continue
        if earlier is None:
            # Only for a class with a mixin: building it for every class (and finding the class
            # by equality) cost quadratic time on a file of many Function classes.
            position = next(i for i, c in enumerate(classes) if c is info)
            earlier = {c.name: c for c in classes[:position]}
        mixin = earlier.get(base)  # (a Function class defined earlier is a Function base: the break above)
        if mixin is None:
            return None
        inherited = _mixin_methods(mixin, classes) if mixin.bases else set()
        if inherited is None:
            return None
        methods |= mixin.methods | inherited
    return methods


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
    index: ModuleIndex, calls: list[tuple[ast.Call, ast.AST]], function_names: set[str],
    function_defs: dict[str, ast.AST], result_names: dict[int, str],
) -> None:
    # `GradReverse = GradReverse.apply`: after that, calling the name calls apply.
    rebound = {
        target.id
        for statement in index.tree.body
        if isinstance(statement, (ast.Assign, ast.AnnAssign))
        for target in (statement.targets if isinstance(statement, ast.Assign) else [statement.target])
        if isinstance(target, ast.Name)
    }
    for call, scope in calls:
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
            # Keyed by the name as written: the project facts resolve it in this module's scope.
            index.apply_arg_counts.setdefault(parts[0], []).append(count)
            result_name = result_names.get(id(call))
            index.apply_arg_kinds.setdefault(parts[0], []).append(tuple(
                "*" if isinstance(a, ast.Starred) else
                REBOUND if isinstance(a, ast.Name) and a.id == result_name else
                argument_kind(a, scope, index.tree) for a in call.args))
            index.apply_lines.setdefault(parts[0], []).append(call.lineno)
        elif len(parts) == 1 and func in function_names and func not in rebound:
            index.instantiations.append((func, _site(call)))
        qualified = index.imports.qualify(func)
        if qualified in GRADCHECK_NAMES or (
            parts[-1] in ("gradcheck", "gradgradcheck") and qualified.startswith("torch.")
        ):
            index.gradcheck_calls.append(_gradcheck_call(call, scope, parts[-1], index, function_defs))


_LITERAL_TYPES = (bool, int, float, complex, str, bytes)
# The kind of an argument that the call's own statement rebinds to the result (`k = F.apply(k, v)`):
# after the call, the caller's name refers to the output, not to the tensor it passed.
REBOUND = "rebound"


def literal_kind(node: ast.AST) -> str:
    """What an argument is when it is a literal: "int", "float", "str", "bool", "None",
    "tuple" (of literals)...; "other" for anything else."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
        if not (isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex))):
            return "other"
    if isinstance(node, ast.Constant):
        if node.value is None:
            return "None"
        return type(node.value).__name__ if isinstance(node.value, _LITERAL_TYPES) else "other"
    if isinstance(node, ast.Tuple) and all(literal_kind(e) != "other" for e in node.elts):
        return "tuple"
    return "other"


_SCALAR_ANNOTATIONS = {"int", "float", "bool", "str"}


def argument_kind(node: ast.AST, scope: ast.AST, tree: ast.Module) -> str:
    """``literal_kind``, and also for ``self.attr`` in a method when the class sets that attribute
    once, in ``__init__``, from a literal or from a parameter annotated (or, unannotated,
    defaulted) as a scalar: ``self.im2col_step`` after ``def __init__(self, im2col_step: int = 64)``
    is an int at every call, whatever forward's annotation says."""
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"):
        return literal_kind(node)
    owner = _class_of(scope, tree)
    if owner is None:
        return "other"
    assigned = [
        (method, value)
        for method in owner.body if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
        for value in _self_assignments(method, node.attr)
    ]
    if len(assigned) != 1 or assigned[0][0].name != "__init__":
        return "other"
    init, value = assigned[0]
    if value is None:  # augmented or unpacked: not one clean binding
        return "other"
    if isinstance(value, ast.Name):
        return _parameter_kind(init.args, value.id)
    return literal_kind(value)


def _class_of(scope: ast.AST, tree: ast.Module) -> Optional[ast.ClassDef]:
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef) and any(item is scope for item in statement.body):
            return statement
    return None


def _self_assignments(method: ast.AST, attr: str) -> Iterator[Optional[ast.AST]]:
    """Each write of ``self.<attr>`` in the method: the value bound, or None when it is not a
    plain ``self.attr = value``."""
    for node in ast.walk(method):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for leaf in ast.walk(target):
                    if _is_self_attribute(leaf, attr):
                        yield node.value if leaf is target else None
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and _is_self_attribute(node.target, attr):
            yield node.value if isinstance(node, ast.AnnAssign) else None


def _is_self_attribute(node: ast.AST, attr: str) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == attr
            and isinstance(node.value, ast.Name) and node.value.id == "self")


def _parameter_kind(arguments: ast.arguments, name: str) -> str:
    positional = arguments.posonlyargs + arguments.args
    defaults = dict(zip([a.arg for a in positional][len(positional) - len(arguments.defaults):], arguments.defaults))
    defaults.update({a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None})
    for parameter in positional + arguments.kwonlyargs:
        if parameter.arg != name:
            continue
        annotation = parameter.annotation
        if annotation is not None:
            return annotation.id if isinstance(annotation, ast.Name) and annotation.id in _SCALAR_ANNOTATIONS else "other"
        default = defaults.get(name)
        return literal_kind(default) if default is not None else "other"
    return "other"


def _gradcheck_call(
    call: ast.Call, scope: ast.AST, name: str, index: ModuleIndex, function_defs: dict[str, ast.AST]
) -> GradcheckCall:
    site = _site(call)
    # What the check reaches: every name in the enclosing function (a test usually builds its
    # callable there: `op = MyFn.apply`), or in the call itself at module level. Over-approximating
    # only makes AGL502 quieter.
    reached = _names_reached(scope if scope is not index.tree else call, index, function_defs)
    inputs = call.args[1] if len(call.args) > 1 else keyword_value(call, "inputs")
    return GradcheckCall(
        site.line, site.column, site.end_line, site.end_column,
        function_name=name,
        reached_names=reached,
        float32_inputs=inputs is not None and builds_float32(inputs, scope, call),
    )




def _names_reached(node: ast.AST, index: ModuleIndex, function_defs: dict[str, ast.AST], depth: int = 0) -> set[str]:
    """Every name the checked callable refers to, following aliases and local helper functions once."""
    reached: set[str] = set()
    for sub in walk(node):
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
