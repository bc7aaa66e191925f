"""`repro run` with the consistency invariants switched off: the control that prices them in
bench/peer_cost.py (client `repro-no-invariants`). Everything else is `repro run` as shipped.

    python bench/peers/repro_without_invariants.py run --url ... (any `repro run` options)
"""

from __future__ import annotations

from repro.entry import main
from repro.harness.load.loadgen import LoadGenerator
from repro.harness.load.turn_checks import TurnConsistency


def _unchecked(self: LoadGenerator, *_: object) -> TurnConsistency:
    return TurnConsistency()


LoadGenerator._consistency = _unchecked  # type: ignore[method-assign]

if __name__ == "__main__":
    main()
