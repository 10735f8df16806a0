"""The language server (pygls, over stdio): the CLI's findings for an editor's unsaved buffer,
with quick fixes, "suppress on this line" and the rule pages on hover.

What it reuses, so that the editor and the CLI agree:

- **Findings**: the flake8 plugin's way to lint one text with its project's facts
  (``flake8_plugin.project_of``, ``selection_for``, then ``engine.lint_text``): the settings
  of the nearest ``pyproject.toml``, the facts of the file's project on disk, the buffer's own
  facts in place of its file's. Unlike flake8, ``# noqa`` is ours to honour here (as the CLI
  does), and ``fix_available`` is asked for the quick fixes.
- **Fixes**: ``fix.driver.fix_file`` on the buffer's text. "Fix all safe fixes" is exactly
  ``--fix``; the quick fix of one finding is the first round of ``--fix`` with that finding
  alone (later rounds would fix the others too; what a fix exposes is a new diagnostic).
- **Pages**: ``explain`` (hover prints what ``--explain`` prints; the link is the page's file).
- **Other buffers**: the other open buffers changed since their last save stand in for their
  files (``engine.lint_text``'s ``other_texts``); when what the other files see of a buffer
  changes (its ``pipeline.facts_of``), they are linted again.
- **Untitled buffers** (``untitled:Untitled-1``, no file on disk): the text is a lone file, with
  the settings of the workspace root's ``pyproject.toml`` and no facts from disk (``Target``).

Static mode only: nothing of the user's code is imported or run, and ``--dynamic`` never runs.
"""

from __future__ import annotations

import asyncio
import gc
import io
import os
import sys
import time
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from autograd_lint import __version__
from autograd_lint import flake8_plugin
from autograd_lint.catalogue import RULES
from autograd_lint.engine import lint_text
from autograd_lint.explain import ExplainError, explain, page_path
from autograd_lint.findings import Finding, RelatedLocation
from autograd_lint.analysis.snippet import remember_class_trees
from autograd_lint.analysis.source_file import SourceFile
from autograd_lint.fix.available import annotate
from autograd_lint.fix.driver import fix_file
from autograd_lint.fix.registry import FIXERS
from autograd_lint.gc_pause import gc_paused
from autograd_lint.pipeline import facts_of
from autograd_lint.selection import EnabledRules
from autograd_lint.suppression import noqa_code_span

SOURCE = "autograd-lint"
# A buffer is linted at most once in this many seconds. The first change after a quiet spell is
# linted at once (its diagnostics come as fast as the lint); changes made sooner after a lint
# wait for the end of the interval and are linted together, as the newest text, so that typing
# does not queue a lint per keystroke.
MIN_INTERVAL_SECONDS = 0.3
FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.{SOURCE}"
FIX_ALL_TITLE = "Fix all safe autograd-lint fixes in this file"
SEVERITIES = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}
NOTHING_ENABLED = EnabledRules(frozenset())
SETTINGS_WATCHER = "autograd-lint-pyproject-toml"
# Characters of class and helper text whose libcst trees the server keeps (about 200 bytes of
# memory each, with positions: at most about 50 MB), the oldest forgotten first.
REMEMBERED_TREE_CHARACTERS = 250_000


@dataclass
class Linted:
    """The findings of one buffer, for the text they were made from (code actions and hover
    answer from them while the text is unchanged)."""

    text: str
    findings: list[Finding]
    # The file as the lint read it: its ast and Function classes' libcst trees, which the
    # fixers read when code actions are first asked for.
    source: Optional[SourceFile] = None
    fixes_known: bool = False

    def with_fixes(self) -> list[Finding]:
        """The findings with ``fix_available``/``fix_safe`` set, as the CLI sets them. Asked
        only for code actions: it takes about as long as the lint itself, and diagnostics, which
        do not need it, are published without waiting for it."""
        if not self.fixes_known:
            if self.source is not None and any(f.code in FIXERS for f in self.findings):
                self.findings = annotate(self.source, self.findings)
            self.fixes_known = True
        return self.findings


class AutogradLintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(SOURCE, __version__)
        self.linted: dict[str, Linted] = {}  # by document URI
        self.pending: dict[str, asyncio.Task] = {}  # the lint each URI is waiting for
        self.last_lint: dict[str, float] = {}  # when each URI was last linted (time.monotonic)
        self.shown_config_errors: set[str] = set()  # each shown once until the settings change
        # Buffers changed since they were opened or saved: each lint sees their texts in place of
        # their files (a base class edited in one buffer judges its subclasses in the others).
        self.unsaved: set[str] = set()
        # What the other files see of each buffer (its facts, ``pipeline.facts_of``): when that
        # changes, the other open buffers are linted again.
        self.seen: dict[str, object] = {}

    # --- linting ------------------------------------------------------------------------------

    def target(self, uri: str) -> Optional["Target"]:
        """What the buffer of ``uri`` is linted as; None for a document that is not Python, or
        neither a file (``file:``) nor an untitled buffer (``untitled:``)."""
        path = _path_of(uri)
        if path is not None:
            return Target(path, on_disk=True)
        if uri.startswith(UNTITLED_SCHEME) and uri in self.workspace.text_documents and \
                self.workspace.get_text_document(uri).language_id == "python":
            root = self.workspace.root_path or os.getcwd()
            return Target(os.path.join(root, _untitled_name(uri)), on_disk=False)
        return None

    def lint(self, uri: str) -> Optional[Linted]:
        """Lint the buffer of ``uri`` now and publish its diagnostics; None for a document that
        is not linted (``target``)."""
        target = self.target(uri)
        if target is None:
            return None
        path = target.path
        document = self.workspace.get_text_document(uri)
        text = document.source
        self._show_config_error(path)
        # An untitled buffer is no file of the project: the others never see it, nor it them.
        others = [(other, self.workspace.get_text_document(uri_).source) for uri_ in sorted(self.unsaved)
                  if target.on_disk and uri_ != uri and uri_ in self.workspace.text_documents
                  and (other := _path_of(uri_)) is not None]
        try:
            # A lint makes hundreds of thousands of objects without cycles (syntax trees): the
            # collections they would trigger took a third of a warm edit's time on torch (bench/
            # NOTES.md, issue 31). The young generations are collected once it is published.
            with gc_paused():
                linted = _lint(target, text, others)
        except Exception as error:  # noqa: BLE001 - a bug of ours must not stop the server
            self.window_log_message(types.LogMessageParams(
                types.MessageType.Error, f"autograd-lint: internal error on {path}: {type(error).__name__}: {error}"))
            return None
        findings = linted.findings
        self.linted[uri] = linted
        self.last_lint[uri] = time.monotonic()
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=document.version, diagnostics=[_diagnostic(document, f) for f in findings]))
        if target.on_disk:  # what the other files see of it (an untitled buffer: nothing)
            self._tell_the_others(uri, linted)
        gc.collect(1)
        return linted

    def _tell_the_others(self, uri: str, linted: Linted) -> None:
        """Lint the other open buffers again (``lint_soon``) when what they see of this
        one changed: a base class, an ``.apply`` call, a gradcheck test."""
        seen = facts_of(linted.source) if linted.source is not None else None
        before = self.seen.get(uri, seen)
        self.seen[uri] = seen
        if seen != before:
            self.lint_the_others(uri)

    def lint_the_others(self, uri: str) -> None:
        for other in list(self.linted):
            if other != uri and other in self.workspace.text_documents:
                self.lint_soon(other)

    def lint_soon(self, uri: str) -> None:
        """Lint ``uri`` now, or, within ``MIN_INTERVAL_SECONDS`` of its last lint, at the end of
        that interval. A lint already waiting reads the newest text when it runs: the changes
        that come meanwhile join it."""
        if uri in self.pending:
            return
        wait = self.wait_before_lint(uri)

        async def later() -> None:
            await asyncio.sleep(wait)  # 0: after the messages already read, which may join it
            self.pending.pop(uri, None)
            self.lint(uri)

        self.pending[uri] = asyncio.get_running_loop().create_task(later())

    def wait_before_lint(self, uri: str) -> float:
        """Seconds until ``uri`` may be linted again: 0 after a quiet spell."""
        last = self.last_lint.get(uri)
        return 0.0 if last is None else max(0.0, last + MIN_INTERVAL_SECONDS - time.monotonic())

    def cancel_pending(self, uri: str) -> None:
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()

    def current(self, uri: str) -> Optional[Linted]:
        """The findings for the buffer's text as it is now (linted again when it changed since)."""
        linted = self.linted.get(uri)
        if linted is not None and linted.text == self.workspace.get_text_document(uri).source:
            return linted
        self.cancel_pending(uri)
        return self.lint(uri)

    def settings_changed(self) -> None:
        """A ``pyproject.toml`` or a file of a project changed on disk: forget the settings and
        the projects' facts read so far (the flake8 plugin keeps them for the process), and lint
        the open buffers again."""
        flake8_plugin.forget(settings=True)
        self.shown_config_errors.clear()
        for uri in list(self.linted):
            if uri in self.workspace.text_documents:
                self.lint(uri)

    def _show_config_error(self, path: str) -> None:
        """A ``pyproject.toml`` the CLI would refuse: say so once (until the settings change);
        the flake8 plugin's settings then fall back to the default rules, and linting goes on."""
        from autograd_lint.config import ConfigError, find_config, load_config
        from autograd_lint.selection import SelectorError

        try:
            found = find_config(os.path.dirname(path))  # parses the file: invalid TOML fails here
            if found is not None:
                load_config(found, lambda message: None)
        except (ConfigError, SelectorError, OSError) as error:
            message = f"autograd-lint: {error}; using the default rules"
            if message not in self.shown_config_errors:
                self.shown_config_errors.add(message)
                self.window_show_message(types.ShowMessageParams(types.MessageType.Error, message))


