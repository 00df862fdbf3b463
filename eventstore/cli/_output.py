"""How the CLI shows things: tables, state summaries, diffs, progress."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from eventstore._location import redact_text
from eventstore._ops import AuditReport, EvictedObligation, Imported, Review
from eventstore._store import NoteRow, QueryResult, Recorded
from eventstore.claude_code import IngestResult
from eventstore.cli._terminal import json_safe, printable
from reducers import SessionState

if TYPE_CHECKING:
    from eventstore import codex


def rows_of(result: QueryResult) -> list[dict[str, Any]]:
    """A query result as one dict a row."""
    return [dict(zip(result.columns, row, strict=True)) for row in result.rows]


@attrs.frozen(kw_only=True)
class Caps:
    """How much of a query's result is printed: rows and bytes (0: no cap)."""

    rows: int = 0
    bytes: int = 0


class _Capped:
    """Lines counted against ``Caps`` as they are printed; ``stopped`` says which cap."""

    def __init__(self, caps: Caps) -> None:
        self.caps, self.rows, self.bytes = caps, 0, 0
        self.stopped: str | None = None

    def fits(self, line: str) -> bool:
        """Whether one more row, printed as ``line``, stays within the caps."""
        size = len(line.encode("utf-8", "surrogatepass")) + 1
        if self.caps.rows and self.rows >= self.caps.rows:
            self.stopped = f"stopped after {self.rows:,} rows (--max-rows): the query has more"
        elif self.caps.bytes and self.bytes + size > self.caps.bytes:
            self.stopped = (
                f"stopped after {self.rows:,} rows, {self.bytes:,} bytes (--max-bytes):"
                " the query has more"
            )
        else:
            self.rows, self.bytes = self.rows + 1, self.bytes + size
        return self.stopped is None


def stream(
    result: QueryResult, as_json: bool, *, buffer: int = 1000, caps: Caps = Caps()
) -> str | None:
    """Print rows as they come: JSON, or a table aligned on the first ``buffer`` rows;
    at a cap, stop (the JSON array closed) and return why, else ``None``."""
    names = result.columns
    records = ({n: _cell(v) for n, v in zip(names, row, strict=True)} for row in result.rows)
    capped = _Capped(caps)
    if as_json:
        opener = "["
        for record in records:
            line = json_safe(json.dumps(record, ensure_ascii=False))
            if not capped.fits(line):
                break
            print(opener, line)
            opener = ","
        print("[]" if opener == "[" else "]")
        return capped.stopped
    cut = ([_short(v) for v in record.values()] for record in records)
    head = list(itertools.islice(cut, buffer))  # cells cut: a wide row is not held whole
    if not head:
        print("(no rows)")
        return None
    lines, widths = _cells_table([_short(n) for n in names], head)
    print("\n".join(lines[:2]))
    rest = (_line(cells, widths) for cells in cut)
    for line in itertools.chain(lines[2:], rest):
        if not capped.fits(line):
            break
        print(line)
    return capped.stopped


def _line(cells: list[str], widths: list[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))


def _cell(value: Any) -> Any:
    return f"<{len(value)} bytes>" if isinstance(value, bytes) else value


def emit(rows: list[dict[str, Any]], as_json: bool) -> None:
    """Print rows as JSON or as an aligned table."""
    rows = [{k: _cell(v) for k, v in row.items()} for row in rows]
    if as_json:
        print(json_safe(json.dumps(rows, indent=2, ensure_ascii=False)))
        return
    print("\n".join(table(rows)) if rows else "(no rows)")


def table(rows: list[dict[str, Any]]) -> list[str]:
    """An aligned text table; long cells are cut at 60 characters."""
    return _table(rows)[0]


def _table(rows: list[dict[str, Any]]) -> tuple[list[str], list[int]]:
    names = list(rows[0])
    return _cells_table([_short(n) for n in names], [[_short(r[n]) for n in names] for r in rows])


def _cells_table(header: list[str], cells: list[list[str]]) -> tuple[list[str], list[int]]:
    """Cells already cut (``_short``), aligned under their header."""
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    body = [_line(r, widths) for r in cells]
    return [_line(header, widths), "  ".join("-" * w for w in widths), *body], widths


_CELL_SOURCE = 65_536  # the characters of a value a table cell is made from


def _short(value: Any) -> str:
    """A cell: its text safe for a terminal (``printable``), cut at 60 characters (a
    long text is cut to ``_CELL_SOURCE`` first, its URLs' passwords hidden before)."""
    text = "" if value is None else printable(_start(str(value)), cell=True)
    return text if len(text) <= 60 else text[:57] + "..."


