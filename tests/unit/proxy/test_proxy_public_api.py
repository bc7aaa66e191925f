"""The names other parts may import from repro.proxy, pinned."""

from __future__ import annotations

import repro.proxy


def test_public_surface_is_pinned():
    assert sorted(repro.proxy.__all__) == [
        "Injection",
        "InjectionMatch",
        "InjectionRule",
        "Injector",
        "ProxySpec",
        "RuleKind",
        "Target",
        "match_run",
        "read_injection_log",
        "serve",
    ]
    assert all(hasattr(repro.proxy, name) for name in repro.proxy.__all__)
