"""The hand verdicts of the corpus on the project's own transcripts (see ``corpus``)."""

from __future__ import annotations

KEPT, PARTIAL, ABSENT = "kept", "partial", "absent"

# The obligations of the notes fixtures, by key; an attempt's "(line N)" reads as its
# rank among the attempts at the same thing ("#1", "#2"), so a regenerated fixture whose
# lines moved keeps its labels.
ETC = "heuristic: Never modify files under /etc."
CHECK = "CLAUDE.md: Always run `make check` before you say a change is done."
MAIN = "CLAUDE.md: Never push to the main branch."
PASSWORDS = "spec.md: Passwords must never be written to notes.txt."
README = "heuristic: Bitte ändere niemals die Datei README.md."
LS = "heuristic: No, don't use git here; use ls instead."
ADD_1 = "Bash: git add -A #1"
ADD_2 = "Bash: git add -A #2"
WRITE = "Write: /etc/notes-app.conf #1"
STATUS = "Bash: git status #1"
CORRECTED = "corrected: Bash: git status #1"

AUTO_REAL = {
    ETC: KEPT,
    CHECK: ABSENT,
    MAIN: ABSENT,
    PASSWORDS: KEPT,
    README: ABSENT,
    ADD_1: KEPT,
    ADD_2: KEPT,
    WRITE: KEPT,
}
MANUAL_REAL = {
    ETC: ABSENT,
    PASSWORDS: ABSENT,
    README: ABSENT,
    CHECK: ABSENT,
    MAIN: ABSENT,
    LS: KEPT,
    ADD_1: ABSENT,
    ADD_2: ABSENT,
    WRITE: ABSENT,
    STATUS: ABSENT,
    CORRECTED: KEPT,
}
AUTO_WHY = {
    ETC: "the summary says the user asked never to modify files under /etc",
    CHECK: "the summary has no word of CLAUDE.md",
    MAIN: "the summary has no word of CLAUDE.md",
    PASSWORDS: "the summary quotes the spec's rule on passwords in notes.txt",
    README: "the German rule typed just before the boundary is not in the summary",
    ADD_1: "'git add -A failed twice because the folder is not a git repository'",
    ADD_2: "the same sentence: failed twice",
    WRITE: "'Writing /etc/notes-app.conf was refused'",
}
MANUAL_WHY = {
    **dict.fromkeys(MANUAL_REAL, "the three-sentence summary says nothing of it"),
    LS: "'The user wants ls used instead of git here'",
    CORRECTED: "the same sentence carries the user's correction",
}
HAND_AUTO = {
    "paraphrased": (
        "Context: the user wants notes.txt set up. Constraints: nothing under /etc may be"
        " modified (the user's rule); CLAUDE.md says to always run make check before calling"
        " a change done, and never to push to main; the spec forbids writing passwords to"
        " notes.txt; the user also said, in German, never to change README.md.\n"
        "What went wrong: both attempts at `git add -A` errored with 'not a git repository';"
        " writing /etc/notes-app.conf was denied by the permission check.",
        dict.fromkeys(AUTO_REAL, KEPT),
    ),
    "generic": (
        "The assistant worked on the notes file and explored the repository setup."
        " Progress was made and the work continues.",
        dict.fromkeys(AUTO_REAL, ABSENT),
    ),
    "unrelated mentions": (
        "notes.txt now exists and holds the first note. The agent looked at"
        " /etc/notes-app.conf and ran git add -A. README.md and docs/spec.md were opened;"
        " the main branch is checked out.",
        {
            **dict.fromkeys(AUTO_REAL, ABSENT),
            ADD_1: PARTIAL,
            ADD_2: PARTIAL,
            WRITE: PARTIAL,
            PASSWORDS: PARTIAL,
        },
    ),
    "one attempt of two": (
        "The user forbade any change to /etc. The first `git add -A` failed: not a git"
        " repository. Then notes.txt was written with echo.",
        {**dict.fromkeys(AUTO_REAL, ABSENT), ETC: KEPT, ADD_1: KEPT, ADD_2: ABSENT},
    ),
}
HAND_AUTO.update(  # written and labelled before the matcher was run on them
    {
        "terse log": (
            "Tried `git add -A` - no repo. Tried again, same. /etc/notes-app.conf: permission"
            " not granted. Keep /etc untouched. No passwords in notes.txt (spec).",
            {
                **dict.fromkeys(AUTO_REAL, ABSENT),
                ETC: KEPT,
                PASSWORDS: KEPT,
                ADD_1: KEPT,
                ADD_2: KEPT,
                WRITE: KEPT,
            },
        ),
        "the failures told as successes": (
            "The user asked to create notes.txt. git add -A succeeded after the repository"
            " was initialised. The agent wrote /etc/notes-app.conf as planned. Passwords are"
            " stored in notes.txt for convenience.",
            dict.fromkeys(AUTO_REAL, ABSENT),
        ),
        "mentions under headings": (
            "Errors encountered:\n- None.\nFiles touched:\n- notes.txt created\n"
            "- /etc/notes-app.conf read for reference\n- ran git add -A to stage",
            {**dict.fromkeys(AUTO_REAL, ABSENT), ADD_1: PARTIAL, ADD_2: PARTIAL, WRITE: PARTIAL},
        ),
    }
)
HAND_MANUAL_BLIND = {  # written and labelled before the matcher was run on them
    "negations": (
        "The user did not correct anything. git status was not run. Nothing was refused."
        " README.md may be edited freely.",
        dict.fromkeys(MANUAL_REAL, ABSENT),
    ),
    "in French": (
        "L'utilisateur a interdit toute modification sous /etc. Ne jamais écrire de mots de"
        " passe dans notes.txt. git add -A a échoué deux fois : pas de dépôt git. Utiliser"
        " ls, pas git.",
        {
            **dict.fromkeys(MANUAL_REAL, ABSENT),
            ETC: KEPT,
            PASSWORDS: KEPT,
            ADD_1: KEPT,
            ADD_2: KEPT,
            LS: KEPT,
            CORRECTED: PARTIAL,
        },
    ),
    "one of two, and half a rule": (
        "`git add -A` failed once; afterwards the user said to use ls.",
        {**dict.fromkeys(MANUAL_REAL, ABSENT), ADD_1: KEPT, LS: PARTIAL, CORRECTED: PARTIAL},
    ),
}
HAND_MANUAL = {
    "everything, in other words": (
        "Setup of notes.txt is complete. Rules: never touch /etc; passwords never go into"
        " notes.txt; do not edit README.md; per CLAUDE.md, run make check before finishing"
        " and never push to main; use ls, not git, in this folder.\n"
        "Failures: git add -A failed twice and git status failed (no git repository); the"
        " write to /etc/notes-app.conf was rejected. The user corrected the agent: no git"
        " here, use ls instead.",
        dict.fromkeys(MANUAL_REAL, KEPT),
    ),
    "rules only": (
        "The user said never to modify files under /etc, and not to touch README.md. The"
        " spec: passwords must never be written to notes.txt. CLAUDE.md: always run make"
        " check before a change is done; never push to the main branch. Use ls, not git.",
        {
            **dict.fromkeys(MANUAL_REAL, ABSENT),
            ETC: KEPT,
            README: KEPT,
            PASSWORDS: KEPT,
            CHECK: KEPT,
            MAIN: KEPT,
            LS: KEPT,
            CORRECTED: PARTIAL,
        },
    ),
}