def _start(text: str) -> str:
    """What a cell is made from: a long text's start, its passwords hidden first."""
    return text if len(text) <= _CELL_SOURCE else redact_text(text)[:_CELL_SOURCE]


def log_line(row: Recorded, as_json: bool) -> str:
    """One event as a line: version, type, time and its payload."""
    if as_json:
        return json.dumps(
            {
                "version": row.version,
                "type": row.type,
                "recorded_at": row.recorded_at,
                "payload": json.loads(row.payload),
            }
        )
    return f"{row.version:>6}  {row.type:<18} {row.recorded_at}  {_short(row.payload)}"


def describe_state(state: SessionState) -> str:
    """A state as a person reads it."""
    cfg = state.config
    lines = [
        f"version      {state.version}",
        f"sha256       {state.sha256}",
        f"unit         {state.unit}"
        + (f" (floor {cfg.floor_span} {cfg.floor_unit})" if cfg else ""),
        f"turns        {state.turns} ({state.tokens_total:,} tokens)",
        f"occupancy    {state.occupancy:,} tokens"
        + (f" of {cfg.window_tokens:,} (trigger {cfg.trigger_tokens:,})" if cfg else ""),
        f"depth        L{state.depth}, tail starts at {state.tail_start}",
        f"truncated    {list(state.truncated)}",
        f"spills       {len(state.spills)}",
        f"open calls   {sorted(state.open_calls)}",
        f"constraints  {sorted(state.constraints)}",
        f"negatives    {sorted(f'{k}={d.disposition}' for k, d in state.dispositions.items())}",
    ]
    if state.withdrawn:
        lines.append(f"withdrawn    turns {list(state.withdrawn)} (retracted or cleared)")
    for n in sorted(state.nodes.values(), key=lambda n: n.version):
        status = "live" if n.live else f"replaced by {n.replaced_by}"
        if not n.live and n.replaced_by is None:
            status = "cleared"
        lines.append(
            f"node {n.node_id:<7} L{n.tier} [{n.covers_lo}, {n.covers_hi}) {status}: "
            f"{_short(n.summary)}"
        )
    for m in sorted(state.markers.values(), key=lambda m: m.version):
        status = "valid" if m.valid else f"INVALID ({m.invalidated_rule})"
        lines.append(f"marker {m.marker_id:<5} on {m.node_id} depth L{m.tier_depth}: {status}")
    return "\n".join(lines)


def diff(a: Any, b: Any, path: str = "") -> list[dict[str, Any]]:
    """Leaf-level changes between two JSON values."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(a.keys() | b.keys()):
            sub = f"{path}.{key}" if path else str(key)
            if key not in a:
                out.append({"path": sub, "change": "added", "after": b[key]})
            elif key not in b:
                out.append({"path": sub, "change": "removed", "before": a[key]})
            else:
                out += diff(a[key], b[key], sub)
        return out
    return [] if a == b else [{"path": path, "change": "changed", "before": a, "after": b}]


def diff_lines(changes: Iterable[dict[str, Any]]) -> list[str]:
    """Diff entries as ``+``/``-``/``~`` lines."""
    marks = {"added": "+", "removed": "-", "changed": "~"}
    lines = []
    for c in changes:
        before = f" {_short(json.dumps(c['before']))} ->" if "before" in c else ""
        after = f" {_short(json.dumps(c['after']))}" if "after" in c else ""
        lines.append(f"{marks[c['change']]} {c['path']}:{before}{after}")
    return lines


class Progress:
    """A one-line progress display on a terminal, erased when done; silent when piped."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.active = sys.stderr.isatty()
        self.width = 0

    def __call__(self, item: object) -> None:
        if self.active:
            text = f"\r{self.label} {item} ..."
            print(text, end="", file=sys.stderr, flush=True)
            self.width = max(self.width, len(text))

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_: object) -> None:
        if self.active and self.width:
            print("\r" + " " * self.width + "\r", end="", file=sys.stderr, flush=True)


def audit_text(report: AuditReport) -> str:
    """The audit report for a person."""
    lines = []
    for session_id, audit in report.sessions.items():
        broken = f": HASH CHAIN BREAKS at {audit.chain} (tierlog verify)" if audit.chain else ""
        lines.append(f"== {session_id}{broken}{_chain_head(audit.chain_notes)}")
        for field in attrs.fields(type(audit)):
            rows = getattr(audit, field.name)
            if rows and field.name != "chain":
                lines.append(f"  {field.name.replace('_', ' ')} ({len(rows)}):")
                lines += [f"    {_audit_row(row)}" for row in rows]
    totals = ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in report.totals.items())
    lines.append(f"total: {totals}")
    return "\n".join(lines)


