"""The catalogue (autograd_lint/catalogue.py) is the single source of a rule's properties, and
every property it claims has its implementation: a rule module per static code, a page per code,
a fixer per fixable code, a confirmer per confirmable one. The pages' "Fix safety" sections are
checked in tests/test_rule_pages.py, the fixtures in tests/test_fixtures.py, the README's tables
in tests/test_readme.py. The scaffold (``python -m autograd_lint.dev new-rule``) is run once on a
copy of the checkout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograd_lint.catalogue import RULES
from conftest import REPO_ROOT, copy_checkout, free_rule_code, run_cli

RULES_PACKAGE = REPO_ROOT / "autograd_lint" / "rules"
FIX_SAFETIES = ("safe", "unsafe")


def codes(flag: str) -> set[str]:
    return {code for code, info in RULES.items() if getattr(info, flag)}


def test_rows_are_keyed_by_their_code_in_code_order():
    assert all(code == info.code for code, info in RULES.items())
    assert list(RULES) == sorted(RULES)
    names = [info.name for info in RULES.values()]
    assert len(names) == len(set(names))


def test_every_rule_module_is_a_catalogue_row_and_the_reverse():
    """Each static code (AGL000 and AGL001 aside) has ``rules/<code>_<name>.py`` declaring that CODE, and
    no rule module is left without a row."""
    from autograd_lint.rules import RULE_CHECKS

    expected = {info.rule_module for info in RULES.values() if info.has_rule_module}
    on_disk = {path.stem for path in RULES_PACKAGE.glob("agl*.py")}
    assert on_disk == expected
    assert set(RULE_CHECKS) == codes("has_rule_module") == codes("static") - {"AGL000", "AGL001"}


def test_every_code_has_a_page():
    assert {code for code in RULES if not (REPO_ROOT / "rules" / f"{code}.md").is_file()} == set()


def test_every_fixable_code_has_a_fixer_and_no_other():
    from autograd_lint.fix.options import FIXABLE_CODES
    from autograd_lint.fix.registry import FIXERS

    assert set(FIXERS) == FIXABLE_CODES == codes("fixable")


def test_fix_flags_are_consistent():
    for code, info in RULES.items():
        if info.fixable:
            assert info.fix_safety.split(";")[0] in FIX_SAFETIES, f"{code}: fix_safety {info.fix_safety!r}"
            assert (RULES_PACKAGE.parent / "fix" / f"{info.fix_module}.py").is_file(), code
        else:
            assert not (info.fix_safety or info.fix_reads_whole_module or info.fixer), f"{code} has no fix"


def test_explains_names_runtime_failures():
    """``explains`` links a static rule to the runtime codes (or AGL903/AGL905 kinds) it accounts for."""
    from autograd_lint.dynamic.dedupe import KINDS

    runtime = {code for code, info in RULES.items() if not info.static}
    for code, info in RULES.items():
        for failure in info.explains:
            failed, _, kind = failure.partition(":")
            assert info.static and failed in runtime, f"{code}: {failure}"
            assert (kind in KINDS.get(failed, ())) if kind else failed != "AGL903", f"{code}: {failure}"


def test_whole_module_and_project_wide_codes_come_from_the_catalogue():
    from autograd_lint.fix.context import WHOLE_MODULE_CODES
    from autograd_lint.flake8_plugin import PROJECT_WIDE_CODES

    assert WHOLE_MODULE_CODES == codes("fix_reads_whole_module") == {"AGL001", "AGL104", "AGL501"}
    assert set(PROJECT_WIDE_CODES) == codes("project_wide") == {"AGL502"}


def test_confirmable_codes_come_from_the_catalogue():
    from autograd_lint.dynamic.confirm import CONFIRMABLE_CODES, SHOWN_BY_A_RAISING_FORWARD

    assert CONFIRMABLE_CODES == codes("confirmable")
    assert SHOWN_BY_A_RAISING_FORWARD == codes("confirmed_when_forward_raises")
    assert SHOWN_BY_A_RAISING_FORWARD <= CONFIRMABLE_CODES
    assert CONFIRMABLE_CODES <= codes("static")


def test_every_confirmable_code_has_a_confirmer_and_no_other():
    pytest.importorskip("torch")
    from autograd_lint.dynamic.confirmers import CONFIRMERS

    assert set(CONFIRMERS) == codes("confirmable")


def test_catalogue_imports_nothing_heavy():
    """fix/options.py (FIXABLE_CODES) and every front read the catalogue: it must stay cheap."""
    script = ("import sys; import autograd_lint.catalogue, autograd_lint.fix.options; "
              "print(sorted(m for m in ('libcst', 'torch', 'autograd_lint.rules', 'autograd_lint.fix.registry', "
              "'autograd_lint.dynamic.confirm') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO_ROOT, check=True)
    assert proc.stdout.strip() == "[]"


# --- the scaffold, once, on a copy of the checkout ------------------------------------------


def test_new_rule_scaffold_is_picked_up(tmp_path):
    """``new-rule`` in a copy of the checkout writes a row, module, page and fixtures that the
    copy's own CLI and structural tests pick up: ``--explain`` prints the page, the placeholder
    check meets bad.py's marker, and the catalogue, page, fixture and README checks pass there.
    It scaffolds a code and name no rule has, not CONTRIBUTING's example (AGL209): a contributor
    who follows CONTRIBUTING has that code in the checkout (tests/test_contributing.py runs the
    document's own recipe)."""
    copy = copy_checkout(tmp_path / "checkout")
    code, name = free_rule_code(RULES, {info.name for info in RULES.values()})
    module = f"{code.lower()}_{name.replace('-', '_')}"

    def python(*args: str) -> subprocess.CompletedProcess:
        # -m runs the copy's package: the current directory comes first on sys.path.
        return subprocess.run([sys.executable, *args], cwd=copy, capture_output=True, text=True, timeout=300)

    made = python("-m", "autograd_lint.dev", "new-rule", code, name, "--severity", "warning",
                  "--summary", "save_for_backward called inside a loop")
    assert made.returncode == 0, made.stderr
    assert made.stdout.splitlines()[:6] == [
        "wrote autograd_lint/catalogue.py",
        f"wrote autograd_lint/rules/{module}.py",
        f"wrote rules/{code}.md",
        f"wrote fixtures/{code}/bad.py",
        f"wrote fixtures/{code}/good.py",
        "wrote README.md",
    ], made.stdout
    again = python("-m", "autograd_lint.dev", "new-rule", code, "other-name", "--summary", "x")
    assert again.returncode == 2 and f"{code} is taken" in again.stderr

    explained = run_cli("--explain", name, cwd=copy)  # run_cli puts the copy first on PYTHONPATH
    assert explained.returncode == 0, explained.stderr
    assert explained.stdout == (copy / "rules" / f"{code}.md").read_text(encoding="utf-8")

    linted = run_cli("--format", "json", f"fixtures/{code}/bad.py", cwd=copy)
    found = [(f["code"], f["line"]) for f in json.loads(linted.stdout)["findings"]]
    bad_lines = (copy / "fixtures" / code / "bad.py").read_text(encoding="utf-8").splitlines()
    marked = [number for number, line in enumerate(bad_lines, 1) if line.endswith(f"# expect: {code}")]
    assert found == [(code, line) for line in marked] and marked
    # Only those lines carry a marker as tests/test_fixtures.py reads them (a docstring that
    # spelled the marker out made it expect a finding on line 1).
    from test_fixtures import markers_in

    fixtures = copy / "fixtures" / code
    assert {line for _, line, _ in markers_in(fixtures / "bad.py", fixtures)} == set(marked)

    structural = python("-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "tests/test_catalogue.py",
                        "tests/test_readme.py", f"tests/test_rule_pages.py::test_page_structure[{code}]",
                        "tests/test_rule_pages.py::test_every_code_has_a_page_and_every_page_a_code",
                        "tests/test_fixtures.py::test_every_static_rule_has_fixtures",
                        "-k", "not scaffold and not confirmer")
    assert structural.returncode == 0, structural.stdout[-3000:]
