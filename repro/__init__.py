"""repro: reproduce and bisect tool-call corruption in LLM serving under concurrency."""

__version__ = "0.1.0"
__all__ = ["__version__"]
