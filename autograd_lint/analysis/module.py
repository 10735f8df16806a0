"""Everything the rules see about one file: its index, its Function class models, the project."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Optional

import libcst as cst

from autograd_lint.analysis.class_model import FunctionModel, Method
from autograd_lint.analysis.module_index import CallSite, ModuleIndex
from autograd_lint.analysis.names import Scope
from autograd_lint.analysis.parameters import TrainableArguments
from autograd_lint.analysis.project import ProjectFacts
from autograd_lint.analysis.snippet import RemoteClass, Span
from autograd_lint.catalogue import RULES
from autograd_lint.findings import Finding, RelatedLocation

if TYPE_CHECKING:
    from autograd_lint.analysis.source_file import SourceFile


@dataclass
class ModuleAnalysis:
    """Built by ``SourceFile.analysis``: the file's models for one set of project facts."""

    source: SourceFile
    index: ModuleIndex
    project: ProjectFacts
    classes: list[FunctionModel] = field(default_factory=list)
    # Classes libcst could not parse (its grammar lags CPython's, e.g. a line holding only a
    # backslash continuation): (class line, class name).
    unparsed: list[tuple[int, str]] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.source.path

    @property
    def text(self) -> str:
        return self.source.text

    @property
    def lines(self) -> list[str]:
        return self.source.lines

    def module_function(self, name: str) -> Optional[Method]:
        """The file's module-level ``def name``, parsed on first ask (Function classes call few)."""
        return self.source.module_function(name)

    @cached_property
    def trainable_arguments(self) -> TrainableArguments:
        """Which ``.apply`` arguments this file's callers fill with a trainable parameter
        (``analysis.parameters``): AGL308's evidence, and AGL105's that a caller needs a gradient."""
        return TrainableArguments(self.index.tree, self.text, self.index.imports.qualify,
                                  frozenset(self.index.symbols.defined))

    @property
    def scope(self) -> Scope:
        """Resolves the names written in this module (``names``)."""
        return self.index.scope

    def key_of(self, model: FunctionModel) -> str:
        """The project-wide key of a Function class of this module (``names``)."""
        return f"{self.index.scope.module.name}.{model.name}"

    def finding(
        self,
        code: str,
        span: Span | CallSite,
        message: str,
        model: Optional[FunctionModel] = None,
        method: Optional[Method] = None,
        severity: str = "",
        related: tuple[RelatedLocation, ...] = (),
    ) -> Finding:
        """``related``: other places the rule's reasoning passes through (``related``); the
        methods the rule rests on that the class inherits are added here, for every rule."""
        if model is not None:
            related = related + self._inherited(code, model, span.line)
        if model is not None and (severity or RULES[code].severity) == "error":
            doubt = model.certainty.doubt(RULES[code].rests_on)
            if doubt is not None:  # an unknown never makes an error (analysis.certainty)
                severity, message = "warning", f"{message} (not certain: {doubt})"
            elif model.certainty.unreached:  # a bug no caller can reach harms nothing yet
                severity = "warning"
                message = (f"{message} (no code of the project applies {model.name}, and its module is "
                           f"private: nothing reaches this yet)")
        return Finding(
            path=self.path,
            line=span.line,
            column=span.column,
            end_line=span.end_line,
            end_column=span.end_column,
            code=code,
            message=message,
            function_class=model.name if model is not None else None,
            method=method.name if method is not None else None,
            level=severity,
            related=related,
        )

    def related(self, method: Method, node: cst.CSTNode, message: str) -> tuple[RelatedLocation, ...]:
        """A related location at ``node`` of ``method`` (of this file, or of the file a base
        class it is inherited from lies in); none when that file is not known."""
        if isinstance(method.parsed, RemoteClass):
            place = method.parsed.elsewhere(node)
            if place is None:
                return ()
            path, span = place
        else:
            path, span = self.path, method.span(node)
        return (RelatedLocation(path, span.line, span.column, message),)

    def _inherited(self, code: str, model: FunctionModel, line: int) -> tuple[RelatedLocation, ...]:
        """The ``def`` of each method the rule's conclusion rests on (``RuleInfo.rests_on``)
        that the class inherits from a base class: the other half of the reasoning (backward
        here counted against forward there)."""
        found: tuple[RelatedLocation, ...] = ()
        for name in RULES[code].rests_on:
            method = model.methods.get(name)
            if method is None or not method.inherited:
                continue
            place = self.related(method, method.node, f"{name}, inherited from {method.owner}")
            if place and (place[0].path, place[0].line) != (self.path, line):
                found += place
        return found

    def at(self, code: str, model: FunctionModel, method: Optional[Method], node: cst.CSTNode, message: str,
           severity: str = "", related: tuple[RelatedLocation, ...] = ()) -> Finding:
        """A finding at ``node`` of ``method`` (or of the class statement when method is None);
        ``severity``: its own, for a rule graded by harm (else the catalogue's); ``related``:
        other places its reasoning passes through (``related``)."""
        span = method.span(node) if method is not None else model.parsed.span(node)
        return self.finding(code, span, message, model, method, severity, related)

    def at_def(self, code: str, model: FunctionModel, method: Method, message: str, severity: str = "") -> Finding:
        """A finding on the ``def`` line of a method (not its decorators)."""
        whole = method.span(method.node)  # libcst starts a FunctionDef at `def`, after decorators
        name = method.span(method.node.name)
        return self.finding(code, Span(whole.line, whole.column, name.end_line, name.end_column), message, model, method,
                            severity)

    def at_class(self, code: str, model: FunctionModel, message: str, severity: str = "") -> Finding:
        node = model.info.node
        return self.finding(code, Span(node.lineno, node.col_offset + 1, node.lineno, node.col_offset + 1),
                            message, model, severity=severity)
