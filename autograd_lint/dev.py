"""Tools for working on autograd-lint itself, from a checkout: ``python -m autograd_lint.dev``.

``new-rule AGL209 some-name --severity warning --summary "..."`` scaffolds a rule (as ruff's
add_rule script does): the catalogue row, the rule module, the page and the bad/good
fixtures, then regenerates the README's tables. ``readme`` regenerates those tables alone.
CONTRIBUTING.md walks through the rest.

The README's rule and fix tables are rendered here from the catalogue; tests/test_readme.py
checks that the README holds exactly what these functions render.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Mapping, Optional, Sequence

from autograd_lint.catalogue import RULES, RuleInfo

REPO_ROOT = Path(__file__).resolve().parent.parent
SEVERITIES = ("error", "warning", "info")


# --- the README's generated tables ----------------------------------------------------------


def render_rule_table(rules: Mapping[str, RuleInfo] = RULES) -> str:
    lines = ["| Code | Name | Severity | Default | What it flags |", "|---|---|---|---|---|"]
    for code, info in rules.items():
        default = "on" if info.default_enabled else "opt-in"
        if not info.static:
            default = "`--dynamic`" + ("" if info.default_enabled else ", opt-in")
        linked = f"[{code}](rules/{code}.md)" if info.static else code
        lines.append(f"| {linked} | {info.name} | {info.severity_text} | {default} | {_cell(info.summary)} |")
    return "\n".join(lines)


def render_fix_table(rules: Mapping[str, RuleInfo] = RULES) -> str:
    """One line per fix: codes that share a rewrite and its safety (AGL201 and AGL207) share a line."""
    codes_by_fix: dict[tuple[str, str], list[str]] = {}
    for code, info in rules.items():
        if info.fixable:
            codes_by_fix.setdefault((info.fix, info.fix_safety), []).append(code)
    lines = ["| code | fix | safety |", "|---|---|---|"]
    for (fix, safety), codes in codes_by_fix.items():
        lines.append(f"| {', '.join(codes)} | {_cell(fix)} | {safety} |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


TABLES = {"rule-table": render_rule_table, "fix-table": render_fix_table}  # README marker -> renderer


def table_bounds(text: str, marker: str) -> tuple[int, int]:
    """Where the generated table sits: after the line ``<!-- NAME:start ... -->``, up to
    ``<!-- NAME:end -->``."""
    start = text.index("\n", text.index(f"<!-- {marker}:start")) + 1
    return start, text.index(f"<!-- {marker}:end -->")


def generated_table(text: str, marker: str) -> str:
    start, end = table_bounds(text, marker)
    return text[start:end].strip()


def regenerate_readme(text: str, rules: Mapping[str, RuleInfo] = RULES) -> str:
    for marker, render in TABLES.items():
        start, end = table_bounds(text, marker)
        text = text[:start] + render(rules) + "\n" + text[end:]
    return text


# --- new-rule -------------------------------------------------------------------------------

_CODE = re.compile(r"^AGL[1-8]\d\d$")  # AGL000 and the AGL9xx runtime codes are not rules to add
_NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_ROW = re.compile(r'^        RuleInfo\("(AGL\d{3})"', re.M)

_EXAMPLE = '''import torch


class Double(torch.autograd.Function):{marker}
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2
'''


def catalogue_row(info: RuleInfo) -> str:
    # json.dumps writes a valid Python string literal (double quotes, escapes Python reads too).
    opt_in = ", default_enabled=False" if not info.default_enabled else ""
    return (f'        RuleInfo({json.dumps(info.code)}, {json.dumps(info.name)}, {json.dumps(info.severity)},\n'
            f'                 {json.dumps(info.summary, ensure_ascii=False)}{opt_in}),\n')


def insert_row(catalogue_text: str, info: RuleInfo) -> str:
    """The catalogue with ``info``'s row before the first row of a higher code (rows are in code order)."""
    later = [m for m in _ROW.finditer(catalogue_text) if m.group(1) > info.code]
    if not later:
        raise ValueError("the catalogue has no row after the new code to insert before")
    at = later[0].start()
    return catalogue_text[:at] + catalogue_row(info) + catalogue_text[at:]


def with_rule(rules: Mapping[str, RuleInfo], info: RuleInfo) -> dict[str, RuleInfo]:
    """``rules`` with ``info`` where ``insert_row`` puts its row."""
    return dict(sorted({**rules, info.code: info}.items()))


def rule_module_stub(info: RuleInfo) -> str:
    return f'''"""{info.code} {info.name}: {info.summary}.

Scaffolded by ``python -m autograd_lint.dev new-rule``. The check below is a placeholder that
flags every Function class on its ``class`` line: the new code is visibly wired end to end (the
marker of fixtures/{info.code}/bad.py is met, ``--explain {info.code}`` prints the page), and the
tests stay red (fixtures/{info.code}/good.py, the page's "Use instead" block) until the real check
replaces it. See CONTRIBUTING.md.
"""

from __future__ import annotations

from typing import Iterator

from autograd_lint.analysis.module import ModuleAnalysis
from autograd_lint.findings import Finding

CODE = "{info.code}"


def check(module: ModuleAnalysis) -> Iterator[Finding]:
    for model in module.classes:
        yield module.at_class(CODE, model, f"{{model.name}}: {info.name} (placeholder check, not written yet)")
'''


