"""Writing the results of a run: one module per output format, chosen by ``--format``.

A formatter is ``write(run, out, color)``; add a format by adding its module and one entry to
``FORMATS``: text (flake8's lines), json (docs/json-schema.md), sarif (GitHub code scanning),
github (workflow-command annotations). Only the chosen format's module is imported: every run
pays for its imports (``json``, ``urllib``), and most runs print text.
"""

from __future__ import annotations

import importlib

# `typing` for type checkers only: every run of the CLI imports this module (see selection.py).
TYPE_CHECKING = False
if TYPE_CHECKING:  # the engine (and its parser) is not needed to format, nor for --help
    from collections.abc import Callable
    from typing import TextIO

    from autograd_lint.engine import FileResult
    from autograd_lint.findings import Finding

    Formatter = Callable[["LintRun", TextIO, bool], None]


class LintRun:
    """Everything a formatter may report: the per-file results in order, and the time taken."""

    def __init__(self, results: list[FileResult], seconds: float) -> None:
        self.results = results
        self.seconds = seconds

    @property
    def findings(self) -> list["Finding"]:
        """Files in discovery order, each file's findings by position."""
        return [
            finding
            for result in self.results
            for finding in sorted(result.findings, key=lambda f: (f.line, f.column, f.code, f.message))
        ]

    @property
    def files_with_findings(self) -> int:
        return sum(1 for result in self.results if result.findings)

    def summary(self) -> dict:
        """The ``summary`` object of the JSON schema (docs/json-schema.md)."""
        return {
            "files": len(self.results),
            "files_with_functions": sum(1 for result in self.results if result.function_classes),
            "function_classes": sum(result.function_classes for result in self.results),
            "findings": sum(len(result.findings) for result in self.results),
            "seconds": round(self.seconds, 3),
        }


# --format's name -> the module under autograd_lint.report that writes it
FORMATS: dict[str, str] = {
    "text": "text",
    "json": "json_format",
    "sarif": "sarif",
    "github": "github",
}


def formatter(name: str) -> Formatter:
    """The ``write`` function of the format ``name`` (one of ``FORMATS``)."""
    return importlib.import_module(f"autograd_lint.report.{FORMATS[name]}").write
