"""Memory you review: observations proposed by the model or the user, used once accepted."""

from aimon_core.memory._book import (
    PROMPT_CAP,
    MemoryBook,
    default_store,
    owner_for,
    rank,
)
from aimon_core.memory._store import (
    FileObservationStore,
    MemoryOwner,
    MemoryScope,
    MemorySource,
    MemoryStatus,
    Observation,
    ObservationStore,
)
from aimon_core.memory._tools import MEMORY_TOOL_NAMES, MemoryProvider, memory_tools

__all__ = [
    "MEMORY_TOOL_NAMES",
    "PROMPT_CAP",
    "FileObservationStore",
    "MemoryBook",
    "MemoryOwner",
    "MemoryProvider",
    "MemoryScope",
    "MemorySource",
    "MemoryStatus",
    "Observation",
    "ObservationStore",
    "default_store",
    "memory_tools",
    "owner_for",
    "rank",
]