UNTITLED_SCHEME = "untitled:"


@dataclass(frozen=True)
class Target:
    """What a buffer is linted as. ``path``: its file; for an untitled buffer, a name in the
    workspace root (whose settings apply to it; nothing is read from that file).
    ``on_disk``: False for an untitled buffer, linted alone: no project facts from disk, and the
    rules that need a project (``RuleInfo.project_wide``) stay off, as for a file of no project."""

    path: str
    on_disk: bool


def _untitled_name(uri: str) -> str:
    """``untitled:Untitled-1`` -> ``Untitled-1.py``: a file name, for the settings'
    ``per-file-ignores`` and the findings' path."""
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in uri[len(UNTITLED_SCHEME):].rsplit("/", 1)[-1])
    return (name or "untitled") + ("" if name.endswith((".py", ".pyi")) else ".py")


def _path_of(uri: str) -> Optional[str]:
    path = to_fs_path(uri) if uri.startswith("file:") else None
    return path if path is not None and path.endswith((".py", ".pyi")) else None


def _lint(target: Target, text: str, others: list[tuple[str, str]] = ()) -> Linted:
    """The CLI's findings for ``text`` as the file ``target.path`` (see the module's docstring),
    with ``others`` ((path, text) of the other unsaved buffers) in place of their files; their
    fixes not yet asked for (``Linted.with_fixes``)."""
    path = target.path
    project = flake8_plugin.project_of(path) if target.on_disk else None
    selection = _selection(path, project is not None)
    # As lint_text makes it (the project's cache keys the facts by the text's hash).
    source = SourceFile(path, text=text, hashing=project is not None)
    findings = lint_text(path, text, selection, project=project, annotate_fixes=False, source=source,
                         other_texts=others).findings
    return Linted(text, findings, source)


def _selection(path: str, in_a_project: bool) -> EnabledRules:
    return flake8_plugin.selection_for(path, in_a_project)


# --- LSP shapes -------------------------------------------------------------------------------

def _range(document, finding: Finding) -> types.Range:
    """1-based line and column (characters; ``end_column`` exclusive) -> the client's 0-based
    positions, in its units (UTF-16 by default)."""
    end_line = finding.end_line or finding.line
    end_column = finding.end_column or finding.column
    server_range = types.Range(start=types.Position(finding.line - 1, finding.column - 1),
                               end=types.Position(end_line - 1, end_column - 1))
    return document.position_codec.range_to_client_units(document.lines, server_range)


def _diagnostic(document, finding: Finding) -> types.Diagnostic:
    page = page_path(finding.code)
    return types.Diagnostic(
        range=_range(document, finding),
        message=finding.message,
        severity=SEVERITIES.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.code,
        code_description=types.CodeDescription(href=page.as_uri()) if page is not None else None,
        source=SOURCE,
        related_information=[_related_information(document, finding, place) for place in finding.related] or None,
    )


def _related_information(document, finding: Finding, place: RelatedLocation) -> types.DiagnosticRelatedInformation:
    """A related location (``Finding.related``) as the client shows it: a point in this buffer
    (in the client's units), or in another file of the project."""
    at = types.Position(place.line - 1, place.column - 1)
    if place.path == finding.path:
        uri = document.uri
        at = document.position_codec.position_to_client_units(document.lines, at)
    else:
        uri = Path(os.path.abspath(place.path)).as_uri()
    return types.DiagnosticRelatedInformation(location=types.Location(uri=uri, range=types.Range(at, at)),
                                              message=place.message)


