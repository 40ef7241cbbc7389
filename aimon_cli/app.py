"""The `aimon` entry point. Kept tiny: `aimon --version` must not import Typer or any SDK."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """Run the aimon command line."""
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-v"], ["-V"]):
        from aimon_core import __version__

        sys.stdout.write(f"aimon {__version__}\n")
        return
    from aimon_cli._commands import run

    run(args)


if __name__ == "__main__":
    main()
