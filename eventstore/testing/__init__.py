"""The storage port's contract suite, for tierlog's backends and anyone else's.

One pytest test class per role of ``eventstore.Recorder``; ``RecorderContract`` is all
of them. A backend's test module subclasses the classes of the roles it implements
and provides a fixture named ``recorder`` that yields a fresh, empty recorder of the
backend (and closes it afterwards)::

    import pytest
    from eventstore.testing import EventLogContract, ReplayReadsContract

    class TestMyBackend(EventLogContract, ReplayReadsContract):
        @pytest.fixture
        def recorder(self, tmp_path):
            recorder = MyRecorder(tmp_path / "journal")
            yield recorder
            recorder.close()

tierlog's own SQLite and PostgreSQL tests are such subclasses
(``tests/store/test_recorder.py``). Needs pytest (the ``[test]`` extra).
"""

try:
    import pytest
except ImportError as exc:  # only without pytest
    raise ImportError(
        "eventstore.testing needs pytest: pip install 'tierlog[test]' (or pytest itself)"
    ) from exc

pytest.register_assert_rewrite(
    "eventstore.testing._another",
    "eventstore.testing._audit",
    "eventstore.testing._event_log",
    "eventstore.testing._reads",
    "eventstore.testing._transactions",
    "eventstore.testing._transfer",
)

from eventstore.testing._audit import AuditReadsContract  # noqa: E402
from eventstore.testing._event_log import EventLogContract  # noqa: E402
from eventstore.testing._reads import ReplayReadsContract, SnapshotStoreContract  # noqa: E402
from eventstore.testing._samples import samples  # noqa: E402
from eventstore.testing._transfer import TransferContract  # noqa: E402


class RecorderContract(
    EventLogContract,
    ReplayReadsContract,
    SnapshotStoreContract,
    AuditReadsContract,
    TransferContract,
):
    """Every role: what a backend that serves a whole journal passes."""


__all__ = [
    "AuditReadsContract",
    "EventLogContract",
    "RecorderContract",
    "ReplayReadsContract",
    "SnapshotStoreContract",
    "TransferContract",
    "samples",
]
