"""`aimon bundles list|install|remove`: bundles (an agent, its subagents, its skills)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from aimon_core.bundle import AgentBundle, AgentBundleRegistry, BundleError

bundles_app = typer.Typer(add_completion=False, rich_markup_mode=None,
                          help="List, install and remove bundles of agents and skills.",
                          context_settings={"help_option_names": ["-h", "--help"]})


def _fail(error: BundleError) -> typer.Exit:
    typer.echo(f"aimon bundles: {error}", err=True)
    return typer.Exit(1)


def _describe(bundle: AgentBundle) -> list[str]:
    agent = f"agent {bundle.agent.name}" if bundle.agent else "no agent of its own"
    lines = [f"{bundle.name}  ({bundle.source})  {agent}"]
    if bundle.subagents:
        lines.append("  subagents: " + ", ".join(a.name for a in bundle.subagents))
    if bundle.skills:
        lines.append("  skills: " + ", ".join(s.name for s in bundle.skills))
    lines += [f"  warning: {w}" for w in bundle.warnings]
    return lines


@bundles_app.command("list")
def list_bundles() -> None:
    """List the bundles: the built-in one and those installed."""
    try:
        bundles = AgentBundleRegistry.default().all()
    except BundleError as exc:
        raise _fail(exc) from None
    for bundle in bundles:
        for line in _describe(bundle):
            typer.echo(line)
    typer.echo("Run a bundle's agent with --agent NAME; a user agent carries bundles with "
               "`bundles: [NAME]` in its frontmatter.")


@bundles_app.command("install")
def install(
    source: Annotated[str, typer.Argument(help="a bundle folder, or a Python package with "
                                               "--package")],
    package: Annotated[bool, typer.Option("--package", help="SOURCE is a Python package")]
    = False,
    name: Annotated[str | None, typer.Option(help="install under this name")] = None,
) -> None:
    """Install a bundle from a folder (copied) or a Python package (recorded)."""
    registry = AgentBundleRegistry.default()
    try:
        bundle = registry.install_package(source, name) if package else \
            registry.install_folder(Path(source), name)
    except BundleError as exc:
        raise _fail(exc) from None
    typer.echo("Installed " + "\n".join(_describe(bundle)))


@bundles_app.command("remove")
def remove(name: Annotated[str, typer.Argument(help="the bundle's name")]) -> None:
    """Remove an installed bundle (the built-in one stays)."""
    try:
        removed = AgentBundleRegistry.default().remove(name)
    except BundleError as exc:
        raise _fail(exc) from None
    if not removed:
        raise _fail(BundleError(name, "not installed"))
    typer.echo(f"Removed {name}.")
