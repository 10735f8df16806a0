"""A module uses only the public names of the package's other modules.

A leading underscore says "only this module relies on it", so it can be changed without looking
elsewhere. An import of ``_helper`` from another module, or ``module._helper``, breaks that
promise: the helper is shared logic and belongs, public, where both can see it (a rule and its
fixer: the rule module; several rules: ``analysis/``). Modules whose own name starts with an
underscore (``autograd_lint/rules/_common.py``) are shared helpers of their package; their public names are
fair game. Dunder names (``__version__``) are public.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "autograd_lint"


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(source: str, where: str) -> list[str]:
    """Every cross-module use of a private name in ``source``: ``from autograd_lint.x import
    _y`` and ``x._y`` where ``x`` is a module or name imported from the package."""
    tree = ast.parse(source)
    imported: set[str] = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("autograd_lint"):
            for alias in node.names:
                if _is_private(alias.name):
                    found.append(f"{where}:{node.lineno}: from {node.module} import {alias.name}")
                imported.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("autograd_lint"):
                    imported.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in imported
                and _is_private(node.attr)):
            found.append(f"{where}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += private_uses(path.read_text(encoding="utf-8"), str(path.relative_to(REPO_ROOT)))
    assert not found, "private names used across modules:\n" + "\n".join(found)


def test_the_check_sees_both_forms() -> None:
    source = ("from autograd_lint.analysis.flow import _walk, public\n"
              "from autograd_lint.analysis import flow\n"
              "flow._walk(1)\nflow.public(2)\nlocal._private = 3\nx.__version__\n")
    assert private_uses(source, "m.py") == ["m.py:1: from autograd_lint.analysis.flow import _walk",
                                             "m.py:3: flow._walk"]
