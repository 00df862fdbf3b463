"""``tierlog claude-code install | uninstall | hook``: tierlog's hooks for Claude Code."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # each command imports what it runs: the hook, on every prompt, only itself
    from eventstore.claude_code import Change

Handler = Callable[[argparse.Namespace], int]

SUMMARY = "tierlog's Claude Code hooks: journal each compaction, give back what it dropped"


def add(subs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``claude-code`` command group and its three commands."""
    group = subs.add_parser(
        "claude-code",
        help=SUMMARY,
        description=SUMMARY,
        epilog="example:\n  tierlog claude-code install --project ~/src/my-app",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = group.add_subparsers(dest="claude_code", metavar="COMMAND", required=True)
    _where(
        _sub(
            commands,
            "install",
            "merge tierlog's hooks into a Claude Code settings.json (idempotent)",
            "tierlog claude-code install --project ~/src/my-app",
            _install,
        ),
        journal=True,
    )
    _where(
        _sub(
            commands,
            "uninstall",
            "take tierlog's hooks out of a settings.json, leaving every other hook as it was",
            "tierlog claude-code uninstall --user",
            _uninstall,
        ),
        journal=False,
    )
    hook = _sub(
        commands,
        "hook",
        "the hook Claude Code runs: its JSON on stdin; never fails the session (exit 0)",
        "echo '{...}' | tierlog claude-code hook --journal .claude/tierlog/journal.db",
        _hook,
    )
    hook.add_argument("--journal", required=True, help="the journal file the hooks write")
    hook.add_argument("--tell-summarizer", action="store_true", help=_TELL)
    hook.add_argument("--wait", default="30", metavar="S", help="how long SessionStart waits")
    hook.__class__ = _Verbatim  # its options are the hook's to judge: never argparse's exit 2


class _Verbatim(argparse.ArgumentParser):
    """The ``hook`` command's parser: it hands its arguments, as given, to the hook, which
    answers a missing or unknown option with one line and exit 0 (argparse's exit 2 would
    block every prompt and compaction); ``--help`` is argparse's."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        given = list(args or ())
        if "-h" in given or "--help" in given:
            return super().parse_known_args(given, namespace)
        namespace = namespace if namespace is not None else argparse.Namespace()
        namespace.handler, namespace.hook_argv = _hook, given
        return namespace, []


_TELL = "PreCompact prints the live obligations, so the summarizer is told what to carry"


def _sub(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    summary: str,
    example: str,
    handler: Handler,
) -> argparse.ArgumentParser:
    p = commands.add_parser(
        name,
        help=summary,
        description=summary,
        epilog=f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(handler=handler)
    return p


def _where(p: argparse.ArgumentParser, *, journal: bool) -> None:
    p.add_argument("--project", metavar="DIR", help="DIR/.claude/settings.json (default: .)")
    p.add_argument("--user", action="store_true", help="~/.claude/settings.json: every project")
    p.add_argument("--settings", metavar="FILE", help="this settings file")
    p.add_argument("--json", action="store_true", help="print JSON")
    if journal:
        p.add_argument(
            "--journal", metavar="PATH", help="journal file (default: tierlog/journal.db beside)"
        )
        p.add_argument("--tell-summarizer", action="store_true", help=_TELL)


def _install(args: argparse.Namespace) -> int:
    from eventstore.claude_code import install, settings_file

    where = settings_file(args.project, args.user, args.settings)
    _show(install(where, args.journal, tell_summarizer=args.tell_summarizer), args.json)
    return 0


def _uninstall(args: argparse.Namespace) -> int:
    from eventstore.claude_code import settings_file, uninstall

    _show(uninstall(settings_file(args.project, args.user, args.settings)), args.json)
    return 0


def _hook(args: argparse.Namespace) -> int:
    from eventstore.claude_code import hook_main

    return hook_main(args.hook_argv)


def _show(change: Change, as_json: bool) -> None:
    import attrs

    if as_json:
        print(json.dumps(attrs.asdict(change, value_serializer=lambda _i, _a, v: _plain(v))))
    else:
        journal = f", journal {change.journal}" if change.journal else ""
        print(f"{change.settings}: {change.action}{journal}")
    for other in change.also:
        print(
            f"tierlog claude-code: note: {other} runs tierlog's hooks too: a session reading"
            " both runs them twice (two journals, two blocks); uninstall one",
            file=sys.stderr,
        )


def _plain(value: object) -> object:
    return str(value) if hasattr(value, "__fspath__") else value
