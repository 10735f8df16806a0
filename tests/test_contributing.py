"""CONTRIBUTING.md followed literally: on a copy of the repository, its step 1 (the scaffold
command, as written) and its step 4 (the test command, as written) give what the document says.

The document names the tests that fail right after the scaffold (the placeholder check flags
good.py and the page's "Use instead" block); every other test of the command passes, and
bad.py's marker is met. When the checkout already has the example's code (a contributor who
followed the document), the same commands run with a code and name no rule has.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from autograd_lint.catalogue import RULES
from conftest import REPO_ROOT, copy_checkout, free_rule_code

CONTRIBUTING = REPO_ROOT / "CONTRIBUTING.md"


def step(number: int) -> str:
    """The text of step ``number`` of "Adding a rule"."""
    text = CONTRIBUTING.read_text(encoding="utf-8")
    start = re.search(rf"^### {number}\. .*$", text, re.M)
    assert start, f"CONTRIBUTING.md has no step {number}"
    end = re.compile(r"^#{2,3} ", re.M).search(text, start.end())
    return text[start.end(): end.start() if end else len(text)]


def command_of(section: str) -> str:
    """The one shell command of a section, continuation lines joined."""
    (block,) = re.findall(r"^```sh\n(.+?)\n```", section, re.M | re.S)
    return block.replace("\\\n", " ")


def run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    words = shlex.split(command)
    assert words[:2] == ["python", "-m"], command
    # `python -m` in the copy: the current directory comes first on sys.path, so the copy's
    # package and tests run.
    return subprocess.run([sys.executable, *words[1:]], cwd=cwd, capture_output=True, text=True, timeout=600)


def test_contributing_recipe_gives_what_it_describes(tmp_path: Path) -> None:
    scaffold, tests = command_of(step(1)), command_of(step(4))
    code, name = shlex.split(scaffold)[4:6]
    assert re.fullmatch(r"AGL\d{3}", code) and code in tests, (scaffold, tests)
    expected_red = set(re.findall(rf"`(test_\w+\[{code}\])`", step(4)))
    assert expected_red, f"step 4 names the tests that the placeholder check keeps red for {code}"
    if code in RULES or name in {info.name for info in RULES.values()}:  # the example is taken here
        free_code, free_name = free_rule_code(RULES, {info.name for info in RULES.values()})
        scaffold = scaffold.replace(code, free_code).replace(name, free_name)
        tests = tests.replace(code, free_code)
        expected_red = {test.replace(code, free_code) for test in expected_red}
        code = free_code

    copy = copy_checkout(tmp_path / "checkout")
    made = run(scaffold, copy)
    assert made.returncode == 0, made.stderr
    assert f"wrote fixtures/{code}/bad.py" in made.stdout, made.stdout

    result = run(tests, copy)
    output = result.stdout + result.stderr
    failed = {line.split("::")[-1].split(" ")[0] for line in output.splitlines() if line.startswith("FAILED ")}
    assert failed == expected_red, output[-5000:]
    assert re.search(r"\d+ passed", output), output[-3000:]
    assert "error" not in output.splitlines()[-1], output[-3000:]  # no test errored
    assert "missing (false negatives)" not in output, output[-5000:]  # bad.py's marker is met
    assert f"good.py:" in output  # the placeholder flags the near-miss, as step 4 says
