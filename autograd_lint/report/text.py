"""flake8-compatible text: one ``path:line:col: CODE message`` line per finding on stdout.

Nothing else goes to stdout, so editors, problem matchers and ``| wc -l`` see only findings;
the human summary ("Found 3 findings in 2 files") is written to stderr by the CLI.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` for type checkers only (the CLI imports this module on every run)
if TYPE_CHECKING:
    from typing import TextIO

    from autograd_lint.findings import Finding
    from autograd_lint.report import LintRun

_SEVERITY_COLOUR = {"error": "31", "warning": "33", "info": "34"}  # red, yellow, blue


def style(text: str, ansi: str, color: bool) -> str:
    return f"\x1b[{ansi}m{text}\x1b[0m" if color else text


def write(run: "LintRun", out: TextIO, color: bool) -> None:
    for finding in run.findings:
        code = style(finding.code, "1;" + _SEVERITY_COLOUR.get(finding.severity, "0"), color)
        out.write(
            f"{style(finding.path, '1', color)}:{finding.line}:{finding.column}: {code} {finding.message}"
            f"{confirmation_suffix(finding)}\n"
        )


def confirmation_suffix(finding: "Finding") -> str:
    """After a finding that --dynamic looked at: `` [confirmed: evidence]`` for a static finding,
    `` [ran on ... inputs ...]`` for a runtime one (which has no confirmation); nothing otherwise."""
    evidence = " ".join((finding.evidence or "").split())  # one line per finding, always
    if finding.confirmation is None:
        return f" [{evidence}]" if evidence else ""
    return f" [{finding.confirmation}: {evidence}]" if evidence else f" [{finding.confirmation}]"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def summary_line(run: "LintRun", not_checked: tuple[int, int] = (0, 0)) -> str:
    """``not_checked``: (classes --dynamic could not check, classes it saw); "All checks passed"
    is not said of a run that left some out."""
    checked = _plural(len(run.results), "file")
    findings = run.findings
    if not findings and not_checked[0]:
        return (f"No findings, but --dynamic could not check {not_checked[0]} of "
                f"{not_checked[1]} Function class{'' if not_checked[1] == 1 else 'es'} (listed above; "
                f"{checked} checked).")
    if not findings:
        return f"All checks passed ({checked} checked)."
    return (
        f"Found {_plural(len(findings), 'finding')} in {_plural(run.files_with_findings, 'file')} "
        f"({checked} checked)."
    )
