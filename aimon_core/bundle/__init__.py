"""Bundles: an agent, its subagents and its skills as one value, installed and carried."""

from aimon_core.bundle._bundle import (
    BUILTIN,
    AgentBundle,
    AgentBundleRegistry,
    BundleError,
    carried_bundles,
    load_bundle,
    package_folder,
    with_bundles,
)

__all__ = [
    "BUILTIN",
    "AgentBundle",
    "AgentBundleRegistry",
    "BundleError",
    "carried_bundles",
    "load_bundle",
    "package_folder",
    "with_bundles",
]
