"""Hand verdicts on the real sessions beside the clone (``../shared/data/claude-code``).

Each session's one compaction, judged by reading its transcript and the summary Claude
Code resumed from. The sessions are other people's data and never committed: an
attempt is named by the transcript line of its failure (``line 1209``), and each
verdict's reason is said in our own words. The verdicts and the score's rules are
those of ``corpus``; 4d5611e5 has no live obligation at its compaction, so no case.
"""

from __future__ import annotations

KEPT, PARTIAL, ABSENT = "kept", "partial", "absent"

# transcript file name -> {attempt: (verdict, why)}
LABELS: dict[str, dict[str, tuple[str, str]]] = {
    "258c7280-ae70-4798-800f-63464d01a85d.jsonl": {
        "line 495": (KEPT, "the summary says the user interrupted the long wait on the tests"),
        "line 615": (
            PARTIAL,
            "it says the work was committed and pushed, never that a push failed for"
            " want of an upstream branch",
        ),
    },
    "8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl": {
        "line 321": (
            PARTIAL,
            "it says the bead was committed; the commit skill failing on an unknown"
            " revision range is not there",
        ),
        "line 568": (
            KEPT,
            "its errors list says the assets folder was gitignored and a forced add was used",
        ),
    },
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl": {
        "line 916": (
            ABSENT,
            "it says the shell checks passed; the run refused with permission denied is not there",
        ),
        "line 1209": (
            KEPT,
            "under 'Multiple errors': the cyclomatic complexity credo found, fixed by a helper",
        ),
        "line 1343": (KEPT, "the Dialyzer false positive that blocked every commit, at length"),
        "line 1366": (KEPT, "the same persistent Dialyzer block, 'none worked'"),
        "line 1389": (KEPT, "credo's explicit-try finding and the Dialyzer block, both listed"),
        "line 1419": (KEPT, "the same persistent Dialyzer block, 'none worked'"),
        "line 1447": (KEPT, "the same persistent Dialyzer block, 'none worked'"),
        "line 1463": (KEPT, "--no-verify is among the approaches tried; the hook still blocked"),
    },
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl": {
        "line 401": (
            KEPT,
            "it says credo clashed over an alias in a rescue block, silenced by a credo comment",
        ),
        "line 494": (KEPT, "the same credo alias clash, run again"),
        "line 519": (KEPT, "the same credo alias clash, on the one file"),
        "line 1105": (
            ABSENT,
            "nothing of the add refused for a path beyond a symbolic link under _build",
        ),
    },
}
