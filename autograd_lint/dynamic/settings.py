"""The ``[tool.autograd-lint.dynamic]`` table (torch-free: read with the rest of the config)::

    [tool.autograd-lint.dynamic]
    timeout = 30          # seconds per module's child (a class that hangs costs one)
    device = "cpu"        # cpu | cuda | auto
    require-checked = true  # a Function class --dynamic could not check fails the run (exit 1)
    sandbox = "require"   # auto (default) | require | off: the children's sandbox (dynamic/sandbox.py)
    env = ["MY_LICENSE_SERVER"]  # variables passed to the children on purpose (the rest are stripped)

    [tool.autograd-lint.dynamic.examples]
    # class name (or "path/to/file.py:ClassName") -> a list of argument lists for ClassName.apply;
    # a string "tensor(4, 5)" is a tensor spec (autograd_lint.examples.tensor), anything else is
    # passed as it is.
    MyLinear = [["tensor(3, 4)", "tensor(5, 4)", "tensor(5)"]]
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Optional

from autograd_lint.examples import TensorSpec, tensor

DEVICES = ("cpu", "cuda", "auto")
KNOWN_KEYS = ("timeout", "device", "examples", "require-checked", "sandbox", "env")
SANDBOX_MODES = ("auto", "require", "off")


class SettingsError(ValueError):
    """A bad value in the dynamic table; the message names the key."""


@dataclass(frozen=True)
class DynamicSettings:
    timeout: Optional[float] = None
    device: Optional[str] = None
    # (class key, argument lists) with the values as written (JSON-compatible), checked here
    examples: tuple[tuple[str, tuple[tuple[Any, ...], ...]], ...] = ()
    require_checked: bool = False
    sandbox: Optional[str] = None  # auto | require | off
    env: tuple[str, ...] = ()  # names of variables passed to the children on purpose


def parse_dynamic_table(table: Any, where: str) -> tuple[DynamicSettings, list[str]]:
    """The settings and the warnings (unknown keys); raises SettingsError for a wrong value."""
    where = f"{where}.dynamic"
    if not isinstance(table, dict):
        raise SettingsError(f"{where} must be a table, like [tool.autograd-lint.dynamic]")
    warnings = [f"{where}: unknown key {key!r} ignored" for key in table if key not in KNOWN_KEYS]
    timeout = table.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or timeout <= 0):
        raise SettingsError(f"{where}: timeout must be a positive number of seconds; got {timeout!r}")
    device = table.get("device")
    if device is not None and device not in DEVICES:
        raise SettingsError(f"{where}: device must be one of {', '.join(DEVICES)}; got {device!r}")
    require_checked = table.get("require-checked", False)
    if not isinstance(require_checked, bool):
        raise SettingsError(f"{where}: require-checked must be true or false; got {require_checked!r}")
    sandbox = table.get("sandbox")
    if sandbox is not None and sandbox not in SANDBOX_MODES:
        raise SettingsError(f"{where}: sandbox must be one of {', '.join(SANDBOX_MODES)}; got {sandbox!r}")
    env = table.get("env", [])
    if not isinstance(env, list) or not all(isinstance(name, str) and name for name in env):
        raise SettingsError(f'{where}: env must be a list of variable names, like ["MY_LICENSE_SERVER"]; got {env!r}')
    examples = table.get("examples", {})
    if not isinstance(examples, dict):
        raise SettingsError(f'{where}: examples must be a table, like MyFn = [["tensor(3, 4)", 0.5]]')
    checked = []
    for key, calls in examples.items():
        if not isinstance(calls, list) or not all(isinstance(call, list) for call in calls):
            raise SettingsError(
                f'{where}.examples: {key} must be a list of argument lists, like [["tensor(3, 4)", 0.5]]')
        for call in calls:
            for value in call:
                from_config_value(value, f"{where}.examples.{key}")  # raises on a bad tensor spec
        checked.append((key, tuple(tuple(call) for call in calls)))
    return DynamicSettings(float(timeout) if timeout else None, device, tuple(checked), require_checked,
                           sandbox, tuple(env)), warnings


def from_config_value(value: Any, where: str = "examples") -> Any:
    """A config value as an argument: ``"tensor(3, 4, dtype='int64')"`` -> TensorSpec."""
    if isinstance(value, str) and value.strip().startswith("tensor("):
        return parse_tensor_spec(value, where)
    if isinstance(value, list):
        return [from_config_value(item, where) for item in value]
    return value


def parse_tensor_spec(text: str, where: str) -> TensorSpec:
    """Parse ``tensor(3, 4, dtype="float64", low=0.1)`` without evaluating any code."""
    try:
        call = ast.parse(text.strip(), mode="eval").body
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "tensor"):
            raise ValueError("expected tensor(...)")
        args = [ast.literal_eval(arg) for arg in call.args]
        kwargs = {keyword.arg: ast.literal_eval(keyword.value) for keyword in call.keywords if keyword.arg}
        return tensor(*args, **kwargs)
    except (SyntaxError, ValueError, TypeError) as error:
        raise SettingsError(f"{where}: cannot read {text!r} as a tensor spec: {error}") from None
