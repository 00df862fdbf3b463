"""The evidence matcher: paraphrases kept, unrelated mentions not, and its corpus score."""

from __future__ import annotations

import pytest

from eventstore._ops._evidence import commands, fact_kept, facts_kept, rule_kept
from eventstore._ops._words import sentences_of, units_of
from tests.claude_code import corpus, corpus_real
from tests.transcripts import REAL_DIR


class TestRules:
    @pytest.mark.parametrize(
        "summary",
        [
            "The user asked never to modify files under /etc.",
            "Constraint: files under /etc must not be modified.",
            "Do not modify any files under /etc (user rule).",
        ],
    )
    def test_a_paraphrase_keeps_the_rule(self, summary: str) -> None:
        """Most of the rule's words and a word of prohibition, in one sentence."""
        assert rule_kept(sentences_of(summary), "Never modify files under /etc.")

    @pytest.mark.parametrize(
        "summary",
        [
            "Modified files under /etc as asked.",  # no prohibition
            "Never mind.\nFiles under /etc were modified.",  # not in one sentence
            "The user mentioned /etc.",
        ],
    )
    def test_words_without_the_rule_do_not(self, summary: str) -> None:
        """The words without their prohibition, or spread over sentences, are no rule."""
        assert not rule_kept(sentences_of(summary), "Never modify files under /etc.")

    @pytest.mark.parametrize(
        ("summary", "kept"),
        [
            ("The user also said, in German, never to change README.md.", True),
            ("Rules: do not edit README.md; keep the tests green.", True),
            ("README.md and docs/spec.md were opened.", False),
            ("Never touch the docs.", False),
        ],
    )
    def test_a_rule_in_another_language_is_kept_by_the_file_it_names(
        self, summary: str, kept: bool
    ) -> None:
        """Every path the rule names, with a word of prohibition, carries it across languages."""
        rule = "Bitte ändere niemals die Datei README.md."
        assert rule_kept(sentences_of(summary), rule) is kept


class TestAttempts:
    KEY = "Edit: lib/parser.ex (line 40)"
    REASON = "line 40: String to replace not found in file."

    def test_the_failure_said_in_other_words_is_kept(self) -> None:
        """Naming the file and saying it went wrong, in any words, carries the attempt."""
        text = "The edit to lib/parser.ex did not apply: the old string could not be found."
        assert fact_kept(sentences_of(text), self.KEY, "failed", self.REASON)

    def test_an_unrelated_mention_of_the_same_file_is_not(self) -> None:
        """The file named elsewhere, without a failure, is no evidence of the failed Edit."""
        text = "lib/parser.ex holds the parser.\nTests failed in test/lexer_test.exs."
        assert not fact_kept(sentences_of(text), self.KEY, "failed", self.REASON)

    def test_the_error_line_itself_is_evidence(self) -> None:
        """Half the words of the error line, with the file, carry it."""
        text = "lib/parser.ex: string to replace not found in file"
        assert fact_kept(sentences_of(text), self.KEY, "failed", self.REASON)


class TestNegated:
    KEY = "Bash: git push (line 3)"
    REASON = "line 3: fatal: no upstream"

    @pytest.mark.parametrize(
        "summary",
        [
            "We didn't run git push.",
            "git push did not fail.",
            "git push ran without errors.",
            "git push worked, no problem.",
            "No problems with git push.",
            "git push lief ohne Fehler durch.",
        ],
    )
    def test_a_failure_denied_or_never_attempted_is_not_kept(self, summary: str) -> None:
        """A failure word under a negation, or an attempt the summary says was not made,
        is no evidence that the attempt failed."""
        assert not fact_kept(sentences_of(summary), self.KEY, "failed", self.REASON)

    @pytest.mark.parametrize(
        "summary",
        [
            "git push failed: no upstream branch.",
            "git push didn't work (no upstream).",
            "git push did not succeed.",
            "git push ist fehlgeschlagen.",
            "git push a échoué.",
            "The push could not be done: git push found no upstream.",
        ],
    )
    def test_a_failure_said_with_a_negation_or_in_another_language_is_kept(
        self, summary: str
    ) -> None:
        """Saying the attempt did not work, or failed in German or French, carries it."""
        assert fact_kept(sentences_of(summary), self.KEY, "failed", self.REASON)


