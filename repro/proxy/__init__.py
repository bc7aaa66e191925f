"""The positive control: a proxy in front of any OpenAI-compatible engine that corrupts SSE
streams on purpose, under a rule, and logs every injection (docs/proxy.md)."""

from repro.proxy.injection_log import InjectionMatch, match_run, read_injection_log
from repro.proxy.injector import Injection, InjectionRule, Injector, RuleKind, Target
from repro.proxy.server import serve
from repro.proxy.spec import ProxySpec

__all__ = [
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
