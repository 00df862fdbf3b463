"""Journal locations: a file or a postgresql:// URL; any other URL refused, its secrets
never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

import eventstore
from eventstore._location import check_location, redact, redact_text
from eventstore.cli import main

URLS = [
    "mysql://admin:hunter2@db.internal/fleet",
    "postgresq://admin:hunter2@db.internal/fleet",
    "postgresql+psycopg://admin:hunter2@db.internal/fleet",
    "POSTGRESQL://admin:hunter2@db.internal/fleet",
    "sqlite://admin:hunter2@/tmp/x.db",
]


class TestOtherSchemes:
    @pytest.mark.parametrize("url", URLS)
    def test_a_url_of_another_scheme_is_refused_without_its_password(
        self, url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """eventstore.open refuses it (InvalidArgument), names the scheme, hides the
        password, and creates no file."""
        monkeypatch.chdir(tmp_path)
        with pytest.raises(eventstore.InvalidArgument) as refused:
            eventstore.open(url)
        message = str(refused.value)
        assert "hunter2" not in message
        assert "admin:***@db" in message or "admin:***@/tmp" in message
        assert list(tmp_path.iterdir()) == []

    @pytest.mark.parametrize(
        ("url", "hint"),
        [
            (URLS[1], "did you mean postgresql://?"),
            (URLS[2], "tierlog picks the driver itself"),
            (URLS[3], "in lower case"),
        ],
    )
    def test_the_message_says_what_was_meant(self, url: str, hint: str) -> None:
        """A near miss of postgresql:// is named as one."""
        with pytest.raises(eventstore.InvalidArgument, match=hint):
            check_location(url)

    @pytest.mark.parametrize(
        "location",
        [
            " postgresql://admin:hunter2@db.internal/fleet",
            "file:postgresql://admin:hunter2@db.internal/fleet",
            "./postgresql://admin:hunter2@db.internal/fleet",
            "host=db.internal password=hunter2",
        ],
    )
    def test_a_secret_inside_a_file_name_is_refused_hidden(
        self,
        location: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """A location that is no URL but holds one with a password (a space or a prefix
        before the scheme, a libpq keyword string) is refused with the password hidden,
        by the library and by every command, and creates nothing."""
        monkeypatch.chdir(tmp_path)
        with pytest.raises(eventstore.InvalidArgument) as refused:
            eventstore.open(location)
        assert "hunter2" not in str(refused.value)
        for argv in (["sessions", location], ["demo", "--db", location], ["verify", location]):
            assert main(argv) == 2
            _, err = capsys.readouterr()
            assert "***" in err
            assert "hunter2" not in err
        assert list(tmp_path.iterdir()) == []

    @pytest.mark.parametrize("path", ["agent.db", "C:\\journals\\a.db", "a:b.db", "./x://y"])
    def test_paths_pass(self, path: str) -> None:
        """Paths, a drive letter and a colon in a name are left to the backends."""
        check_location(path)


class TestRedaction:
    @pytest.mark.parametrize(
        ("text", "shown"),
        [
            ("postgresql://u:pw@h/db", "postgresql://u:***@h/db"),
            ("postgresql://u@h/db?password=pw&sslmode=require", "?password=***&sslmode"),
            ("cannot reach mysql://root:p%40ss@h:3306/x: refused", "mysql://root:***@h:3306/x:"),
            ("dsn host=h password=pw user=u", "password=*** user=u"),
            ("two: a://x:1@h and b://y:2@h", "a://x:***@h and b://y:***@h"),
            ("cannot write x/postgresql:/u:pw@h/d: no folder", "x/postgresql:/u:***@h/d:"),
        ],
    )
    def test_every_url_in_a_text_loses_its_secret(self, text: str, shown: str) -> None:
        """URLs anywhere in a message, and a libpq password keyword, are redacted."""
        redacted = redact_text(text)
        assert shown in redacted
        assert "pw" not in redacted.replace("password", "")

    def test_a_url_without_a_secret_is_unchanged(self) -> None:
        """Nothing is hidden where nothing is secret."""
        assert redact("postgresql://u@h/db") == "postgresql://u@h/db"
        assert redact_text("see https://example.org/docs") == "see https://example.org/docs"
