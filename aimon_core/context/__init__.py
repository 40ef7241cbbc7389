"""Context providers: what the model is told about its surroundings, refreshed at each turn."""

from aimon_core.context._providers import (
    CallableProvider,
    ContextProvider,
    DateProvider,
    GitProvider,
    InstructionsProvider,
    JobsProvider,
    ListsJobs,
)
from aimon_core.context._set import BLOCK_CAP, ContextSet, default_providers

__all__ = [
    "BLOCK_CAP",
    "CallableProvider",
    "ContextProvider",
    "ContextSet",
    "DateProvider",
    "GitProvider",
    "InstructionsProvider",
    "JobsProvider",
    "ListsJobs",
    "default_providers",
]
