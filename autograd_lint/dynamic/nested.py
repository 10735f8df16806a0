"""Function classes that an import leaves inside functions it never calls, defined from their own
source where that gives the very class the function would make.

A class statement inside a function (a factory, a method that builds a surrogate on demand, a test)
exists only once the function runs; the import does not run it, and calling it needs arguments the
linter would have to guess. But where the class's code reads no name of the functions around it
(no parameter, no local: only the module's globals and builtins), running its statement in the
module's namespace makes the same class: its methods, decorators and bases mean what they would
mean inside the function. Such a class is then checked like any other; one that reads a name of
its function stays "not defined", and the reason names what it reads.

Runs in the child only (it executes the user's class statement, as importing the module does).
"""

from __future__ import annotations

import ast
import symtable
import textwrap
from dataclasses import dataclass
from typing import Any, Optional

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class NestedClass:
    """A class statement whose nearest enclosing scope is a function."""

    node: ast.ClassDef
    qualname: str  # as Python would name it: ``make.<locals>.Cube``
    function: str  # the innermost function around it, as a call: ``Learner.build()``
    function_locals: frozenset[str]  # every name the functions around it bind (parameters included)


def nested_classes(source: str, filename: str) -> list[NestedClass]:
    """Class statements of ``source`` that sit in a function (under any ``if``, ``for``, ``try``
    of it), not in another class that itself sits in a function."""
    try:
        tree = ast.parse(source, filename)
        table = symtable.symtable(source, filename, "exec")
    except (SyntaxError, ValueError, RecursionError):
        return []
    found: list[NestedClass] = []

    def visit(node: ast.AST, prefix: str, functions: list[ast.AST], in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                if functions and not in_class:
                    found.append(NestedClass(child, prefix + child.name, _call_name(prefix),
                                             frozenset().union(*(_locals(table, f) for f in functions))))
                visit(child, f"{prefix}{child.name}.", functions, in_class or bool(functions))
            elif isinstance(child, _FUNCTIONS):
                visit(child, f"{prefix}{child.name}.<locals>.", [*functions, child], in_class)
            elif isinstance(child, ast.Lambda):
                continue
            else:
                visit(child, prefix, functions, in_class)

    visit(tree, "", [], False)
    return found


def names_read_from_functions(nested: NestedClass, source: str) -> Optional[set[str]]:
    """The names of the functions around it that the class's code reads (its decorators, bases,
    body and methods); None when its statement does not compile on its own (``nonlocal``)."""
    text = _statement_text(nested.node, source)
    try:
        table = symtable.symtable(text, "<class>", "exec")
    except (SyntaxError, ValueError, RecursionError):
        return None
    read = {symbol.get_name() for symbol in table.get_symbols() if symbol.is_referenced()}
    stack = list(table.get_children())
    while stack:
        scope = stack.pop()
        stack.extend(scope.get_children())
        read.update(symbol.get_name() for symbol in scope.get_symbols()
                    if symbol.is_global() or (symbol.is_free() and scope.get_type() == "class"))
    return read & nested.function_locals


def define(nested: NestedClass, source: str, module: Any) -> Any:
    """Run the class statement in a copy of the module's namespace (a class of the same name at
    the module's top level is left alone); returns the class, named as Python would have."""
    text = _statement_text(nested.node, source)
    first = min([nested.node.lineno] + [d.lineno for d in nested.node.decorator_list])
    code = compile("\n" * (first - 1) + text, getattr(module, "__file__", None) or "<module>", "exec")
    namespace = dict(vars(module))
    exec(code, namespace)  # noqa: S102 - the user's class statement, as the import would run it
    cls = namespace[nested.node.name]
    cls.__qualname__ = nested.qualname
    return cls


def _statement_text(node: ast.ClassDef, source: str) -> str:
    lines = source.splitlines(keepends=True)
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return textwrap.dedent("".join(lines[first - 1:node.end_lineno or node.lineno]))


def _locals(table: symtable.SymbolTable, function: ast.AST) -> frozenset[str]:
    scope = _scope_of(table, function)
    if scope is None:  # cannot tell what it binds: everything it names
        return frozenset(node.id for node in ast.walk(function) if isinstance(node, ast.Name))
    return frozenset(symbol.get_name() for symbol in scope.get_symbols()
                     if symbol.is_local() or symbol.is_parameter())


def _scope_of(table: symtable.SymbolTable, function: ast.AST) -> Optional[symtable.SymbolTable]:
    stack = [table]
    while stack:
        scope = stack.pop()
        if (scope.get_type() == "function" and scope.get_name() == getattr(function, "name", None)
                and scope.get_lineno() == function.lineno):
            return scope
        stack.extend(scope.get_children())
    return None


def _call_name(prefix: str) -> str:
    return prefix.removesuffix(".<locals>.").replace(".<locals>.", ".") + "()"
