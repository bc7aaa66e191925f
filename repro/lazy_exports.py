"""A package's public names, each loaded from its module on first use (PEP 562).

A part's `__init__` lists what other parts may import; loading each name only when asked
keeps `repro --help` fast and lets parts import each other's surfaces without cycles.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, homes: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """The package's `__getattr__`: `homes` maps each public name to the module defining it."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value  # looked up once
        return value

    return __getattr__