def _contains(outer: types.Range, inner: types.Range) -> bool:
    """Do the two ranges meet (a cursor is an empty range)?"""
    def key(position: types.Position) -> tuple[int, int]:
        return position.line, position.character
    return key(outer.start) <= key(inner.end) and key(inner.start) <= key(outer.end)


def _whole_document_edit(uri: str, before: str, after: str) -> types.WorkspaceEdit:
    """A WorkspaceEdit that replaces the whole text (the fix driver gives a whole new text)."""
    lines = before.split("\n")
    # Position in UTF-16 units: the last line's length counts surrogate pairs twice.
    end = types.Position(len(lines) - 1, len(lines[-1].encode("utf-16-le")) // 2)
    edit = types.TextEdit(range=types.Range(types.Position(0, 0), end), new_text=after)
    return types.WorkspaceEdit(changes={uri: [edit]})


def _encoded(text: str) -> Optional[bytes]:
    """The buffer as the bytes ``--fix`` reads from its file: in the encoding its coding line
    declares (UTF-8 without one); None when the text cannot be written in it."""
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(text.encode("utf-8")).readline)[0]
        return text.encode(encoding)
    except (SyntaxError, LookupError, UnicodeEncodeError):
        return None


def _fix_action(uri: str, path: str, linted: Linted, finding: Finding,
                diagnostic: types.Diagnostic) -> Optional[types.CodeAction]:
    """The quick fix of one finding: ``--fix`` (with ``--unsafe-fixes`` for an unsafe fix) on
    the buffer, that finding alone, one round (``NOTHING_ENABLED``: no later round finds more)."""
    data = _encoded(linted.text)
    if data is None:
        return None
    unsafe = not finding.fix_safe
    fixed = fix_file(path, [finding], NOTHING_ENABLED, unsafe, data)
    if fixed.after is None:
        return None
    title = f"Fix {finding.code}: {RULES[finding.code].name}" + (" (unsafe)" if unsafe else "")
    return types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                            edit=_whole_document_edit(uri, linted.text, fixed.after), is_preferred=not unsafe)


def _fix_all_action(uri: str, target: Target, linted: Linted) -> Optional[types.CodeAction]:
    """``--fix`` on the buffer: every safe fix, to a fixed point, as the CLI writes it."""
    if not any(f.fix_available and f.fix_safe for f in linted.with_fixes()):
        return None
    data = _encoded(linted.text)
    if data is None:
        return None
    path = target.path
    project = flake8_plugin.project_of(path) if target.on_disk else None
    fixed = fix_file(path, linted.findings, _selection(path, project is not None), False, data)
    if fixed.after is None:
        return None
    return types.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL_KIND,
                            edit=_whole_document_edit(uri, linted.text, fixed.after))


def suppressed_line(line: str, code: str) -> Optional[str]:
    """``line`` with ``# noqa: CODE`` (the comment the CLI honours, flake8's syntax): added to
    the codes of a ``# noqa:`` comment already there, else appended. None when no comment can
    go there (a line continued with a backslash)."""
    body = line.rstrip("\r\n")
    newline = line[len(body):]
    if body.rstrip().endswith("\\"):
        return None
    comment_at = _comment_start(body)
    if comment_at is not None:
        span = noqa_code_span(body[comment_at:])
        if span is not None:
            _, end, _codes = span
            end += comment_at
            return f"{body[:end]}, {code}{body[end:]}{newline}"
    return f"{body.rstrip()}  # noqa: {code}{newline}"


def _comment_start(line: str) -> Optional[int]:
    """Where the comment of one physical line starts (a ``#`` in a string is not one)."""
    if "#" not in line:
        return None
    try:
        for token in tokenize.generate_tokens(io.StringIO(line + "\n").readline):
            if token.type == tokenize.COMMENT:
                return token.start[1]
    except (tokenize.TokenError, SyntaxError):  # the line continues an open string or bracket
        pass
    return None


def _suppress_action(uri: str, document, finding: Finding,
                     diagnostic: types.Diagnostic) -> Optional[types.CodeAction]:
    lines = document.lines
    if not 0 < finding.line <= len(lines):
        return None
    line = lines[finding.line - 1]
    new_line = suppressed_line(line, finding.code)
    if new_line is None:
        return None
    body = line.rstrip("\r\n")
    end = document.position_codec.position_to_client_units(lines, types.Position(finding.line - 1, len(body)))
    edit = types.TextEdit(range=types.Range(types.Position(finding.line - 1, 0), end),
                          new_text=new_line.rstrip("\r\n"))
    return types.CodeAction(title=f"Suppress {finding.code} on this line", kind=types.CodeActionKind.QuickFix,
                            diagnostics=[diagnostic], edit=types.WorkspaceEdit(changes={uri: [edit]}))


