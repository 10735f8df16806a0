"""The README stays true: its rule and fix tables are the catalogue, its test command is what CI runs.

Regenerate the tables with ``python -m autograd_lint.dev readme`` (autograd_lint/dev.py renders them).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))  # for `python tests/test_readme.py` from a checkout

from autograd_lint.dev import generated_table, regenerate_readme, render_fix_table, render_rule_table  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

README = REPO_ROOT / "README.md"
CI_SCRIPT = REPO_ROOT / ".ci" / "run"


def readme_text() -> str:
    return README.read_text(encoding="utf-8")


def quick_start_commands() -> list[str]:
    section = readme_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```(?:sh|bash|console)?\n(.+?)\n```", section, flags=re.M | re.S)


def test_rule_table_matches_the_catalogue():
    table = generated_table(readme_text(), "rule-table")
    assert table == render_rule_table(), "README rule table is stale: run `python -m autograd_lint.dev readme`"


def test_fix_table_matches_the_catalogue():
    table = generated_table(readme_text(), "fix-table")
    assert table == render_fix_table(), "README fix table is stale: run `python -m autograd_lint.dev readme`"


def test_regenerating_the_readme_changes_nothing():
    assert regenerate_readme(readme_text()) == readme_text()


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
    print(render_rule_table(), render_fix_table(), sep="\n\n")