def page_stub(info: RuleInfo) -> str:
    default = "on" if info.default_enabled else f"off — enable with --select {info.code}"
    example = _EXAMPLE.format(marker="")
    return f'''# {info.code}: {info.name}

Severity: {info.severity} · Default: {default}

## What it does
TODO: what the rule flags, and where its finding points. In short: {info.summary}.

## Why is this bad?
TODO: what goes wrong at runtime, and why that makes it a {info.severity}.

## Example
```python
{example}```

## Use instead
```python
{example}```

## When it stays silent
TODO: the near-misses the rule leaves alone (fixtures/{info.code}/good.py holds them).

## How --dynamic confirms it
Not confirmed yet. TODO: say why nothing can be run, or describe the runtime check (a confirmer
in `autograd_lint/dynamic/confirmers/` and `confirmable=True` in the catalogue row).

## References
- TODO: the PyTorch documentation or source this rule relies on.
'''


def fixture_stubs(info: RuleInfo) -> dict[str, str]:
    return {
        # The docstring must not spell the marker out: tests/test_fixtures.py reads a marker
        # anywhere on a line, and would expect a finding on line 1.
        "bad.py": f'"""{info.code} {info.name}: bad cases.\n\nA line where a finding is expected ends with '
                  f'an expect marker naming {info.code},\nas the class line below does.\n"""\n\n'
                  + _EXAMPLE.format(marker=f"  # expect: {info.code}"),
        "good.py": f'"""{info.code} {info.name}: near-misses that must stay silent (no markers)."""\n\n'
                   + _EXAMPLE.format(marker=""),
    }


def new_rule(root: Path, code: str, name: str, severity: str, summary: str, default_enabled: bool = True,
             rules: Mapping[str, RuleInfo] = RULES) -> list[Path]:
    """Write the files of a new rule under the checkout ``root``; the paths written, in order.
    Raises ValueError (nothing written) for a taken or malformed code or name."""
    if not _CODE.match(code):
        raise ValueError(f"{code!r} is not a code to add: AGL followed by three digits, 100 to 899")
    if not _NAME.match(name):
        raise ValueError(f"{name!r} is not a rule name: lower-case words joined by '-'")
    if severity not in SEVERITIES:
        raise ValueError(f"severity must be one of {', '.join(SEVERITIES)}")
    if not summary.strip():
        raise ValueError("the summary is the README table's 'What it flags': it cannot be empty")
    if code in rules:
        raise ValueError(f"{code} is taken: {rules[code].name}")
    taken = {info.name: c for c, info in rules.items()}
    if name in taken:
        raise ValueError(f"{name} is taken by {taken[name]}")
    info = RuleInfo(code, name, severity, summary.strip(), default_enabled=default_enabled)
    catalogue = root / "autograd_lint" / "catalogue.py"
    module = root / "autograd_lint" / "rules" / f"{info.rule_module}.py"
    page = root / "rules" / f"{code}.md"
    fixtures = root / "fixtures" / code
    readme = root / "README.md"
    for path in (module, page, fixtures):
        if path.exists():
            raise ValueError(f"{path} exists already")
    new_catalogue = insert_row(catalogue.read_text(encoding="utf-8"), info)
    new_readme = regenerate_readme(readme.read_text(encoding="utf-8"), with_rule(rules, info))
    written = [catalogue, module, page]
    catalogue.write_text(new_catalogue, encoding="utf-8")
    module.write_text(rule_module_stub(info), encoding="utf-8")
    page.write_text(page_stub(info), encoding="utf-8")
    fixtures.mkdir()
    for file_name, text in fixture_stubs(info).items():
        (fixtures / file_name).write_text(text, encoding="utf-8")
        written.append(fixtures / file_name)
    readme.write_text(new_readme, encoding="utf-8")
    return [*written, readme]


# --- command line ---------------------------------------------------------------------------


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograd_lint.dev", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    add = commands.add_parser("new-rule", help="scaffold a rule: catalogue row, module, page, fixtures")
    add.add_argument("code", help="the new code, e.g. AGL209")
    add.add_argument("name", help="the rule's name, lower-case words joined by '-', e.g. save-in-loop")
    add.add_argument("--severity", choices=SEVERITIES, default="warning")
    add.add_argument("--summary", required=True, help="one line: what it flags (the README table's last column)")
    add.add_argument("--opt-in", action="store_true", help="off by default (enabled with --select CODE)")
    commands.add_parser("readme", help="regenerate the README's rule and fix tables from the catalogue")
    args = parser.parse_args(argv)

    if not (REPO_ROOT / "rules").is_dir() or not (REPO_ROOT / "README.md").is_file():
        print(f"error: {REPO_ROOT} is not a checkout of autograd-lint (no rules/ or README.md)", file=sys.stderr)
        return 2
    if args.command == "readme":
        readme = REPO_ROOT / "README.md"
        readme.write_text(regenerate_readme(readme.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    try:
        written = new_rule(REPO_ROOT, args.code.upper(), args.name, args.severity, args.summary,
                           default_enabled=not args.opt_in)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path.relative_to(REPO_ROOT).as_posix()}")
    print(f"next: write the check in {written[1].relative_to(REPO_ROOT).as_posix()}, the page and the fixtures "
          "(CONTRIBUTING.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
