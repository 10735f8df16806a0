"""The README stays true: its rule table is the catalogue, its test command is what CI runs.

Regenerate the table with ``python tests/test_readme.py`` and paste it between the markers.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))  # for `python tests/test_readme.py` from a checkout

from autograd_lint.catalogue import RULES  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

README = REPO_ROOT / "README.md"
CI_SCRIPT = REPO_ROOT / ".ci" / "run"
TABLE_START = "<!-- rule-table:start"
TABLE_END = "<!-- rule-table:end -->"


def render_rule_table() -> str:
    lines = ["| Code | Name | Severity | Default | What it flags |", "|---|---|---|---|---|"]
    for code, info in RULES.items():
        default = "on" if info.default_enabled else "opt-in"
        if not info.static:
            default = "`--dynamic`"
        linked = f"[{code}](rules/{code}.md)" if info.static else code
        summary = info.summary.replace("|", "\\|")
        lines.append(f"| {linked} | {info.name} | {info.severity_text} | {default} | {summary} |")
    return "\n".join(lines)


def readme_text() -> str:
    return README.read_text(encoding="utf-8")


def quick_start_commands() -> list[str]:
    section = readme_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```(?:sh|bash|console)?\n(.+?)\n```", section, flags=re.M | re.S)


def test_rule_table_matches_the_catalogue():
    text = readme_text()
    start = text.index("\n", text.index(TABLE_START)) + 1
    table = text[start:text.index(TABLE_END)].strip()
    assert table == render_rule_table(), "README rule table is stale: run `python tests/test_readme.py`"


def test_quick_start_has_exactly_two_one_line_commands():
    commands = quick_start_commands()
    assert len(commands) == 2, commands
    assert all("\n" not in command for command in commands)
    install_and_lint, install_and_test = commands
    assert install_and_lint == "python3 -m pip install . && autograd-lint fixtures/realistic/buggy_ops.py"
    assert install_and_test.endswith("&& python3 -m pytest")


def test_quick_start_example_file_exists():
    assert (REPO_ROOT / "fixtures" / "realistic" / "buggy_ops.py").is_file()


def test_ci_runs_exactly_the_readme_test_command():
    script = CI_SCRIPT.read_text(encoding="utf-8")
    assert script.startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail" in script
    _, install_and_test = quick_start_commands()
    run_lines = [line.strip() for line in script.splitlines() if "pytest" in line and not line.strip().startswith("#")]
    assert run_lines == [install_and_test]


def test_constraints_pin_every_dependency_used_in_tests():
    constraints = {
        re.split(r"[=<>!~ ;]", line, 1)[0].lower()
        for line in (REPO_ROOT / "constraints-test.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    names = {re.split(r"[=<>!~ ;\[]", requirement, 1)[0].lower() for requirement in wanted}
    names.discard("tomli")  # Python < 3.11 only
    assert names <= constraints, names - constraints
    assert "torch" in constraints  # so nothing can pull a CUDA build in by accident


def test_readme_promises_static_mode_never_imports():
    assert "Static mode never imports your code or torch" in readme_text()


if __name__ == "__main__":
    print(render_rule_table())
