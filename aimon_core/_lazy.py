"""Package attributes that load their submodule on first use (PEP 562).

A package lists which submodule defines each public name; `import aimon_core.llm` then costs
nothing until a name is used, which keeps the SDKs and the codecs off the start-up path.
"""

from __future__ import annotations

import sys

# `aimon --version` imports this module: it loads neither `typing` nor `importlib` (~2 ms of
# that command), and mypy reads the block below all the same.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


def lazy_getattr(package: str, submodule_of: Mapping[str, str]) -> Callable[[str], Any]:
    """Return a module `__getattr__` for `package` that imports `submodule_of[name]` and
    caches the value on the package."""

    def load(name: str) -> Any:
        import importlib

        submodule = submodule_of.get(name)
        if submodule is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{submodule}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return load
