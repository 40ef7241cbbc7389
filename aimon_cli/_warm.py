"""Warm print mode: with the service running, `aimon -p` hands it the turn.

The service has the SDK, the runtime and the settings loaded already; this process reads the
prompt, sends it with the command line's options, and copies what the service's print mode
writes to stdout and stderr (the same code as the cold path writes it, so the output is the
same). It imports the standard library, the wire codec and the socket client only.

It steps aside, and the turn runs here as before, when no service runs, when
`AIMON_NO_SERVICE=1`, when the service was started with other model variables (provider
keys, base URLs, AIMON_*), or when it does not run print mode.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from aimon_cli._args import RootArgs

EXIT_OUTPUT_CLOSED = 141  # as `aimon_cli._print`: SIGPIPE's status


class _OutputClosedError(Exception):
    """Our stdout's reader went away."""


def warm_print(args: RootArgs) -> tuple[int | None, RootArgs]:
    """Run the print turn in the service if one runs; return its status (None: run it here)
    and `args` with the prompt as read (stdin is read once, here)."""
    if os.environ.get("AIMON_NO_SERVICE") or args.pick:
        return None, args
    from aimon_core.service import ServicePaths

    paths = ServicePaths.default()
    if not paths.socket.exists():  # the usual case with no service: one stat
        return None, args
    from aimon_cli._stdin import read_prompt

    text = read_prompt(args.prompt, sys.stdin or io.StringIO())
    args = dataclasses.replace(args, prompt=text or args.prompt)
    if not text:
        return None, args  # the cold path says what is missing
    from aimon_core.service import RemoteError, ServiceClient, ServiceUnavailableError

    try:
        client = ServiceClient.connect(paths, client_name="aimon -p")
    except (ServiceUnavailableError, RemoteError, OSError):
        return None, args
    with client:
        if not client.same_environment or not client.hello.get("print"):
            return None, args
        return _run(client, args), args


def _run(client: Any, args: RootArgs) -> int:
    from aimon_core.service import RemoteError, ServiceUnavailableError

    params = {"cwd": str(Path.cwd()), "args": dataclasses.asdict(args)}
    try:
        result = client.call("print/run", params, _copy_output)
    except _OutputClosedError:
        _to_devnull(sys.stdout)
        return EXIT_OUTPUT_CLOSED  # closing the connection stops the turn in the service
    except KeyboardInterrupt:
        sys.stderr.write("aimon: interrupted\n")
        return 130
    except ServiceUnavailableError as exc:
        sys.stderr.write(f"aimon: the service stopped during the turn ({exc}); the session "
                         "is stored: continue it with aimon -p -c\n")
        return 1
    except RemoteError as exc:
        sys.stderr.write(f"aimon: {exc}\n")
        return 1
    return int(result.get("exit_code", 1)) if isinstance(result, dict) else 1


def _copy_output(method: str, params: Mapping[str, Any]) -> None:
    if method != "print/output":
        return
    stream: TextIO = sys.stderr if params.get("stream") == "stderr" else sys.stdout
    try:
        stream.write(str(params.get("text", "")))
        stream.flush()
    except BrokenPipeError:
        if stream is sys.stdout:
            raise _OutputClosedError from None
        _to_devnull(stream)


def _to_devnull(stream: TextIO) -> None:
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)
