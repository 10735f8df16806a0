"""The records every part of autograd-lint passes around: a finding, and a file's result."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from autograd_lint.catalogue import RULES

# `typing` for type checkers only: a warm run (the cache answers) imports this module, and
# `typing` would be a few percent of it (see selection.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


@dataclass(frozen=True, order=True)
class RelatedLocation:
    """Another place a finding's reasoning passes through (the inherited ``forward`` whose inputs
    a ``backward`` is counted against, the base class a dependent's note names): SARIF's
    ``relatedLocations``, the editor's ``relatedInformation``. Only where the model knows it."""

    path: str
    line: int  # 1-based
    column: int  # 1-based
    message: str


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    line: int  # 1-based
    column: int  # 1-based
    code: str
    message: str
    end_line: int = 0
    end_column: int = 0
    function_class: Optional[str] = None
    method: Optional[str] = None
    fix_available: bool = False
    fix_safe: Optional[bool] = None  # with fix_available: applied by --fix without --unsafe-fixes
    confirmation: Optional[str] = None  # set by --dynamic only
    evidence: Optional[str] = None
    # This finding's own severity, for a rule graded by harm (AGL304: a write is an error, a read
    # a warning); empty: the catalogue's severity for the code. Every reporter reads ``severity``.
    level: str = ""
    # Other places the finding's reasoning passes through; not in the JSON format (its schema is
    # a stable contract: docs/json-schema.md), shown by SARIF and the language server.
    related: tuple[RelatedLocation, ...] = ()

    @property
    def name(self) -> str:
        return RULES[self.code].name

    @property
    def severity(self) -> str:
        return self.level or RULES[self.code].severity

    def with_path(self, path: str) -> "Finding":
        """The finding moved to ``path``, with its related locations in its own file (the cache
        stores results under the path "" and gives them back under the file's path)."""
        if not self.related:
            return replace(self, path=path)
        related = tuple(replace(r, path=path) if r.path == self.path else r for r in self.related)
        return replace(self, path=path, related=related)

    def to_json(self) -> dict:
        """The finding in the stable JSON schema of docs/json-schema.md (field order kept)."""
        data = asdict(self)
        return {
            "path": data["path"],
            "line": data["line"],
            "column": data["column"],
            "end_line": data["end_line"] or data["line"],
            "end_column": data["end_column"] or data["column"],
            "code": self.code,
            "name": self.name,
            "severity": self.severity,
            "message": self.message,
            "function_class": self.function_class,
            "method": self.method,
            "fix_available": self.fix_available,
            "confirmation": self.confirmation,
            "evidence": self.evidence,
        }


@dataclass
class FileResult:
    """What a run found in one file."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    function_classes: int = 0
    # "path: what went wrong" for failures of the linter itself (a rule crashing on this file).
    internal_errors: list[str] = field(default_factory=list)
    # (name, line of the `class` statement) of each Function class the static scan found, nested
    # and conditional ones included: ``--dynamic`` accounts for every one of them.
    function_class_sites: list[tuple[str, int]] = field(default_factory=list)
