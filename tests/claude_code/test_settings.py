"""tierlog's hooks merged into a settings.json text and taken out again, byte for byte."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventstore.claude_code._settings import install, is_ours, parse, uninstall
from reducers import InvalidArgument

OURS = "/venv/bin/python -I -S /src/eventstore/claude_code/_hook.py --journal /j.db"
GROUPS: dict[str, dict[str, Any]] = {
    "PreCompact": {"hooks": [{"type": "command", "command": OURS, "timeout": 60}]},
    "SessionStart": {
        "matcher": "compact",
        "hooks": [{"type": "command", "command": OURS, "timeout": 60}],
    },
    "Stop": {"hooks": [{"type": "command", "command": OURS, "timeout": 10}]},
}
THEIRS: dict[str, Any] = {
    "hooks": {
        "PreCompact": [{"matcher": "auto", "hooks": [{"type": "command", "command": "backup.sh"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.py"}]}],
    },
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"]},
}


def _ours(text: str) -> dict[str, list[dict[str, Any]]]:
    hooks = json.loads(text).get("hooks", {})
    return {
        event: [g for g in groups if any(is_ours(h.get("command")) for h in g["hooks"])]
        for event, groups in hooks.items()
        if any(any(is_ours(h.get("command")) for h in g["hooks"]) for g in groups)
    }


class TestInstall:
    def test_a_missing_file_gets_the_hooks_alone(self) -> None:
        """No settings file yet: a new one holding tierlog's groups, one per event."""
        text = install(None, GROUPS)
        assert json.loads(text) == {"hooks": {e: [g] for e, g in GROUPS.items()}}
        assert text.endswith("}\n")

    def test_other_hooks_of_the_same_event_stay_first_and_whole(self) -> None:
        """tierlog's group is appended after the user's own PreCompact group."""
        text = install(json.dumps(THEIRS, indent=2), GROUPS)
        value = json.loads(text)
        assert value["hooks"]["PreCompact"] == [
            *THEIRS["hooks"]["PreCompact"],
            GROUPS["PreCompact"],
        ]
        assert value["hooks"]["PreToolUse"] == THEIRS["hooks"]["PreToolUse"]
        assert value["model"] == "opus"
        assert value["permissions"] == THEIRS["permissions"]

    def test_installing_twice_changes_nothing(self) -> None:
        """The same groups again leave the text as it is."""
        once = install(json.dumps(THEIRS, indent=2), GROUPS)
        assert install(once, GROUPS) == once

    def test_another_journal_replaces_tierlogs_groups(self) -> None:
        """A second install with another command leaves one group per event, the new one."""
        other = {e: json.loads(json.dumps(g).replace("/j.db", "/k.db")) for e, g in GROUPS.items()}
        text = install(install(json.dumps(THEIRS), GROUPS), other)
        assert _ours(text) == {e: [g] for e, g in other.items()}
        assert "/j.db" not in text

    @pytest.mark.parametrize(
        "text",
        ["[]", '{"hooks": []}', '{"hooks": {"Stop": {}}}', "{", "not json", '{"a": 1} 2'],
    )
    def test_what_claude_code_cannot_read_is_refused(self, text: str) -> None:
        """A text that is not a settings object (or whose hooks are malformed) is an error."""
        with pytest.raises(InvalidArgument):
            install(text, GROUPS)

    def test_a_one_line_file_stays_on_one_line(self) -> None:
        """A minified settings file is edited without adding line breaks."""
        text = install(json.dumps(THEIRS, separators=(",", ":")), GROUPS)
        assert "\n" not in text
        assert _ours(text) == {e: [g] for e, g in GROUPS.items()}

    def test_tab_indentation_is_kept(self) -> None:
        """Tierlog's lines are indented with tabs in a file indented with tabs."""
        text = install(json.dumps(THEIRS, indent="\t"), GROUPS)
        assert "\n\t\t\t\t" in text
        assert "\n  " not in text


