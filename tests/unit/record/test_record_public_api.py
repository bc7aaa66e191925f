"""The names other parts may import from repro.record and repro.traces, pinned."""

from __future__ import annotations

import repro.record
import repro.traces


def test_public_surfaces_are_pinned():
    assert repro.record.__all__ == ["RecordSpec", "serve"]
    assert repro.traces.__all__ == [
        "Answer",
        "FORMAT_VERSION",
        "Message",
        "Problem",
        "Redaction",
        "SOURCES",
        "SessionGrouper",
        "Trace",
        "TraceSession",
        "TraceTurn",
        "TraceWriter",
        "TurnLines",
        "check_trace",
        "import_trace",
        "read_trace",
        "request_of",
        "trace_schema",
    ]
    for package in (repro.record, repro.traces):
        assert all(hasattr(package, name) for name in package.__all__)