def _chain_head(notes: Iterable[NoteRow]) -> str:
    """What a session's first audit line says of its source's chain (nothing if whole)."""
    lost = [n.text for n in notes if n.kind != "chain_fallback"]
    guessed = [n.text for n in notes if n.kind == "chain_fallback"]
    parts = [f"CHAIN NOT READ WHOLE: {'; '.join(lost)}"] if lost else []
    parts += [f"chain joined by a guess: {'; '.join(guessed)}"] if guessed else []
    return ": " + " | ".join(parts) if parts else ""


def _audit_row(row: Any) -> str:
    if isinstance(row, Review):
        return "\n    ".join(review_lines(row))
    if isinstance(row, NoteRow):
        where = "" if row.line is None else f" line {row.line}"
        return f"v{row.version} {row.kind}{where}: {row.text}"
    if isinstance(row, EvictedObligation):
        carried = ", ".join(row.carried_by) or "NOBODY"
        told = "" if row.retold_at is None else f", re-told at turn {row.retold_at}"
        return f"{row.kind} {row.key!r} at {row.position}: carried by {carried}{told}"
    fields = attrs.asdict(row)
    if "violations" in fields:
        rules = "; ".join(v["message"] for v in json.loads(fields["violations"]))
        subject = fields.get("node_id") or fields.get("marker_id")
        return f"v{row.version} {subject} [{fields['rules']}]: {rules}"
    return f"v{row.version} " + " ".join(f"{k}={v}" for k, v in fields.items() if k != "version")


def import_lines(r: Imported, untrailed: bool) -> str:
    """What ``tierlog import`` did with one session of the file."""
    what = "unchanged (already imported)" if r.unchanged else f"{r.events} events"
    note = f", {r.redecided} command(s) decided differently now" if r.redecided else ""
    lines = [f"{r.source_id} -> {r.session_id}: {what}{note}"]
    lines += [f"  skipped (impossible after re-decision): {skip}" for skip in r.skipped]
    lines += [f"  carried finding (recorded as a note): {f}" for f in r.findings]
    if untrailed:
        lines.append("  read without a trailer (--no-trailer): a file cut short looks the same")
    return "\n".join(lines)


# -- ingest and compaction reviews -------------------------------------------------------
def ingest_text(r: IngestResult) -> str:
    """What ``tierlog ingest`` did with one transcript."""
    return _ingested(
        r,
        "",
        f"  {_n(r.turns, 'turn')}, {_n(r.calls, 'call')} ({r.failed} failed, {r.rejected}"
        f" rejected), {_n(r.interruptions, 'interruption')}, {_n(r.constraints, 'rule')} found,"
        f" {_n(r.queued, 'queued text')}, {_n(len(r.compactions), 'compaction')}",
    )


def rollout_text(r: codex.IngestResult) -> str:
    """What ``tierlog ingest`` did with one Codex rollout."""
    return _ingested(
        r,
        " (Codex rollout)",
        f"  {_n(r.turns, 'turn')}, {_n(r.calls, 'call')} ({r.failed} failed),"
        f" {r.interruptions} interrupted, {_n(r.constraints, 'rule')} found,"
        f" {_n(len(r.compactions), 'compaction')}, {_n(len(r.notes), 'note')}",
    )


def _ingested(r: IngestResult | codex.IngestResult, kind: str, counts: str) -> str:
    """An ingest's lines: what became of the session, ``counts``, each compaction's
    review and what it did not evidence."""
    done = "unchanged (already ingested)" if r.unchanged else "ingested"
    done += f", {_n(r.events, 'event')}"
    if r.appended_after is not None:
        done = f"grown, {_n(r.events - r.appended_after, 'event')} appended (now {r.events:,})"
    lines = [f"{r.session_id}: {done} from {r.path}{kind}", counts]
    for review in r.compactions:
        lines.append("  " + review.headline())
        missing = [f"{o.key} ({o.detail})" for o in review.not_evidenced]
        if missing:
            lines.append(f"    not evidenced: {'; '.join(missing)} (tierlog audit shows where)")
    return "\n".join(lines)


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def review_lines(r: Review) -> list[str]:
    """A review: its headline, then one line per obligation live at the compaction."""
    return [r.headline(), *(f"  {x.verdict:13} {x.subject}: {x.quote}" for x in r.lines())]