def _wanted(kind: str, only: Optional[list]) -> bool:
    """Is an action of ``kind`` asked for? ``only``: the kinds the client asked for, each
    with the kinds below it (``source.fixAll`` covers ``source.fixAll.autograd-lint``)."""
    asked = [getattr(o, "value", o) for o in only or ()]  # the enum's members, or plain strings
    return not asked or any(kind == o or kind.startswith(f"{o}.") for o in asked)


# --- the server -------------------------------------------------------------------------------

def build_server() -> AutogradLintServer:
    server = AutogradLintServer()

    @server.feature(types.INITIALIZED)
    def initialized(ls: AutogradLintServer, params: types.InitializedParams) -> None:
        # Editors tell a server of files changed on disk only for the patterns it asks for.
        watched = ls.client_capabilities.workspace and ls.client_capabilities.workspace.did_change_watched_files
        if watched and watched.dynamic_registration:
            ls.client_register_capability(types.RegistrationParams(registrations=[types.Registration(
                id=SETTINGS_WATCHER, method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(
                    watchers=[types.FileSystemWatcher(glob_pattern="**/pyproject.toml")]))]))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AutogradLintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.lint(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AutogradLintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.unsaved.add(params.text_document.uri)
        ls.lint_soon(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: AutogradLintServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith("/pyproject.toml"):
            ls.settings_changed()
            return
        ls.cancel_pending(uri)
        ls.unsaved.discard(uri)
        # The saved file is part of its project's facts on disk: the other buffers see it now.
        flake8_plugin.forget(settings=False)
        ls.lint(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AutogradLintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.cancel_pending(uri)
        ls.linted.pop(uri, None)
        ls.seen.pop(uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        if uri in ls.unsaved:  # closed without saving: the others see its file on disk again
            ls.unsaved.discard(uri)
            ls.lint_the_others(uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: AutogradLintServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(change.uri.endswith("/pyproject.toml") for change in params.changes):
            ls.settings_changed()

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND]))
    def code_action(ls: AutogradLintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        linted = ls.current(uri)
        if linted is None:
            return []
        target = ls.target(uri)
        path = target.path
        document = ls.workspace.get_text_document(uri)
        only = params.context.only
        actions: list[types.CodeAction] = []
        findings = linted.with_fixes()
        if _wanted(types.CodeActionKind.QuickFix.value, only):
            for finding in findings:
                diagnostic = _diagnostic(document, finding)
                if not _contains(params.range, diagnostic.range):
                    continue
                if finding.fix_available:
                    action = _fix_action(uri, path, linted, finding, diagnostic)
                    if action is not None:
                        actions.append(action)
                action = _suppress_action(uri, document, finding, diagnostic)
                if action is not None:
                    actions.append(action)
        if _wanted(FIX_ALL_KIND, only):
            action = _fix_all_action(uri, target, linted)
            if action is not None:
                actions.append(action)
        return actions

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: AutogradLintServer, params: types.HoverParams) -> Optional[types.Hover]:
        uri = params.text_document.uri
        linted = ls.current(uri)
        if linted is None:
            return None
        document = ls.workspace.get_text_document(uri)
        cursor = types.Range(params.position, params.position)
        codes = []
        for finding in linted.findings:
            if finding.code not in codes and _contains(_range(document, finding), cursor):
                codes.append(finding.code)
        if not codes:
            return None
        pages = []
        for code in codes:
            page = io.StringIO()
            try:
                explain(code, page)
            except ExplainError as error:  # a code without a page: say so rather than nothing
                page.write(str(error))
            pages.append(page.getvalue())
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                        value="\n---\n\n".join(pages)))

    return server


def serve() -> int:
    # The CLI keeps the cyclic collector off for its short runs; a server runs for hours.
    gc.enable()
    # The protocol owns stdout: anything printed by mistake goes to stderr (the client's log).
    protocol_out = sys.stdout.buffer
    sys.stdout = sys.stderr
    # Each edit lints the buffer again, and most of its classes and helper functions come
    # through unchanged: their libcst trees (and positions) are kept by text, as --fix keeps
    # them between rounds, so only what was edited is parsed again (bench/NOTES.md, issue 31).
    with remember_class_trees(REMEMBERED_TREE_CHARACTERS):
        build_server().start_io(sys.stdin.buffer, protocol_out)
    return 0
