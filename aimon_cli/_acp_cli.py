"""`aimon acp`: the ACP agent on stdin and stdout, in an application of its own."""

from __future__ import annotations

import asyncio
import logging
import sys


def run_acp() -> int:
    """Serve ACP until the editor closes the connection; return the exit status."""
    from aimon_cli import _children
    from aimon_cli._store import default_store
    from aimon_core.acp import run_acp as serve_acp
    from aimon_core.runtime import Application, RuntimeFlags

    # stdout carries the protocol: logs and notices go to stderr only.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    _children.use_pidfd()

    async def main() -> None:
        async with Application(default_store()) as app:
            await serve_acp(app, RuntimeFlags())

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        return 130
    return 0