class TestUninstall:
    @pytest.mark.parametrize("indent", [None, 2, 4, "\t"])
    def test_the_round_trip_is_byte_identical(self, indent: int | str | None) -> None:
        """install then uninstall gives back the very bytes, whatever the layout."""
        text = json.dumps(THEIRS, indent=indent) + ("\n" if indent else "")
        assert uninstall(install(text, GROUPS)) == text

    def test_other_hooks_added_after_install_survive(self) -> None:
        """A hook the user added after tierlog's is kept; only tierlog's go."""
        value = json.loads(install(json.dumps(THEIRS, indent=2), GROUPS))
        theirs = {"hooks": [{"type": "command", "command": "later.sh"}]}
        value["hooks"]["PreCompact"].append(theirs)
        left = json.loads(uninstall(json.dumps(value, indent=2)))
        assert left["hooks"]["PreCompact"] == [*THEIRS["hooks"]["PreCompact"], theirs]
        assert "Stop" not in left["hooks"]
        assert "SessionStart" not in left["hooks"]

    def test_a_group_shared_with_the_user_keeps_the_users_hooks(self) -> None:
        """Only tierlog's hook leaves a group the user put another hook into."""
        shared = {"hooks": [{"type": "command", "command": "x.sh"}, {"command": OURS}]}
        text = json.dumps({"hooks": {"Stop": [shared]}}, indent=2)
        left = json.loads(uninstall(text))
        assert left == {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x.sh"}]}]}}

    def test_without_tierlogs_hooks_nothing_changes(self) -> None:
        """A settings file tierlog never touched is left as it is."""
        text = json.dumps(THEIRS, indent=3)
        assert uninstall(text) == text

    def test_the_hooks_key_tierlog_made_goes(self) -> None:
        """A file that had no hooks at all gets back to exactly what it was."""
        text = '{\n  "model": "opus"\n}\n'
        assert uninstall(install(text, GROUPS)) == text


class TestParse:
    def test_spans_cover_the_values(self) -> None:
        """Each member's span is the text of its value."""
        text = '{"a": [1, {"b": "c"}], "d": null}'
        root = parse(text)
        a = root.member("a")
        assert a is not None
        assert text[a.start : a.end] == '[1, {"b": "c"}]'
        assert [text[i.start : i.end] for i in a.items] == ["1", '{"b": "c"}']

    def test_tierlogs_commands_are_recognised(self) -> None:
        """The installed hook and the tierlog command count as tierlog's, others do not."""
        assert is_ours(OURS)
        assert is_ours("tierlog claude-code hook --journal j.db")
        assert not is_ours("echo tierlog")
        assert not is_ours(None)

    @pytest.mark.parametrize(
        "command",
        [
            "npx my-claude-code hook-notify --sound",
            "claude-code hook.sh",
            "/opt/other-tool claude-code hook --journal x",
            "python3 /home/u/eventstore/claude_code/_hook.py.bak",
        ],
    )
    def test_a_command_that_only_resembles_tierlogs_is_the_users(self, command: str) -> None:
        """Another tool's hook whose command merely contains tierlog's words is not ours."""
        assert not is_ours(command)

    def test_install_and_uninstall_leave_a_look_alike_hook_alone(self) -> None:
        """A user's hook named like tierlog's survives install and uninstall."""
        mine = {"hooks": [{"type": "command", "command": "npx my-claude-code hook-notify"}]}
        text = json.dumps({"hooks": {"Stop": [mine]}}, indent=2) + "\n"
        installed = install(text, GROUPS)
        assert json.loads(installed)["hooks"]["Stop"][0] == mine
        assert uninstall(installed) == text


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
_hook = st.fixed_dictionaries({"type": st.just("command"), "command": st.text(max_size=10)})
_group = st.fixed_dictionaries(
    {"hooks": st.lists(_hook, max_size=2)}, optional={"matcher": st.text(max_size=5)}
)
_events = st.dictionaries(
    st.sampled_from(["PreCompact", "Stop", "PreToolUse", "Notification"]),
    st.lists(_group, max_size=2),
    max_size=3,
)


@st.composite
def _settings(draw: st.DrawFn) -> str:
    value: dict[str, Any] = draw(st.dictionaries(st.sampled_from(["model", "env", "x"]), _json))
    if draw(st.booleans()):
        value["hooks"] = draw(_events)
    indent = draw(st.sampled_from([None, 1, 2, 4, "\t"]))
    return json.dumps(value, indent=indent, ensure_ascii=draw(st.booleans()))


class TestProperties:
    @settings(max_examples=150, deadline=None)
    @given(_settings())
    def test_install_then_uninstall_is_the_identity(self, text: str) -> None:
        """For any settings text without tierlog's hooks the round trip changes no byte."""
        assert uninstall(install(text, GROUPS)) == text

    @settings(max_examples=150, deadline=None)
    @given(_settings(), st.sampled_from([None, 2]))
    def test_a_rewritten_file_keeps_every_other_value(self, text: str, indent: int | None) -> None:
        """Rewritten in between (as Claude Code's own editor does), the file still loses
        only tierlog's hooks, and at most an empty hook list or hooks object."""
        value = json.loads(install(text, GROUPS))
        assert _ours(json.dumps(value)) == {e: [g] for e, g in GROUPS.items()}
        left = json.loads(uninstall(json.dumps(value, indent=indent)))
        assert _pruned(left) == _pruned(json.loads(text))


def _pruned(value: dict[str, Any]) -> dict[str, Any]:
    """A settings value without empty hook lists, and without ``hooks`` if it is empty."""
    hooks = {e: g for e, g in value.get("hooks", {}).items() if g}
    return {k: v for k, v in value.items() if k != "hooks"} | ({"hooks": hooks} if hooks else {})
