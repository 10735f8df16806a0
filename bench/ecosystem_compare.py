"""What bench/ecosystem.py does with its result files: compare two, count one, write the report.

A result file (written by ``bench/ecosystem.py run``) is JSON::

    {"autograd_lint": {"commit": ..., "dirty": ..., "version": ...},
     "options": {"select": ...},
     "packages": {"torch": {"version": "2.13.0", "paths": ["torch", "torchgen"],
                            "exit_status": 1, "stderr": [...], "summary": {...},
                            "findings": [{"path", "line", "code", "severity", "message", ...}]}}}

A finding is the same finding in two results when its package, file, code and message agree.
Two results then differ by new findings (only in the second), gone ones (only in the first) and
moved ones (in both, at another line: the file was edited, or the report points elsewhere), as
ruff's ecosystem check reports them.

The report (``bench/ecosystem-findings.md``) lists every error-severity finding with a verdict
written by hand. Writing it again keeps each verdict whose finding is still reported, at the same
line or another (or with a reworded message at the same line), and the notes between the NOTES
markers, so the hand-written part survives.

No downloads and no linting here: tests/test_ecosystem_compare.py tests it with small results.
"""

from __future__ import annotations

import collections
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

VERDICTS = ("real", "harmless here", "false")
NOTES_START = "<!-- notes: written by hand, kept when the report is written again -->"
NOTES_END = "<!-- notes end -->"


@dataclass(frozen=True)
class Finding:
    package: str
    path: str
    line: int
    code: str
    severity: str
    message: str

    @property
    def identity(self) -> tuple[str, str, str, str]:
        """What stays the same when only the line changes."""
        return (self.package, self.path, self.code, self.message)


@dataclass
class Comparison:
    new: list[Finding]
    gone: list[Finding]
    moved: list[tuple[Finding, Finding]]  # (before, after)
    not_compared: dict[str, str]  # package: why (linted in one result only, or the CLI failed)

    def counts(self, by: str) -> dict[str, dict[str, int]]:
        """{code or package: {"new": n, "gone": n, "moved": n}}; by is "code" or "package"."""
        table: dict[str, dict[str, int]] = collections.defaultdict(lambda: {"new": 0, "gone": 0, "moved": 0})
        for kind, findings in (("new", self.new), ("gone", self.gone), ("moved", [after for _, after in self.moved])):
            for finding in findings:
                table[getattr(finding, by)][kind] += 1
        return dict(sorted(table.items()))

    @property
    def unchanged(self) -> bool:
        return not (self.new or self.gone or self.moved)


