"""aimon_core: the library underneath the aimon coding agent."""

__version__ = "0.1.0"
__all__ = ["__version__"]
