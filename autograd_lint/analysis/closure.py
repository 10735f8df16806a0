"""What a Function class defined inside a function reads from that function (its closure).

``def make(w): class F(Function): def forward(ctx, x): return x * w``: ``w`` reaches forward as
a closure variable, not as an input of ``apply``, so autograd and torch.func never see it as one
(rules/AGL606.md). Python's own compiler pass (``symtable``) says which names of a method are
free (bound in an enclosing function, not global, not the method's own); the enclosing
function, parsed with libcst, says by the shared tensor-ness judge whether each is a tensor.
Only files with a nested Function class pay for this.
"""

from __future__ import annotations

import ast
import symtable
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from autograd_lint.analysis.ast_walk import walk
from autograd_lint.analysis.class_model import METHOD_NAMES, FunctionModel, Method, local_assignments, method_of
from autograd_lint.analysis.input_evidence import USE_NODE_CLASSES, ParameterUses, collect_uses, judge_parameter
from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.analysis.snippet import parse_class
from autograd_lint.analysis.syntax import names_read
from autograd_lint.analysis.tensorness import (
    NON_TENSOR_ATTRIBUTES, NON_TENSOR_METHODS, Tensorness, TensorJudge,
)


@dataclass(frozen=True)
class CapturedRead:
    """A name that a method of the class reads from an enclosing function."""

    name: str
    method: Method  # the Function's method that reads it
    node: cst.Name  # its first read there that uses the value (not only ``.shape``/``.size()``)
    function: str  # the enclosing function that binds it
    tensorness: Tensorness  # of the value that function binds to it


def captured_reads(module: ModuleAnalysis, model: FunctionModel,
                   methods: tuple[str, ...] = METHOD_NAMES) -> list[CapturedRead]:
    """Every name the class's own autograd methods read from an enclosing function, in method
    order (forward, backward, setup_context, jvp, vjp), one entry per name; empty for a class at
    module level, when the file's scopes cannot be read, or when forward reads nothing that an
    enclosing function binds (the cheap test that spares symtable's compile). ``methods``: only
    these (AGL606 asks for forward's alone: judging a read's tensor-ness parses the enclosing
    function, which no other method's reads then need)."""
    node = model.info.node
    if node.col_offset == 0 or module.source.tree is None:
        return []  # a module-level class sees only globals
    if not _may_capture(module.source.tree, node, model):
        return []  # the cheap test first: symtable compiles the whole module
    path = _scope_path(_statement_table(module, node), node)
    functions = [table for table in path or [] if table.get_type() == "function"]
    if not functions:
        return []
    class_table = path[-1]
    result: list[CapturedRead] = []
    seen: set[str] = set()
    for name in (m for m in METHOD_NAMES if m in methods):
        method = model.own(name)
        table = _method_table(class_table, name) if method is not None else None
        if table is None:
            continue
        for free in sorted(table.get_frees()):
            binder = _binder(functions, free)
            if free in seen or binder is None:
                continue
            read = _first_value_read(method, free)
            if read is None:
                continue
            seen.add(free)
            result.append(CapturedRead(free, method, read, binder.get_name(),
                                       _tensorness(module, model, binder, free)))
    return result


def _statement_table(module: ModuleAnalysis, node: ast.ClassDef) -> Optional[symtable.SymbolTable]:
    """The scopes of the outermost function that holds the class ``node``, compiled alone: the
    class's enclosing functions all lie in it, and what lies around it binds only globals (a class
    scope around it, a test class of thousands of lines, is no closure). Its lines keep their
    indentation under an ``if 1:`` and are preceded by blank ones, so that each scope keeps its
    line in the file."""
    statement = _outermost_function(module.source.tree, node)
    if statement is None:
        return None
    first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", [])])
    cache = module.__dict__.setdefault("_closure_cache", {})
    key = ("table", first)
    if key not in cache:
        body = "".join(module.lines[first - 1:statement.end_lineno or statement.lineno])
        text = ("\n" * (first - 1) + body) if statement.col_offset == 0 else ("\n" * (first - 2) + "if 1:\n" + body)
        try:
            cache[key] = symtable.symtable(text, module.path, "exec")
        except (SyntaxError, ValueError):
            cache[key] = None
    return cache[key]


def _outermost_function(tree: ast.Module, node: ast.ClassDef) -> Optional[ast.stmt]:
    """The module-level statement that holds ``node``; where that is a class, the first function
    inside it (through nested classes) that holds ``node``."""
    statement = _holding(tree.body, node)
    while isinstance(statement, ast.ClassDef) and statement is not node:
        inner = _holding(statement.body, node)
        if inner is None or inner is node:
            return statement
        statement = inner
    return statement


def _holding(body: list[ast.stmt], node: ast.AST) -> Optional[ast.stmt]:
    return next((s for s in body if s.lineno <= node.lineno <= (s.end_lineno or s.lineno)), None)


def _scope_path(table: Optional[symtable.SymbolTable], node: ast.ClassDef) -> Optional[list[symtable.SymbolTable]]:
    """The scopes from the module down to the class ``node`` (found by name and line)."""
    if table is None:
        return None
    stack = [(table, [table])]
    while stack:
        current, path = stack.pop()
        for child in current.get_children():
            if child.get_type() == "class" and child.get_name() == node.name and child.get_lineno() == node.lineno:
                return path + [child]
            if child.get_lineno() <= node.lineno:
                stack.append((child, path + [child]))
    return None


def _method_table(class_table: symtable.SymbolTable, name: str) -> Optional[symtable.SymbolTable]:
    """The scope of the class's method ``name`` as written last in its body (the one Python keeps)."""
    found = [child for child in class_table.get_children() if child.get_type() == "function" and child.get_name() == name]
    return found[-1] if found else None


