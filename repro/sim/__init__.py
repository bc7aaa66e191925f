"""repro.sim: the embedded engine, a simulator of an SGLang DeepSeek-V3.2 server.

It serves SGLang's endpoints and response shapes, plays a scenario's scripted agent that
emits DSML byte for byte, models batching, PD hand-over and HiCache timing, and models the
story's faults as mechanisms with fix switches. Entry point: `python -m repro.sim`.
"""

__all__: list[str] = []