class TestOtherWords:
    """Failures a real summary kept in other words (the shapes of three real sessions)."""

    HOOK = (
        "line 40: Pre-commit validation failed: | [MYPY] | Found 2 errors in 1 file"
        " (checked 9 source files)"
    )
    NESTED = (
        "4. **Task 3: wire the tracer into the handlers**\n"
        "   - Added the span helper\n"
        "   - **Multiple errors**:\n"
        "     - **Persistent mypy complaint**: `span_id()` may return None, mypy says it"
        " never does. Tried several approaches:\n"
        "       - Adding a cast\n"
        "       - Using `--no-verify`\n"
        "       - None worked: the pre-commit hook blocks even with --no-verify\n"
        "   - Committed successfully, closed the task\n"
    )
    AFTER = (
        "   - **Multiple errors**:\n"
        "     - Tried a cast, then `--no-verify`\n"
        "     - None worked because the hook blocks even with --no-verify\n"
        "\n"
        "The blocker: the pre-commit hook enforces mypy and cannot be bypassed.\n"
    )

    @pytest.mark.parametrize("summary", [NESTED, AFTER])
    @pytest.mark.parametrize("n", [40, 52, 61])
    def test_a_hook_that_blocked_every_commit_is_kept_in_other_words(
        self, summary: str, n: int
    ) -> None:
        """Each failed commit is kept by "the pre-commit hook blocks" under "Multiple errors",
        or by a sentence naming the hook and the check that failed."""
        key = (
            f'Bash: git add -A && git commit -m "feat: wire the tracer into the handl... (line {n})'
        )
        assert fact_kept(units_of(summary), key, "failed", self.HOOK)

    def test_a_sibling_of_the_errors_heading_is_not_under_it(self) -> None:
        """ "Committed successfully" beside the errors list says nothing went wrong."""
        summary = (
            "   - **Errors**:\n     - a typo in the config\n   - git commit done, task closed\n"
        )
        key = 'Bash: git commit -m "wip" (line 9)'
        assert not fact_kept(units_of(summary), key, "failed", "line 9: [LINT] | E501 too long")

    def test_the_fix_of_a_failed_add_names_it(self) -> None:
        """ "Git ignored build/static → used git add -f" keeps the failed ``git add``."""
        summary = (
            "Key errors encountered:\n"
            "1. Mypy nesting warning → extracted helpers\n"
            "2. Git ignored `build/static/` → used `git add -f`\n"
        )
        key = "Bash: git add src/app.py src/views/page.html build/st... (line 50)"
        reason = "line 50: The following paths are ignored by one of your .gitignore files:"
        assert fact_kept(units_of(summary), key, "failed", reason)

    def test_a_linter_run_is_kept_by_what_the_linter_said(self) -> None:
        """A credo run is kept by "credo/compiler conflict over an alias", its finding."""
        summary = (
            "- Hit a credo/compiler conflict over an alias in a rescue block - solved with"
            " `credo:disable-for-next-line`"
        )
        key = "Bash: mix credo --strict lib/app/registry.ex lib/app_web/controllers/pa... (line 60)"
        reason = "line 60: [D] ↘ Nested modules could be aliased at the top of the invoking module."
        assert fact_kept(units_of(summary), key, "failed", reason)

    def test_the_same_files_named_under_another_heading_are_not(self) -> None:
        """A failed add, its files listed under "Files touched:", is not kept."""
        summary = "Errors encountered:\n- None.\nFiles touched:\n- ran git add -A to stage\n"
        key = "Bash: git add -A (line 7)"
        assert not fact_kept(
            units_of(summary), key, "failed", "line 7: fatal: not a git repository"
        )


class TestOneFindingPerAttempt:
    FACTS = (
        ("Bash: git add -A (line 3)", "failed", "line 3: fatal: not a git repository"),
        ("Bash: git add -A (line 5)", "failed", "line 5: fatal: not a git repository"),
    )

    @pytest.mark.parametrize(
        ("summary", "kept"),
        [
            ("The first `git add -A` failed: not a git repository.", {"line 3"}),
            ("`git add -A` failed twice: not a git repository.", {"line 3", "line 5"}),
            ("`git add -A` failed. Then `git add -A` failed again.", {"line 3", "line 5"}),
        ],
    )
    def test_one_sentence_states_one_attempt_unless_it_says_more(
        self, summary: str, kept: set[str]
    ) -> None:
        """A sentence stands for one of two like attempts, both when it says twice or again."""
        got = facts_kept(units_of(summary), self.FACTS)
        assert {k.rsplit("(", 1)[1].rstrip(")") for k in got} == kept

    def test_a_commit_message_is_not_what_was_attempted(self) -> None:
        """A quoted commit message, redirections and one-letter flags are left out."""
        got = commands('git add -A && git commit -m "fix: the parser" 2>&1 | tail -5')
        assert got == [["git", "add"], ["git", "commit"], ["tail"]]


@pytest.fixture(name="judged", scope="module")
def _judged() -> list[corpus.Judged]:
    return corpus.judge_all()


class TestCorpus:
    def test_every_live_obligation_has_a_hand_verdict(self, judged: list[corpus.Judged]) -> None:
        """The labels match the fixtures: no obligation unlabelled, no label unused."""
        assert [j.key for j in judged if j.label == "unlabelled"] == []
        used = {(j.case, j.key) for j in judged}
        labelled = {(c.name, k) for c in corpus.cases() for k in c.labels}
        assert labelled == used

    def test_a_transcript_s_own_summary_has_a_reason_for_each_verdict(self) -> None:
        """Every label of a case judged on a transcript's own summary says why."""
        own = [c for c in corpus.cases() if c.summary is None]
        assert [(c.name, k) for c in own for k in c.labels if not c.reasons.get(k)] == []

    def test_the_real_sessions_are_judged_as_labelled(self, judged: list[corpus.Judged]) -> None:
        """The hostile review's cases (summaries that kept failures in other words) hold."""
        if not REAL_DIR.is_dir():
            pytest.skip("real transcripts not beside the clone (../shared/data/claude-code)")
        real = [j for j in judged if j.case.startswith("real ")]
        assert len(real) == sum(len(v) for v in corpus_real.LABELS.values())
        assert [(j.case, j.key, j.label) for j in real if j.flagged != j.dropped] == []

    def test_precision_and_recall_hold_what_the_docs_publish(
        self, judged: list[corpus.Judged]
    ) -> None:
        """Precision of "not evidenced" at least 0.8, recall at least 0.9 (the docs table)."""
        s = corpus.score(judged)
        assert (s.precision >= 0.8, s.recall >= 0.9) == (True, True), corpus.table(judged)
