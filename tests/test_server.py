"""`autograd-lint server`, driven by a real LSP client (pytest-lsp) over stdio, and compared with
the real CLI: the diagnostics are the CLI's findings, a quick fix writes what `--fix` writes,
hover shows what `--explain` prints, and a broken pyproject.toml is a message, not a crash."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("pytest_lsp")  # the server extra (pygls) and its test client

import pytest_lsp  # noqa: E402
from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from autograd_lint.server.language_server import (  # noqa: E402
    MIN_INTERVAL_SECONDS, AutogradLintServer, suppressed_line,
)
from conftest import REPO_ROOT, run_cli  # noqa: E402

TIMEOUT_S = 60

# One AGL101 finding with a safe fix (fixtures/fixes/AGL101/safe.py, its first class alone).
ONE_SAFE_FIX = textwrap.dedent(
    """\
    import torch


    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, factor: float):
            ctx.factor = factor
            return x * factor

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * ctx.factor  # one value for two inputs
    """
)


def _recording_client() -> LanguageClient:
    """pytest-lsp's test client, which also keeps every publication (``client.published``):
    the debounce test counts them."""
    from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, default_converter, register_lsp_features

    def publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        client.published.append(params)
        client.diagnostics[params.uri] = params.diagnostics

    def register(client: LanguageClient, params: types.RegistrationParams) -> None:
        client.registrations.extend(params.registrations)

    client = LanguageClient(converter_factory=default_converter)
    client.published, client.registrations = [], []
    register_lsp_features(client, {**DEFAULT_CLIENT_FEATURES, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish,
                                   types.CLIENT_REGISTER_CAPABILITY: register})
    return client


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "autograd_lint", "server"],
                                              client_factory=_recording_client))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True))),
        root_uri=REPO_ROOT.as_uri(),
    ))
    yield
    await lsp_client.shutdown_session()


async def _diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    """The diagnostics of ``uri`` once published (``_open`` and ``_change`` forget the last ones)."""
    async def wait() -> list[types.Diagnostic]:
        while uri not in client.diagnostics:
            await asyncio.sleep(0.02)
        return list(client.diagnostics[uri])

    return await asyncio.wait_for(wait(), TIMEOUT_S)


def _open(client: LanguageClient, path: Path) -> str:
    uri = path.as_uri()
    client.diagnostics.pop(uri, None)
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=path.read_text(encoding="utf-8"))))
    return uri


def _change(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.diagnostics.pop(uri, None)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


def _cli_findings(path: Path, *args: str) -> list[dict]:
    result = run_cli(str(path), "--format", "json", "--no-dependents", *args, cwd=path.parent)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)["findings"]


def _applied(text: str, edit: types.WorkspaceEdit, uri: str) -> str:
    """``text`` with the edits of ``edit`` (one per action, as the server sends them)."""
    (text_edit,) = edit.changes[uri]
    lines = text.split("\n")
    start, end = text_edit.range.start, text_edit.range.end
    offset = lambda position: sum(len(line) + 1 for line in lines[:position.line]) + position.character  # noqa: E731
    return text[:offset(start)] + text_edit.new_text + text[offset(end):]


async def _actions(client: LanguageClient, uri: str, where: types.Range) -> list[types.CodeAction]:
    """Every code action the server offers on ``where`` (no ``only`` filter)."""
    return await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=where,
        context=types.CodeActionContext(diagnostics=[])))


@pytest.mark.needs_engine
@pytest.mark.asyncio
async def test_diagnostics_are_the_cli_findings(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "bad.py"
    shutil.copy(REPO_ROOT / "fixtures" / "AGL101" / "bad.py", path)
    diagnostics = await _diagnostics(client, _open(client, path))
    expected = _cli_findings(path)
    assert len(expected) > 5
    assert sorted((d.code, d.range.start.line + 1, d.range.start.character + 1, d.range.end.line + 1,
                   d.range.end.character + 1, d.message) for d in diagnostics) == \
        sorted((f["code"], f["line"], f["column"], f["end_line"], f["end_column"], f["message"]) for f in expected)
    severities = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
                  "info": types.DiagnosticSeverity.Information}
    assert sorted(d.severity for d in diagnostics) == sorted(severities[f["severity"]] for f in expected)
    assert {d.source for d in diagnostics} == {"autograd-lint"}
    page = diagnostics[0].code_description.href
    assert page.startswith("file://") and page.endswith("/AGL101.md")


@pytest.mark.needs_engine
@pytest.mark.asyncio
async def test_a_quick_fix_writes_what_fix_writes_and_the_diagnostic_goes(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "scale.py"
    path.write_text(ONE_SAFE_FIX, encoding="utf-8")
    copy = tmp_path / "copy" / "scale.py"
    copy.parent.mkdir()
    shutil.copy(path, copy)
    assert run_cli(str(copy), "--fix", "--no-dependents", cwd=copy.parent).returncode == 0
    uri = _open(client, path)
    (diagnostic,) = await _diagnostics(client, uri)
    actions = await _actions(client, uri, diagnostic.range)
    fixes = [a for a in actions if a.title.startswith("Fix AGL101")]
    assert [a.title for a in fixes] == ["Fix AGL101: backward-return-count"]
    fixed = _applied(ONE_SAFE_FIX, fixes[0].edit, uri)
    assert fixed == copy.read_text(encoding="utf-8") != ONE_SAFE_FIX
    _change(client, uri, fixed, 2)
    assert await _diagnostics(client, uri) == []


@pytest.mark.needs_engine
@pytest.mark.asyncio
async def test_unsafe_and_fix_all_actions_match_the_cli(client: LanguageClient, tmp_path: Path):
    unsafe = tmp_path / "unsafe_simple.py"
    shutil.copy(REPO_ROOT / "fixtures" / "fixes" / "AGL201" / "unsafe_simple.py", unsafe)
    safe = tmp_path / "safe.py"
    shutil.copy(REPO_ROOT / "fixtures" / "fixes" / "AGL101" / "safe.py", safe)
    copies = tmp_path / "copies"
    copies.mkdir()
    for path in (unsafe, safe):
        shutil.copy(path, copies / path.name)
    run_cli(str(copies / safe.name), "--fix", "--no-dependents", cwd=copies)

    uri = _open(client, unsafe)
    diagnostics = await _diagnostics(client, uri)
    first = min(diagnostics, key=lambda d: (d.range.start.line, d.range.start.character))
    titles = [a.title for a in await _actions(client, uri, first.range)]
    assert "Fix AGL201: ctx-tensor-attribute (unsafe)" in titles
    assert "Suppress AGL201 on this line" in titles
    assert "Fix all safe autograd-lint fixes in this file" not in titles  # its fixes are all unsafe

    uri = _open(client, safe)
    diagnostics = await _diagnostics(client, uri)
    everything = types.Range(types.Position(0, 0), types.Position(10_000, 0))
    (fix_all,) = [a for a in await _actions(client, uri, everything) if a.kind == "source.fixAll.autograd-lint"]
    assert _applied(safe.read_text(encoding="utf-8"), fix_all.edit, uri) == \
        (copies / safe.name).read_text(encoding="utf-8")
    # What an editor asks on save ("source.fixAll" on save): that action alone.
    on_save = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=everything,
        context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.SourceFixAll])))
    assert [a.title for a in on_save] == [fix_all.title]


@pytest.mark.needs_engine
@pytest.mark.asyncio
async def test_suppress_on_this_line_silences_the_finding(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "scale.py"
    path.write_text(ONE_SAFE_FIX, encoding="utf-8")
    uri = _open(client, path)
    (diagnostic,) = await _diagnostics(client, uri)
    (suppress,) = [a for a in await _actions(client, uri, diagnostic.range) if a.title.startswith("Suppress")]
    suppressed = _applied(ONE_SAFE_FIX, suppress.edit, uri)
    assert "# noqa: AGL101" in suppressed
    path.write_text(suppressed, encoding="utf-8")
    assert _cli_findings(path) == []  # the CLI honours the comment
    _change(client, uri, suppressed, 2)
    assert await _diagnostics(client, uri) == []


def test_suppression_merges_with_a_noqa_comment_already_there():
    assert suppressed_line("    x = 1\n", "AGL101") == "    x = 1  # noqa: AGL101\n"
    assert suppressed_line("x = f()  # noqa: E501\n", "AGL101") == "x = f()  # noqa: E501, AGL101\n"
    assert suppressed_line("x = f()  # noqa:E501 why\n", "AGL201") == "x = f()  # noqa:E501, AGL201 why\n"
    assert suppressed_line("x = '# noqa: E1'  # type: ignore", "AGL1") == "x = '# noqa: E1'  # type: ignore  # noqa: AGL1"
    assert suppressed_line("x = 1 + \\\n", "AGL101") is None


@pytest.mark.needs_engine
@pytest.mark.asyncio
async def test_hover_shows_the_rule_page(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "scale.py"
    path.write_text(ONE_SAFE_FIX, encoding="utf-8")
    uri = _open(client, path)
    (diagnostic,) = await _diagnostics(client, uri)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=diagnostic.range.start))
    explained = run_cli("--explain", "AGL101", cwd=tmp_path)
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert hover.contents.value == explained.stdout
    nowhere = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(0, 0)))
    assert nowhere is None


@pytest.mark.needs_engine
@pytest.mark.asyncio
async def test_a_broken_pyproject_is_a_message_and_linting_goes_on(client: LanguageClient, tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.autograd-lint]\nselect = [\n", encoding="utf-8")
    path = tmp_path / "scale.py"
    path.write_text(ONE_SAFE_FIX, encoding="utf-8")
    diagnostics = await _diagnostics(client, _open(client, path))
    assert [d.code for d in diagnostics] == ["AGL101"]  # the default rules
    errors = [m.message for m in client.messages if m.type == types.MessageType.Error]
    assert len(errors) == 1 and "pyproject.toml" in errors[0], client.messages
    # Still serving: the next request is answered.
    assert await _actions(client, path.as_uri(), diagnostics[0].range)


def test_without_pygls_the_command_says_what_to_install(tmp_path: Path):
    blocked = "import sys; sys.modules['pygls'] = None; from autograd_lint.cli import main; raise SystemExit(main(['server']))"
    result = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, cwd=tmp_path,
                            timeout=TIMEOUT_S)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "pip install -e '.[server]'" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.needs_engine
@pytest.mark.asyncio
async def test_while_typing_the_newest_text_wins(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "scale.py"
    path.write_text("import torch\n", encoding="utf-8")
    uri = _open(client, path)
    assert await _diagnostics(client, uri) == []
    # Three edits at once, right after the open's lint: they wait for the end of the interval
    # (MIN_INTERVAL_SECONDS) and are linted together, as the last text, once. (On a machine so
    # busy that the first one is read after the interval, it is linted alone, and the other two
    # together: never a lint per edit, and never an older text last.)
    before = len(client.published)
    _change(client, uri, ONE_SAFE_FIX, 2)
    _change(client, uri, ONE_SAFE_FIX.replace("return grad_output", "return grad_output, None"), 3)
    _change(client, uri, ONE_SAFE_FIX.replace("x * factor", "x * factor * 2"), 4)
    assert [d.code for d in await _diagnostics(client, uri)] == ["AGL101"]
    await asyncio.sleep(1)  # more than the interval: a lint of an older text would have come by now
    versions = [p.version for p in client.published[before:]]
    assert versions[-1] == 4 and len(versions) <= 2 and versions == sorted(versions), versions


def test_an_edit_after_a_quiet_spell_is_linted_at_once():
    """No wait for a typing pause: a buffer not linted for ``MIN_INTERVAL_SECONDS`` (or never) is
    linted as soon as its change is read; one linted just now waits for the rest of the interval."""
    server = AutogradLintServer()
    uri = "file:///project/ops.py"
    assert server.wait_before_lint(uri) == 0.0
    server.last_lint[uri] = time.monotonic() - 10 * MIN_INTERVAL_SECONDS
    assert server.wait_before_lint(uri) == 0.0
    server.last_lint[uri] = time.monotonic() + 60  # "just now", with a minute to spare on a busy machine
    assert server.wait_before_lint(uri) > MIN_INTERVAL_SECONDS


@pytest.mark.needs_engine
@pytest.mark.asyncio
async def test_a_changed_pyproject_is_read_again(client: LanguageClient, tmp_path: Path):
    settings = tmp_path / "pyproject.toml"
    settings.write_text('[tool.autograd-lint]\nignore = ["AGL101"]\n', encoding="utf-8")
    path = tmp_path / "scale.py"
    path.write_text(ONE_SAFE_FIX, encoding="utf-8")
    uri = _open(client, path)
    assert await _diagnostics(client, uri) == []
    # The server asked to hear of changed settings files (editors report only what is asked).
    (watch,) = [r for r in client.registrations if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES]
    assert [w["globPattern"] for w in watch.register_options["watchers"]] == ["**/pyproject.toml"]
    settings.write_text("[tool.autograd-lint]\n", encoding="utf-8")
    client.diagnostics.pop(uri, None)
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=settings.as_uri(), type=types.FileChangeType.Changed)]))
    assert [d.code for d in await _diagnostics(client, uri)] == ["AGL101"]


BASE_CLASS = textwrap.dedent(
    """\
    import torch


    class Scaled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * 2
    """
)
SUBCLASS = textwrap.dedent(
    """\
    from base import Scaled


    class Doubled(Scaled):
        @staticmethod
        def backward(ctx, grad_output):
            return grad_output + grad_output
    """
)


@pytest.mark.needs_engine
@pytest.mark.asyncio
async def test_an_unsaved_base_class_updates_its_subclass_in_another_buffer(client: LanguageClient, tmp_path: Path):
    """A base Function in one open buffer gains an input, unsaved: the subclass in the other open
    buffer, whose backward now returns too few gradients, gets its AGL101, as the CLI gives it
    once the base is saved; closing the base unsaved takes it back."""
    (tmp_path / "pyproject.toml").write_text("[tool.autograd-lint]\n", encoding="utf-8")
    base, sub = tmp_path / "base.py", tmp_path / "sub.py"
    base.write_text(BASE_CLASS, encoding="utf-8")
    sub.write_text(SUBCLASS, encoding="utf-8")
    base_uri, sub_uri = _open(client, base), _open(client, sub)

    def codes(diagnostics: list[types.Diagnostic]) -> list[str]:
        return sorted(d.code for d in diagnostics if d.code == "AGL101")

    assert codes(await _diagnostics(client, sub_uri)) == []
    assert codes(await _diagnostics(client, base_uri)) == []
    edited = BASE_CLASS.replace("def forward(ctx, x):", "def forward(ctx, x, shift):").replace(
        "return x * 2", "return x * 2 + shift")
    client.diagnostics.pop(sub_uri, None)
    _change(client, base_uri, edited, 2)
    assert codes(await _diagnostics(client, sub_uri)) == ["AGL101"]
    (line,) = [d.range.start.line + 1 for d in client.diagnostics[sub_uri] if d.code == "AGL101"]

    saved = tmp_path / "saved"
    saved.mkdir()
    shutil.copy(tmp_path / "pyproject.toml", saved)
    (saved / "base.py").write_text(edited, encoding="utf-8")
    (saved / "sub.py").write_text(SUBCLASS, encoding="utf-8")
    assert [f["line"] for f in _cli_findings(saved / "sub.py") if f["code"] == "AGL101"] == [line]

    client.diagnostics.pop(sub_uri, None)
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=base_uri)))
    assert codes(await _diagnostics(client, sub_uri)) == []


@pytest.mark.needs_engine
@pytest.mark.asyncio
async def test_a_diagnostic_carries_its_related_locations(client: LanguageClient, tmp_path: Path):
    """The subclass's AGL101 counts its backward against the forward it inherits from base.py:
    that ``def`` is the diagnostic's related information (base.py's URI, 0-based position); an
    AGL302 write is related to where forward saved the tensor, in the same buffer."""
    (tmp_path / "pyproject.toml").write_text("[tool.autograd-lint]\n", encoding="utf-8")
    base, sub = tmp_path / "base.py", tmp_path / "sub.py"
    base.write_text(BASE_CLASS.replace("def forward(ctx, x):", "def forward(ctx, x, shift):"), encoding="utf-8")
    sub.write_text(SUBCLASS, encoding="utf-8")
    (diagnostic,) = [d for d in await _diagnostics(client, _open(client, sub)) if d.code == "AGL101"]
    (related,) = diagnostic.related_information
    assert related.location.uri == base.as_uri()
    assert related.location.range.start == types.Position(5, 4)  # `def forward` on line 6
    assert related.message == "forward, inherited from Scaled"

    saved = tmp_path / "saved.py"
    shutil.copy(REPO_ROOT / "fixtures" / "AGL302" / "bad.py", saved)
    uri = _open(client, saved)
    writes = [d for d in await _diagnostics(client, uri) if d.code == "AGL302"]
    assert writes and all(d.related_information for d in writes)
    lines = saved.read_text(encoding="utf-8").splitlines()
    for diagnostic in writes:
        place = diagnostic.related_information[-1]
        assert place.location.uri == uri and place.message.endswith(" is saved here")
        assert place.location.range.start.line < diagnostic.range.start.line
        assert "save_for_backward" in lines[place.location.range.start.line] or "ctx." in lines[
            place.location.range.start.line]


def _open_untitled(client: LanguageClient, uri: str, text: str, language: str = "python") -> str:
    client.diagnostics.pop(uri, None)
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
        uri=uri, language_id=language, version=1, text=text)))
    return uri


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "autograd_lint", "server"],
                                              client_factory=_recording_client))
async def client_in_tmp(lsp_client: LanguageClient, request):
    """A client whose workspace root is the test's temporary directory, with settings that
    ignore AGL101 and turn on the opt-in AGL305 (``pyproject.toml``)."""
    root = request.getfixturevalue("tmp_path")
    (root / "pyproject.toml").write_text('[tool.autograd-lint]\nignore = ["AGL101"]\nextend-select = ["AGL305"]\n',
                                         encoding="utf-8")
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=root.as_uri()))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.needs_engine
@pytest.mark.asyncio
async def test_an_untitled_buffer_is_linted_alone_and_fixed(client: LanguageClient, tmp_path: Path):
    """An untitled buffer (no file on disk) gets the findings the CLI gives its text as a lone
    file, and its quick fix is the CLI's ``--fix``; a broken one or one of another language
    does not stop the server."""
    alone = tmp_path / "alone" / "scale.py"
    alone.parent.mkdir()
    alone.write_text(ONE_SAFE_FIX, encoding="utf-8")
    uri = _open_untitled(client, "untitled:Untitled-1", ONE_SAFE_FIX)
    diagnostics = await _diagnostics(client, uri)
    expected = _cli_findings(alone)
    assert [(d.code, d.range.start.line + 1, d.message) for d in diagnostics] == \
        [(f["code"], f["line"], f["message"]) for f in expected] != []
    (fix,) = [a for a in await _actions(client, uri, diagnostics[0].range) if a.title.startswith("Fix AGL101")]
    assert run_cli(str(alone), "--fix", "--no-dependents", cwd=alone.parent).returncode == 0
    assert _applied(ONE_SAFE_FIX, fix.edit, uri) == alone.read_text(encoding="utf-8")
    everything = types.Range(types.Position(0, 0), types.Position(10_000, 0))
    assert [a.title for a in await _actions(client, uri, everything) if a.kind == "source.fixAll.autograd-lint"] == \
        ["Fix all safe autograd-lint fixes in this file"]

    broken = _open_untitled(client, "untitled:Untitled-2", ONE_SAFE_FIX.replace("ctx.factor  #", "ctx.factor)  #"))
    assert [(d.code, d.range.start.line + 1) for d in await _diagnostics(client, broken)] == [("AGL000", 12)]
    _open_untitled(client, "untitled:Untitled-3", ONE_SAFE_FIX, language="plaintext")
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri="untitled:Untitled-3"), position=types.Position(11, 8)))
    assert hover is None and "untitled:Untitled-3" not in client.diagnostics  # not Python: left alone
    _change(client, uri, ONE_SAFE_FIX + "\n# edited\n", 2)
    assert [d.code for d in await _diagnostics(client, uri)] == ["AGL101"]


OPT_IN_AGL305 = textwrap.dedent(
    """\
    import torch


    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * 2 * x.detach()
    """
)


@pytest.mark.needs_engine
@pytest.mark.asyncio
async def test_an_untitled_buffer_takes_the_workspace_roots_settings(client_in_tmp: LanguageClient, tmp_path: Path):
    text = ONE_SAFE_FIX + "\n\n" + OPT_IN_AGL305
    path = tmp_path / "as_a_file.py"
    path.write_text(text, encoding="utf-8")
    expected = sorted((f["code"], f["line"]) for f in _cli_findings(path))
    assert {code for code, _ in expected} == {"AGL305"}  # the root's settings: no AGL101, AGL305 on
    uri = _open_untitled(client_in_tmp, "untitled:Untitled-1", text)
    assert sorted((d.code, d.range.start.line + 1) for d in await _diagnostics(client_in_tmp, uri)) == expected
