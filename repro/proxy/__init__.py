"""The positive control: a proxy in front of any OpenAI-compatible engine that corrupts SSE
streams on purpose, under a rule, and logs every injection (docs/proxy.md).

Other parts import what is listed in `__all__`, from here; names load on first use (the
server's web stack only when a proxy is served).
"""

from repro.lazy_exports import lazy_exports

# Each public name and the module that defines it.
_HOMES = {
    "InjectionMatch": "injection_log",
    "match_run": "injection_log",
    "read_injection_log": "injection_log",
    "Injection": "injector",
    "InjectionRule": "injector",
    "Injector": "injector",
    "RuleKind": "injector",
    "Target": "injector",
    "serve": "server",
    "ProxySpec": "spec",
}

__all__ = sorted(_HOMES)

__getattr__ = lazy_exports(__name__, _HOMES, globals())
