"""One connection's transactions, the same for every backend.

The outermost block is the transaction: it commits when the block ends without an
error and rolls back otherwise. A nested block is a savepoint (like sqlite-utils'
``atomic``): an error rolls back that block only, and nothing commits before the
outermost one. Steps registered with ``on_rollback`` (a spill file to remove) run,
last first, when their block rolls back, after the outermost block's ROLLBACK and
before a savepoint's; never after a commit. A failed commit rolls back and runs them.
A step that fails stops neither the others nor the rollback; its error is raised
once every step has run.

The heads read or written under the open transaction's lock are *held*: they stay
the session's head until the transaction ends (nobody else can write the session),
so the append path reads each head once per transaction. A savepoint that rolls
back forgets every held head (a head written, or a lock taken, inside it may be
gone with it); so does the end of the transaction.

What the database is told is a backend's ``Statements``: when is this module's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from eventstore._store._rows import Head


class Statements(Protocol):
    """The statements a backend runs for a transaction (``Transactions`` says when)."""

    def begin(self) -> None:
        """Open the outermost transaction (a backend may send it with the first
        statement); ConcurrencyError if the database is too busy to open one."""

    def commit(self) -> None:
        """Commit it; if that fails, roll back and raise JournalError (nothing written)."""

    def rollback(self) -> None:
        """Roll it back, if the database still has it open."""

    def savepoint(self, name: str) -> None:
        """Open a nested block; JournalError if the database already rolled the
        transaction back by itself (after a full disk, say)."""

    def release(self, name: str) -> None:
        """Keep a nested block's writes in the block around it."""

    def rollback_to(self, name: str) -> None:
        """Undo a nested block's writes and close it."""


class Transactions:
    """The transactions of one connection: depth, undo steps and held heads."""

    __slots__ = ("_block", "depth", "held", "statements", "undo")

    def __init__(self, statements: Statements) -> None:
        self.statements = statements
        self.depth = 0  # open blocks: 0 outside a transaction
        self.undo: list[list[Callable[[], None]]] = []  # per open block
        self.held: dict[str, Head] = {}
        self._block = Block(self)

    def block(self) -> Block:
        """A transaction, or a savepoint inside the open one (one context manager
        serves both: it holds nothing but this object, and the depth says which)."""
        return self._block

    def on_rollback(self, undo: Callable[[], None]) -> None:
        """Run ``undo`` if the innermost open block rolls back; outside one, nothing."""
        if self.undo:
            self.undo[-1].append(undo)


class Block:
    """The context manager of a connection's transactions and savepoints. It keeps no
    state of its own (a block entered at depth ``d`` is the savepoint ``tierlog_d``,
    or the transaction at depth 0), so one serves every block, nested ones included."""

    __slots__ = ("_tx",)

    def __init__(self, tx: Transactions) -> None:
        self._tx = tx

    def __enter__(self) -> None:
        tx = self._tx
        if tx.depth:
            tx.statements.savepoint(f"tierlog_{tx.depth}")
        else:
            tx.statements.begin()
            tx.held.clear()
        tx.undo.append([])
        tx.depth += 1

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        tx = self._tx
        tx.depth -= 1
        undo = tx.undo.pop()
        if tx.depth:
            self._end_savepoint(f"tierlog_{tx.depth}", undo, failed=exc_type is not None)
            return
        tx.held.clear()
        try:
            if exc_type is None:
                tx.statements.commit()
                undo = []
            else:
                tx.statements.rollback()
        finally:
            if undo:
                _run(undo)

    def _end_savepoint(self, name: str, undo: list[Callable[[], None]], *, failed: bool) -> None:
        tx = self._tx
        if not failed:
            tx.undo[-1] += undo
            tx.statements.release(name)
            return
        tx.held.clear()
        try:
            _run(undo)
        finally:  # an undo step that fails must not leave the block's writes standing
            tx.statements.rollback_to(name)


def _run(undo: list[Callable[[], None]]) -> None:
    """Run every step, last first; a step that fails does not stop the others, and the
    first failure is raised once all have run."""
    failed: BaseException | None = None
    for step in reversed(undo):
        try:
            step()
        except BaseException as exc:  # re-raised below, once the rest have run
            failed = failed or exc
    if failed is not None:
        raise failed
