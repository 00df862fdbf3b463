"""The evidence matcher: paraphrases kept, unrelated mentions not, and its corpus score."""

from __future__ import annotations

import pytest

from eventstore._ops._evidence import fact_kept, rule_kept, sentences_of
from tests.claude_code import corpus


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

    def test_precision_and_recall_hold_what_the_docs_publish(
        self, judged: list[corpus.Judged]
    ) -> None:
        """Precision of "not evidenced" at least 0.8, recall at least 0.9 (the docs table)."""
        s = corpus.score(judged)
        assert (s.precision >= 0.8, s.recall >= 0.9) == (True, True), corpus.table(judged)
