"""Regenerate the committed Claude Code fixtures with the real CLI (``make fixtures-claude-code``).

Each scenario runs the CLI (``make claude-code`` installs it; an older release with
``--version``) in a throwaway home and project folder against the mock API, then
writes the transcript to ``tests/data/claude-code/`` with the throwaway folders
replaced by ``/home/dev`` and ``/home/dev/notes-app`` (so a file does not change
with the folder it was made in). The hand-made variants are derived from the
generated ones by :mod:`tests.claude_code.handmade`, and named ``handmade-*``.

Usage: ``python -m tests.claude_code.make_fixtures [--version V] [--binary PATH]``
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

from tests.claude_code import handmade
from tests.claude_code.cli import BINARY, ROOT, VERSION, ClaudeCode
from tests.claude_code.mock_api import MockApi, Reply, Text, ToolCall, bash, say

OUT = ROOT / "tests" / "data" / "claude-code"
HOME, PROJECT = "/home/dev", "/home/dev/notes-app"
CLAUDE_MD = """# Notes app
- Always run `make check` before you say a change is done.
- Never push to the main branch.
"""
SPEC = """# Notes format
Each note is one line of notes.txt.
Passwords must never be written to notes.txt.
"""
ETC_FILE = "/etc/notes-app.conf"  # a new file: the user is asked, and -p refuses
NEAR_WINDOW = 190_000  # reported usage that makes the next request compact first

# The summaries the mock returns, in order: auto-compaction, then the manual /compact.
SUMMARIES = (
    "The user asked to set up notes.txt and never to modify files under /etc; docs/spec.md"
    " says passwords must never be written to notes.txt. `cat notes.txt` first failed"
    " (no such file) and worked once the file was created; `git add -A` failed twice"
    " because the folder is not a git repository. Writing /etc/notes-app.conf was refused.",
    "Notes file set up. The user wants ls used instead of git here. Next: nothing pending.",
)


def scenario(cc: ClaudeCode) -> str:
    """The notes-app session: rules, failures, a refusal, both kinds of compaction."""
    p = cc.project
    cc.api.add(
        Reply(blocks=(ToolCall(name="Read", input={"file_path": str(p / "docs/spec.md")}),)),
        bash("cat notes.txt", "Checking the notes file."),
        bash("git add -A"),
        bash("git add -A"),
        Reply(blocks=(ToolCall(name="Write", input={"file_path": ETC_FILE, "content": "x"}),)),
        bash("echo 'first note' > notes.txt"),
        bash("cat notes.txt"),
        Reply(blocks=(Text(text="notes.txt is ready."),), prompt_tokens=NEAR_WINDOW),
    )
    first = cc.run(
        "Set up notes.txt for me. Never modify files under /etc. Read docs/spec.md first"
        " and follow it.",
        tools=("Bash", "Read"),
    )
    sid = first.session_id
    cc.api.add(bash("git status"), say("This folder is not a git repository."))
    cc.run("Bitte ändere niemals die Datei README.md. Zeig mir den Status.", resume=sid)
    cc.api.add(bash("ls"), say("notes.txt is the only file besides the docs."))
    cc.run("No, don't use git here; use ls instead.", resume=sid)
    cc.run("/compact keep the failures", resume=sid)
    cc.api.add(say("You're welcome."))
    cc.run("Thanks.", resume=sid)
    return sid


def generate(binary: Path, version: str, out: Path = OUT) -> Path:
    """Run the scenario with ``binary``; the transcript's path in ``out``."""
    with tempfile.TemporaryDirectory(prefix="tierlog-fixtures-") as folder:
        home, project = Path(folder) / "home", Path(folder) / "notes-app"
        (project / "docs").mkdir(parents=True)
        home.mkdir()
        (project / "CLAUDE.md").write_text(CLAUDE_MD)
        (project / "docs" / "spec.md").write_text(SPEC)
        with MockApi(summaries=SUMMARIES) as api:
            cc = ClaudeCode(api=api, home=home, project=project, binary=binary)
            sid = scenario(cc)
            text = cc.transcript(sid).read_text(encoding="utf-8")
    for real, shown in ((project, PROJECT), (home, HOME)):
        text = text.replace(str(real), shown).replace(_dashed(real), _dashed(shown))
    target = out / f"cli-{version}-notes.jsonl"
    target.write_text(text, encoding="utf-8")
    return target


def _dashed(path: Path | str) -> str:
    """A folder as Claude Code names its transcripts folder (``/a/b`` -> ``-a-b``)."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def main(argv: list[str] | None = None) -> int:
    """Generate one release's fixture (and, for the pinned one, the hand-made variants)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default=VERSION)
    parser.add_argument("--binary", type=Path, default=BINARY)
    args = parser.parse_args(argv)
    made = generate(args.binary.resolve(), args.version)
    print(f"wrote {made.relative_to(ROOT)}")
    if args.version == VERSION:
        for path in handmade.derive(made, OUT):
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
