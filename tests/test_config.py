"""Configuration: [tool.autograd-lint] discovery and checking, and the selection semantics."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from autograd_lint.catalogue import RULES
from autograd_lint.config import ConfigError, find_config, load_config
from autograd_lint.selection import (
    RulesPerFile,
    EnabledRules,
    SelectorError,
    SelectorLayer,
    parse_selectors,
)
from conftest import BUGGY_SOURCE, assert_no_traceback, run_cli, write
from test_cli import linted_paths

DEFAULTS = {code for code, info in RULES.items() if info.default_enabled}


def pyproject(directory: Path, body: str) -> Path:
    return write(directory / "pyproject.toml", "[tool.autograd-lint]\n" + textwrap.dedent(body))


def enabled(*layers: SelectorLayer) -> set[str]:
    return set(EnabledRules.from_layers(layers).enabled)


# --- selection semantics (unit) ---------------------------------------------------------------

def test_default_selection_is_everything_but_the_opt_in_rules():
    default = EnabledRules.default()
    assert not default.is_enabled("AGL305") and not default.is_enabled("AGL502")
    assert not default.is_enabled("AGL207")
    assert default.is_enabled("AGL000") and default.is_enabled("AGL201")
    assert enabled() == DEFAULTS == set(RULES) - {"AGL207", "AGL305", "AGL307", "AGL502", "AGL605", "AGL908"}


def test_select_prefix_enables_that_group_only():
    opt_in = {c for c, info in RULES.items() if not info.default_enabled}
    assert enabled(SelectorLayer(select=("AGL2",))) == {c for c in RULES if c.startswith("AGL2")} - opt_in


def test_prefix_does_not_turn_on_opt_in_rules_but_full_code_and_all_do():
    assert "AGL305" not in enabled(SelectorLayer(select=("AGL3",)))
    assert "AGL305" not in enabled(SelectorLayer(extend_select=("AGL",)))
    assert "AGL305" in enabled(SelectorLayer(select=("AGL3", "AGL305")))
    assert "AGL502" in enabled(SelectorLayer(extend_select=("AGL502",)))
    assert "AGL207" not in enabled(SelectorLayer(select=("AGL2",)))
    assert "AGL207" in enabled(SelectorLayer(extend_select=("AGL207",)))
    assert enabled(SelectorLayer(select=("ALL",))) == set(RULES)


def test_more_specific_selector_wins_either_way():
    assert enabled(SelectorLayer(select=("AGL2",), ignore=("AGL201",))) == {
        c for c in RULES if c.startswith("AGL2")} - {"AGL201", "AGL207"}
    assert enabled(SelectorLayer(select=("AGL201",), ignore=("AGL2",))) == {"AGL201"}
    assert enabled(SelectorLayer(ignore=("AGL",), extend_select=("AGL101",))) == {"AGL101"}


def test_ignore_wins_at_equal_specificity():
    assert "AGL201" not in enabled(SelectorLayer(select=("AGL201",), ignore=("AGL201",)))


def test_layers_command_line_over_config():
    config_layer = SelectorLayer(ignore=("AGL304",), extend_select=("AGL305",))
    assert enabled(config_layer) == DEFAULTS - {"AGL304"} | {"AGL305"}
    # A later select starts over: the config's ignore and extend-select no longer apply.
    assert enabled(config_layer, SelectorLayer(select=("AGL3",))) == {"AGL301", "AGL302", "AGL303", "AGL304", "AGL306", "AGL308"}
    # A later layer without select adjusts: extend-select re-enables what the config ignored.
    assert "AGL304" in enabled(config_layer, SelectorLayer(extend_select=("AGL304",)))
    assert "AGL201" not in enabled(config_layer, SelectorLayer(ignore=("AGL201",)))


def test_without_removes_by_prefix():
    assert EnabledRules.default().without(["AGL1", "AGL201"]).enabled == {
        c for c in DEFAULTS if not c.startswith("AGL1") and c != "AGL201"}


def test_parse_selectors_normalises_and_rejects_unknown():
    assert parse_selectors(["agl201, AGL3,", " all"], "--select") == ("AGL201", "AGL3", "ALL")
    for bad in ["AGL7", "E501", "AGL2011", "X"]:
        with pytest.raises(SelectorError, match=f"unknown rule selector '{bad}' in --ignore"):
            parse_selectors([bad], "--ignore")


def test_per_file_selection_matches_gitignore_style_relative_to_root(tmp_path):
    per_file = RulesPerFile(
        EnabledRules.default(), [("tests/", ("AGL2",)), ("/scripts/*.py", ("AGL101",))], root=tmp_path)
    assert not per_file(str(tmp_path / "tests" / "unit" / "t.py")).is_enabled("AGL201")
    assert not per_file(str(tmp_path / "pkg" / "tests" / "t.py")).is_enabled("AGL201")
    assert per_file(str(tmp_path / "pkg" / "t.py")).is_enabled("AGL201")
    assert not per_file(str(tmp_path / "scripts" / "run.py")).is_enabled("AGL101")
    assert per_file(str(tmp_path / "pkg" / "scripts" / "run.py")).is_enabled("AGL101")


# --- the config file (unit) -----------------------------------------------------------------

def test_find_config_walks_upward_past_pyprojects_without_the_table(tmp_path):
    ours = pyproject(tmp_path / "proj", 'select = ["AGL2"]\n')
    write(tmp_path / "proj" / "sub" / "pyproject.toml", "[project]\nname = 'sub'\n")
    target = write(tmp_path / "proj" / "sub" / "pkg" / "a.py")
    assert find_config(str(target)) == ours
    assert find_config(str(target.parent)) == ours
    assert find_config(str(tmp_path)) != ours  # not downward


def test_load_config_reads_every_key(tmp_path):
    path = pyproject(tmp_path, """\
        select = ["AGL1", "agl2"]
        extend-select = ["AGL305"]
        ignore = ["AGL101"]
        extend-ignore = ["AGL102"]
        per-file-ignores = {"tests/*" = ["AGL201"]}
        exclude = ["gen/"]
        extend-exclude = ["vendored"]
        max-file-size = 1000
    """)
    config = load_config(path, warn=pytest.fail)
    assert config.select == ("AGL1", "AGL2")
    assert config.extend_select == ("AGL305",)
    assert config.ignore == ("AGL101", "AGL102")
    assert config.per_file_ignores == (("tests/*", ("AGL201",)),)
    assert config.exclude == ("gen/",) and config.extend_exclude == ("vendored",)
    assert config.max_file_size == 1000
    assert config.root == tmp_path


@pytest.mark.parametrize("body, message", [
    ('select = "AGL201"\n', "select must be a list of strings"),
    ("ignore = [201]\n", "ignore must be a list of strings"),
    ('per-file-ignores = ["tests"]\n', "per-file-ignores must be a table"),
    ('per-file-ignores = {"tests/" = "AGL201"}\n', "per-file-ignores 'tests/' must be a list"),
    ("max-file-size = '5MB'\n", "max-file-size must be a positive integer"),
    ("max-file-size = true\n", "max-file-size must be a positive integer"),
    ("max-file-size = 0\n", "max-file-size must be a positive integer"),
    ('extend-select = ["AGL9000"]\n', "unknown rule selector 'AGL9000' in extend-select in"),
    ("select = [\n", "invalid TOML"),
])
def test_bad_config_values_are_clear_errors(tmp_path, body, message):
    path = pyproject(tmp_path, body)
    with pytest.raises(ConfigError, match=message) as error:
        load_config(path, warn=pytest.fail)
    assert str(path) in str(error.value)


def test_unknown_keys_warn_with_a_suggestion(tmp_path):
    warnings = []
    load_config(pyproject(tmp_path, 'extend_select = ["AGL305"]\ncolour = true\n'), warn=warnings.append)
    assert len(warnings) == 2
    assert "unknown key 'extend_select' ignored (did you mean 'extend-select'?)" in warnings[0]
    assert "unknown key 'colour'" in warnings[1]


# --- the config file through the CLI ------------------------------------------------------------

def test_config_is_found_upward_from_the_first_path(cli_fast, tmp_path):
    pyproject(tmp_path / "proj", 'ignore = ["AGL000"]\n')
    write(tmp_path / "proj" / "src" / "pkg" / "a.py")
    assert cli_fast("--max-file-size", "1", "proj/src").returncode == 0  # run from outside proj
    assert cli_fast("--max-file-size", "1", "src/pkg/a.py", cwd=tmp_path / "proj").returncode == 0
    # The command line overrides the file.
    assert cli_fast("--max-file-size", "1", "--extend-select", "AGL000", "proj/src").returncode == 1


def test_explicit_config_file(cli_fast, tmp_path):
    write(tmp_path / "a.py")
    pyproject(tmp_path, 'ignore = ["AGL000"]\n')
    write(tmp_path / "strict.toml", 'select = ["AGL0"]\n')  # a settings file: keys at top level
    assert cli_fast("--max-file-size", "1", "a.py").returncode == 0
    assert cli_fast("--max-file-size", "1", "--config", "strict.toml", "a.py").returncode == 1


def test_missing_config_file_is_a_usage_error(cli, tmp_path):
    write(tmp_path / "a.py")
    result = cli("--config", "nope.toml", "a.py")
    assert result.returncode == 2
    assert result.stderr == "autograd-lint: error: --config nope.toml: no such file\n"


def test_bad_config_through_the_cli_exits_2_without_traceback(cli, tmp_path):
    write(tmp_path / "a.py")
    pyproject(tmp_path, 'select = "AGL201"\n')
    result = cli("a.py")
    assert result.returncode == 2
    assert "pyproject.toml [tool.autograd-lint]: select must be a list of strings" in result.stderr
    assert_no_traceback(result)


def test_malformed_pyproject_without_our_table_is_passed_over(cli_fast, tmp_path):
    write(tmp_path / "pyproject.toml", "this is [not toml\n")
    write(tmp_path / "a.py")
    assert cli_fast("a.py").returncode == 0


def test_unknown_key_warns_but_lints(cli_fast, tmp_path):
    write(tmp_path / "a.py")
    pyproject(tmp_path, "selct = []\n")
    result = cli_fast("a.py")
    assert result.returncode == 0
    assert "warning:" in result.stderr and "did you mean 'select'?" in result.stderr


def test_exclude_and_extend_exclude_from_config(tmp_path):
    write(tmp_path / "build" / "b.py")
    write(tmp_path / "gen" / "g.py")
    write(tmp_path / "pkg" / "a.py")
    pyproject(tmp_path, 'extend-exclude = ["gen"]\n')
    assert linted_paths(tmp_path, ".") == ["./pkg/a.py"]
    pyproject(tmp_path, 'exclude = ["gen"]\n')  # replaces the defaults: build/ is linted now
    assert linted_paths(tmp_path, ".") == ["./build/b.py", "./pkg/a.py"]
    assert linted_paths(tmp_path, ".", "--exclude", "pkg") == ["./build/b.py", "./gen/g.py"]


def test_force_exclude_from_config(tmp_path):
    write(tmp_path / "gen" / "g.py")
    write(tmp_path / "a.py")
    pyproject(tmp_path, 'extend-exclude = ["gen"]\nforce-exclude = true\n')
    assert linted_paths(tmp_path, "gen/g.py", "a.py") == ["a.py"]
    pyproject(tmp_path, 'force-exclude = "yes"\n')
    result = run_cli("a.py", cwd=tmp_path)
    assert result.returncode == 2 and "'force-exclude' must be true or false" in result.stderr


def test_exclude_patterns_are_relative_to_the_config_directory(tmp_path):
    pyproject(tmp_path / "proj", 'extend-exclude = ["/src/generated/"]\n')
    write(tmp_path / "proj" / "src" / "generated" / "g.py")
    write(tmp_path / "proj" / "src" / "pkg" / "generated" / "kept.py")
    assert linted_paths(tmp_path, "proj/src") == ["proj/src/pkg/generated/kept.py"]
    assert linted_paths(tmp_path / "proj" / "src", ".") == ["./pkg/generated/kept.py"]


def test_per_file_ignores_from_config(tmp_path):
    pyproject(tmp_path, 'per-file-ignores = {"legacy/" = ["AGL0"], "*_gen.py" = ["AGL000"]}\n')
    write(tmp_path / "legacy" / "old.py")
    write(tmp_path / "pkg" / "ops_gen.py")
    write(tmp_path / "pkg" / "ops.py")
    assert linted_paths(tmp_path, ".") == ["./pkg/ops.py"]


def test_max_file_size_from_config_and_command_line(cli_fast, tmp_path):
    write(tmp_path / "a.py", "x = 1\n" * 100)  # 600 bytes
    pyproject(tmp_path, "max-file-size = 100\n")
    result = cli_fast("a.py")
    assert result.returncode == 1
    assert "a.py:1:1: AGL000 file is 600 bytes, over the 100 bytes limit" in result.stdout
    assert cli_fast("--max-file-size", "1000", "a.py").returncode == 0


@pytest.mark.needs_engine
def test_per_file_ignores_apply_to_findings(cli, tmp_path):
    pyproject(tmp_path, 'per-file-ignores = {"tests/" = ["AGL201"]}\n')
    write(tmp_path / "tests" / "bad.py", BUGGY_SOURCE)
    write(tmp_path / "src" / "bad.py", BUGGY_SOURCE)
    result = cli("--select", "AGL201", ".")
    assert result.returncode == 1
    [line] = result.stdout.splitlines()
    assert line.startswith("./src/bad.py:5:") and " AGL201 " in line