def _binder(functions: list[symtable.SymbolTable], name: str) -> Optional[symtable.SymbolTable]:
    """The innermost enclosing function that binds ``name`` itself (a parameter or assignment)."""
    for table in reversed(functions):
        try:
            symbol = table.lookup(name)
        except KeyError:
            continue
        if symbol.is_free() or symbol.is_global():
            continue  # only passed through to an inner scope, or declared global there
        if symbol.is_local() or symbol.is_parameter():
            return table
    return None


def _first_value_read(method: Method, name: str) -> Optional[cst.Name]:
    """The first read of ``name`` in the method's own body that uses its value: not a target,
    an attribute or keyword name, nor only its metadata (``w.shape``, ``w.device``, ``w.size()``)."""
    parents = method.parents
    for node in method.nodes_of(cst.Name):
        if node.value != name:
            continue
        parent = parents.get(id(node))
        if isinstance(parent, cst.Attribute):
            if parent.attr is node:
                continue  # `x.w`
            if parent.attr.value in NON_TENSOR_ATTRIBUTES:
                continue
            grand = parents.get(id(parent))
            if isinstance(grand, cst.Call) and grand.func is parent and parent.attr.value in NON_TENSOR_METHODS:
                continue
        elif isinstance(parent, cst.Arg) and parent.keyword is node:
            continue
        elif isinstance(parent, (cst.AssignTarget, cst.NameItem, cst.AugAssign)) and not (
                isinstance(parent, cst.AugAssign) and parent.value is node):
            continue
        return node
    return None


def _tensorness(module: ModuleAnalysis, model: FunctionModel, binder: symtable.SymbolTable, name: str) -> Tensorness:
    function = _enclosing_method(module, binder)
    if function is None:
        return Tensorness.UNKNOWN
    known: dict[str, Tensorness] = {}
    params = {p.name: p for p in function.params}
    if name in params:
        uses = ParameterUses()
        nodes = list(function.nodes_of(*USE_NODE_CLASSES))
        for method in model.methods.values():
            if not method.inherited:
                nodes += method.nodes_of(*USE_NODE_CLASSES)

        def target(node: cst.CSTNode) -> Optional[ParameterUses]:
            return uses if isinstance(node, cst.Name) and node.value == name else None

        collect_uses(nodes, target, model.qualify)
        param = params[name]
        # Certain evidence only (an annotation, a default, a use): a name or a position is no proof.
        known[name] = judge_parameter(name, param.annotation, param.default, uses, is_first=False, by_name=False)
    judge = TensorJudge(known, local_assignments(function, frozenset(), None), model.qualify)
    return judge.name(name) or Tensorness.UNKNOWN


def _enclosing_method(module: ModuleAnalysis, table: symtable.SymbolTable) -> Optional[Method]:
    """The enclosing function of scope ``table``, parsed with libcst (once per file and function)."""
    cache = module.__dict__.setdefault("_closure_cache", {})
    key = (table.get_name(), table.get_lineno())
    if key not in cache:
        node = _function_at(module.source.tree, key[0], key[1])
        method = None
        if node is not None:
            try:
                parsed = parse_class(module.lines, node)
                method = method_of(parsed.node, "", parsed)
            except cst.ParserSyntaxError:
                method = None
        cache[key] = method
    return cache[key]


def _function_at(tree: ast.Module, name: str, line: int) -> Optional[ast.AST]:
    """The function ``name`` defined on ``line``, searched only in the statements whose lines
    hold it (not every node of the module)."""
    stack: list[ast.AST] = [tree]
    while stack:
        current = stack.pop()
        for child in ast.iter_child_nodes(current):
            start = getattr(child, "lineno", None)
            if start is not None and not start <= line <= (getattr(child, "end_lineno", None) or start):
                continue
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and child.name == name and child.lineno == line:
                return child
            stack.append(child)
    return None


def _may_capture(tree: ast.Module, node: ast.ClassDef, model: FunctionModel) -> bool:
    """Does forward (the only method whose captured reads do harm: AGL606) read a name that an
    enclosing function binds? (A superset of the captured names: symtable then says which reads
    really are free.) Forward's reads first, then each enclosing function until one binds one of
    them: those functions can be whole test methods."""
    forward = model.own("forward")
    reads = names_read(forward.node) if forward is not None else set()
    if not reads:
        return False
    for function in _enclosing_functions(tree, node):
        arguments = function.args
        parameters = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                      arguments.vararg, arguments.kwarg]
        if any(a is not None and a.arg in reads for a in parameters):
            return True
        for inner in walk(function):
            kind = type(inner)
            if kind is ast.Name:
                if inner.id in reads and isinstance(inner.ctx, ast.Store):
                    return True
            elif kind is ast.Import or kind is ast.ImportFrom:
                if any((alias.asname or alias.name).split(".")[0] in reads for alias in inner.names):
                    return True
    return False


def _enclosing_functions(tree: ast.Module, node: ast.ClassDef) -> list[ast.AST]:
    """The functions whose bodies hold ``node``, outermost first, found by descending through
    the statements whose lines contain it (not a walk of the whole module)."""
    found: list[ast.AST] = []
    body = tree.body
    while True:
        holder = next((statement for statement in body if statement is not node
                       and statement.lineno <= node.lineno <= (statement.end_lineno or statement.lineno)), None)
        if holder is None:
            return found
        if isinstance(holder, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(holder)
        body = [child for field in ("body", "orelse", "finalbody", "handlers") for child in getattr(holder, field, [])
                if isinstance(child, ast.stmt) or isinstance(child, ast.excepthandler)]
        if isinstance(holder, ast.Try) or hasattr(holder, "handlers"):
            body += [stmt for handler in getattr(holder, "handlers", []) for stmt in handler.body]
        if not body:
            return found
