"""Fixtures the harness tests share."""

from __future__ import annotations

import pytest

from repro.harness.launch import plan as plan_module


@pytest.fixture(scope="module")
def fixed_ports():
    """Ports do not matter to a parser; fixed ones let identical role argvs be checked once."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            plan_module, "free_ports", lambda count, host="": list(range(41000, 41000 + count))
        )
        yield