def load_result(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SystemExit(f"cannot read the result file {path}: {error}") from None


def findings_of(result: dict, severity: Optional[str] = None) -> list[Finding]:
    """Every finding of a result, in package, file, line order."""
    found = [
        Finding(package, raw["path"], int(raw["line"]), raw["code"], raw.get("severity", ""), raw["message"])
        for package, entry in result.get("packages", {}).items()
        for raw in entry.get("findings", [])
        if severity is None or raw.get("severity") == severity
    ]
    return sorted(found, key=lambda f: (f.package, f.path, f.line, f.code, f.message))


def compare(before: dict, after: dict) -> Comparison:
    """New, gone and moved findings from result ``before`` to result ``after``.

    Within one identity (package, file, code, message), findings at the same line are unchanged;
    the rest are paired in line order as moved, and what is left over is gone or new. Only
    packages linted in both results are compared: a package added to or dropped from the list
    is not a change of the linter, nor is a package on which the CLI failed (exit status 2: its
    findings would all read as gone)."""
    not_compared = {}
    for name in sorted(set(before.get("packages", {})) | set(after.get("packages", {}))):
        for label, result, other in (("before", before, after), ("after", after, before)):
            entry = result.get("packages", {}).get(name)
            if entry is None:
                not_compared[name] = f"linted {'after' if label == 'before' else 'before'} only"
            elif entry.get("exit_status", 0) not in (0, 1):
                not_compared[name] = f"the CLI failed {label} (exit status {entry['exit_status']})"
    packages = set(before.get("packages", {})) & set(after.get("packages", {})) - set(not_compared)
    old = _by_identity(f for f in findings_of(before) if f.package in packages)
    new = _by_identity(f for f in findings_of(after) if f.package in packages)
    comparison = Comparison(new=[], gone=[], moved=[], not_compared=not_compared)
    for identity in sorted(set(old) | set(new)):
        left, right = list(old.get(identity, [])), list(new.get(identity, []))
        for finding in list(left):
            match = next((other for other in right if other.line == finding.line), None)
            if match is not None:
                left.remove(finding)
                right.remove(match)
        paired = min(len(left), len(right))
        comparison.moved.extend(zip(left[:paired], right[:paired]))
        comparison.gone.extend(left[paired:])
        comparison.new.extend(right[paired:])
    return comparison


def _by_identity(findings: Iterable[Finding]) -> dict[tuple, list[Finding]]:
    grouped: dict[tuple, list[Finding]] = collections.defaultdict(list)
    for finding in findings:
        grouped[finding.identity].append(finding)
    return grouped


def format_comparison(comparison: Comparison, before_name: str = "before", after_name: str = "after") -> str:
    """The changes as text: totals, a table per code and per package, then every change."""
    lines = [f"{before_name} -> {after_name}: {len(comparison.new)} new, {len(comparison.gone)} gone, "
             f"{len(comparison.moved)} moved" + (" (no change)" if comparison.unchanged else "")]
    lines += [f"not compared: {name} ({why})" for name, why in comparison.not_compared.items()]
    if comparison.unchanged:
        return "\n".join(lines) + "\n"
    for by in ("code", "package"):
        lines += ["", f"| {by} | new | gone | moved |", "|---|---:|---:|---:|"]
        for key, counts in comparison.counts(by).items():
            lines.append(f"| {key} | +{counts['new']} | -{counts['gone']} | ~{counts['moved']} |")
    for title, sign, findings in (("new", "+", comparison.new), ("gone", "-", comparison.gone)):
        if findings:
            lines += ["", f"{title}:"]
            lines += [f"{sign} {f.package} {f.path}:{f.line} {f.code} [{f.severity}] {f.message}" for f in findings]
    if comparison.moved:
        lines += ["", "moved:"]
        lines += [f"~ {a.package} {a.path}:{a.line} -> {b.line} {a.code} [{a.severity}] {a.message}"
                  for a, b in comparison.moved]
    return "\n".join(lines) + "\n"


def summary(result: dict) -> dict[str, dict[str, dict[str, int]]]:
    """{code: {severity: {package: count}}}, every level sorted."""
    table: dict = collections.defaultdict(lambda: collections.defaultdict(collections.Counter))
    for finding in findings_of(result):
        table[finding.code][finding.severity][finding.package] += 1
    return {code: {severity: dict(sorted(packages.items())) for severity, packages in sorted(by_severity.items())}
            for code, by_severity in sorted(table.items())}


def function_classes(entry: dict) -> Optional[int]:
    """The Function classes the CLI found in one package (its JSON summary), or None where the
    result has no summary (the CLI failed, or a result written before the count was kept)."""
    count = (entry.get("summary") or {}).get("function_classes")
    return count if isinstance(count, int) else None


def packages_without_function_classes(result: dict) -> list[str]:
    """One line per package that yields no Function class: a wrong paths= or a meta-package
    with no Python code (flash-linear-attention 0.6.0 was linted empty for weeks) would
    otherwise count as a package with no findings."""
    problems = []
    for name, entry in sorted(result.get("packages", {}).items()):
        count = function_classes(entry)
        spec = f"{name}=={entry.get('version', '?')}"
        linted = ", ".join(entry.get("paths") or []) or "nothing"
        if count is None:
            problems.append(f"{spec}: the CLI reported no Function-class count (exit status "
                            f"{entry.get('exit_status', '?')}; linted {linted})")
        elif count == 0:
            problems.append(f"{spec} yields no Function class (linted {linted}): give the right paths= "
                            "or drop it from the list")
    return problems


def _class_count_text(entry: dict) -> str:
    count = function_classes(entry)
    return "?" if count is None else str(count)


def format_summary(result: dict) -> str:
    """A table with a row per code and severity, a column per package that has findings."""
    counts = summary(result)
    packages = sorted({package for by_severity in counts.values() for per in by_severity.values() for package in per})
    lines = ["| code | severity | total | " + " | ".join(packages) + " |",
             "|---|---|---:|" + "---:|" * len(packages)]
    for code, by_severity in counts.items():
        for severity, per in by_severity.items():
            cells = [str(per.get(package, "")) for package in packages]
            lines.append(f"| {code} | {severity} | {sum(per.values())} | " + " | ".join(cells) + " |")
    total = sum(n for by_severity in counts.values() for per in by_severity.values() for n in per.values())
    linted = ", ".join(f"{name} {entry.get('version', '?')} ({_class_count_text(entry)} Function classes)"
                       for name, entry in sorted(result.get("packages", {}).items()))
    return "\n".join(lines) + f"\n\n{total} findings in {len(result.get('packages', {}))} packages: {linted}\n"


# --- the report with verdicts ---------------------------------------------------------------

_ROW = re.compile(r"^\| (?P<package>[^|]+?) \| `(?P<path>[^`]+):(?P<line>\d+)` \| (?P<message>.*) \| (?P<verdict>.*?) \|$")
_CODE_HEADING = re.compile(r"^## (?P<code>AGL\d{3})\b")


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|")


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def read_verdicts(markdown: str) -> dict[tuple, list[tuple[int, str]]]:
    """{(package, path, code, message): [(line, verdict), ...]} from an existing report."""
    verdicts: dict[tuple, list[tuple[int, str]]] = collections.defaultdict(list)
    code = None
    for line in markdown.splitlines():
        heading = _CODE_HEADING.match(line)
        if heading:
            code = heading.group("code")
            continue
        row = _ROW.match(line)
        if row and code:
            identity = (row.group("package"), row.group("path"), code, _unescape(row.group("message")))
            verdicts[identity].append((int(row.group("line")), _unescape(row.group("verdict")).strip()))
    return verdicts


def read_notes(markdown: str) -> str:
    start, end = markdown.find(NOTES_START), markdown.find(NOTES_END)
    if start < 0 or end < start:
        return ""
    return markdown[start + len(NOTES_START):end].strip("\n")


def assign_verdicts(findings: list[Finding], known: dict[tuple, list[tuple[int, str]]]) -> dict[Finding, str]:
    """The verdict of each finding, taken from the known row of the same identity nearest in
    line (each known row used once); failing that, from a row of the same package, file, code
    and line whose message changed (a rule reworded: the code judged is the same); "" where none."""
    remaining = {identity: list(rows) for identity, rows in known.items()}
    verdicts: dict[Finding, str] = {}
    # Exact lines first, so that a finding that did not move keeps its own row.
    for exact in (True, False):
        for finding in findings:
            if finding in verdicts:
                continue
            rows = remaining.get(finding.identity) or []
            if not rows:
                continue
            nearest = min(rows, key=lambda row: abs(row[0] - finding.line))
            if exact and nearest[0] != finding.line:
                continue
            rows.remove(nearest)
            verdicts[finding] = nearest[1]
    for finding in findings:
        if finding in verdicts:
            continue
        for (package, path, code, _), rows in remaining.items():
            same_line = next((row for row in rows if row[0] == finding.line), None)
            if (package, path, code) == finding.identity[:3] and same_line is not None:
                rows.remove(same_line)
                verdicts[finding] = same_line[1]
                break
    return {finding: verdicts.get(finding, "") for finding in findings}


def verdict_kind(verdict: str) -> Optional[str]:
    """"real", "harmless here" or "false" from a verdict cell ("false: torchgen's own Type"), or None."""
    text = verdict.strip().lower()
    for kind in VERDICTS:
        if text == kind or re.match(re.escape(kind) + r"\b", text):
            return kind
    return None


def render_report(result: dict, existing: str = "", command: str = "python bench/ecosystem.py run") -> str:
    """bench/ecosystem-findings.md: a header with the totals, the hand-written notes, the
    warnings per code, then a table per code with a row per error finding and its verdict."""
    errors = findings_of(result, severity="error")
    verdicts = assign_verdicts(errors, read_verdicts(existing))
    by_code: dict[str, list[Finding]] = collections.defaultdict(list)
    for finding in errors:
        by_code[finding.code].append(finding)

    packages = result.get("packages", {})
    tool = result.get("autograd_lint", {})
    select = result.get("options", {}).get("select")
    packages_file = result.get("options", {}).get("packages_file") or "ecosystem-packages.txt"
    default_list = packages_file == "ecosystem-packages.txt"
    packages_option = "" if default_list else f" --packages bench/{packages_file}"
    report_file = "ecosystem-findings.md" if default_list else Path(packages_file).stem + "-findings.md"
    lines = [
        "# autograd-lint on published packages: the ecosystem check" if default_list else
        f"# autograd-lint on published packages: bench/{packages_file}",
        "",
        f"`{command}{packages_option}` downloads the pinned packages of `bench/{packages_file}` (never importing",
        "them), lints each with the CLI and writes the findings as JSON; then",
        f"`python bench/ecosystem.py report RESULT.json --write bench/{report_file}` writes this",
        "file again, keeping every verdict whose finding is still reported (at any line, or reworded at",
        "the same line) and the notes.",
        "Each error-severity finding below was read in its code and judged: `real` (a maintainer",
        "would act: crash, silently wrong gradient, leak, caller's tensor corrupted), `harmless here`",
        "(matches the rule's wording, no harm where it stands) or `false` (the rule's definition is not met).",
        "",
        f"autograd-lint {tool.get('version', '?')} at commit {str(tool.get('commit', '?'))[:12]}"
        + (" (with uncommitted changes)" if tool.get("dirty") else "")
        + (f", `--select {select}`" if select else ", default rules")
        + f"; {len(packages)} packages, {sum(function_classes(entry) or 0 for entry in packages.values())} Function classes:",
        "",
        "| package | version | Function classes | errors | other findings |",
        "|---|---|---:|---:|---:|",
    ]
    for name, entry in sorted(packages.items()):
        severities = collections.Counter(raw.get("severity") for raw in entry.get("findings", []))
        lines.append(f"| {name} | {entry.get('version', '?')} | {_class_count_text(entry)} | {severities['error']} | "
                     f"{sum(severities.values()) - severities['error']} |")
    lines += [
        "",
        "| code | errors | real | harmless here | false | not judged |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    totals = collections.Counter()
    for code, group in sorted(by_code.items()):
        kinds = collections.Counter(verdict_kind(verdicts[f]) for f in group)
        totals.update(kinds)
        lines.append(f"| {code} | {len(group)} | {kinds['real']} | {kinds['harmless here']} | {kinds['false']} | {kinds[None]} |")
    lines.append(f"| all | {len(errors)} | {totals['real']} | {totals['harmless here']} | {totals['false']} | {totals[None]} |")

    lines += ["", NOTES_START, read_notes(existing), NOTES_END, ""]

    warnings = [f for f in findings_of(result) if f.severity != "error"]
    if warnings:
        lines += ["## Other severities (counted, not judged here)", "",
                  "| code | severity | findings | packages |", "|---|---|---:|---|"]
        grouped = collections.Counter((f.code, f.severity) for f in warnings)
        for (code, severity), count in sorted(grouped.items()):
            per = collections.Counter(f.package for f in warnings if f.code == code and f.severity == severity)
            lines.append(f"| {code} | {severity} | {count} | "
                         + ", ".join(f"{name} {n}" for name, n in sorted(per.items())) + " |")
        lines.append("")

    for code, group in sorted(by_code.items()):
        lines += [f"## {code} ({len(group)} error{'s' if len(group) != 1 else ''})", "", "| package | file:line | message | verdict |", "|---|---|---|---|"]
        lines += [f"| {f.package} | `{f.path}:{f.line}` | {_escape(f.message)} | {_escape(verdicts[f])} |" for f in group]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"
