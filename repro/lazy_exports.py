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
    """The package's `__getattr__`: `homes` maps each public name to the module defining it
    (a module of the package, or an absolute `repro.` module name).

    A public name may not be a module's name too: once that module is imported, Python sets
    the package's attribute of that name to the module, and the name would then give the
    module or the function depending on what was imported first."""
    clashes = sorted(set(homes) & set(homes.values()))
    if clashes:
        raise ImportError(f"{package}: public names that are also module names: {clashes}")

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = home if home.startswith("repro.") else f"{package}.{home}"  # absolute, or ours
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # looked up once
        return value

    return __getattr__
