"""`aimon serve`: run the service in this process, with the command line's print mode in it."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from aimon_core.runtime import Application

log = logging.getLogger("aimon.serve")


def _root_args(raw: object) -> Any:
    """Return the RootArgs a client sent (only its known fields; lists made tuples)."""
    from aimon_cli._args import RootArgs

    if not isinstance(raw, Mapping):
        raise ValueError("args must be an object")
    known = {spec.name for spec in dataclasses.fields(RootArgs)}
    values: dict[str, Any] = {key: tuple(value) if isinstance(value, list) else value
              for key, value in raw.items() if key in known}
    return RootArgs(**values)


async def run_print_request(params: Mapping[str, Any], app: Application, out: TextIO,
                            err: TextIO) -> int:
    """Run a client's `aimon -p` here: the same turn and output as the command line's own."""
    from aimon_cli._commands import CommandExitError, launch_of, print_turn
    from aimon_cli._print import PrintJob
    from aimon_core.runtime import RuntimeSetupError
    from aimon_core.session import SessionError

    try:
        args = _root_args(params.get("args"))
        launch = launch_of(args, Path(str(params["cwd"])))
        if launch.pick or not args.prompt:
            raise CommandExitError(2, "no prompt")
        job = PrintJob(prompt=args.prompt, output_format=args.output_format,
                       max_iterations=args.max_iterations)
        return await print_turn(app, launch, job, out, err)
    except CommandExitError as exc:
        if exc.message:
            err.write(f"aimon: {exc.message}\n")
        return exc.code
    except RuntimeSetupError as exc:
        err.write(f"aimon: {exc}\n")
        return 2
    except (SessionError, ValueError) as exc:
        err.write(f"aimon: {exc}\n")
        return 1


def serve(*, idle_minutes: float | None, tcp: tuple[str, int] | None,
          ready_fd: int | None) -> int:
    """Run the service until it is stopped or idle; return the exit status."""
    from aimon_cli import _children
    from aimon_core.service import (
        Service,
        ServiceOptions,
        ServicePathError,
        ServicePaths,
        ServiceRunningError,
        service_settings,
    )

    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings, problems = service_settings()
    for problem in problems:
        log.warning("%s", problem)
    if idle_minutes is not None:
        settings = dataclasses.replace(settings, idle_seconds=idle_minutes * 60)

    def ready() -> None:
        log.info("aimon serve (pid %d) ready", os.getpid())
        if ready_fd is not None:
            try:
                os.write(ready_fd, b"ready\n")
            finally:
                os.close(ready_fd)

    options = ServiceOptions(paths=ServicePaths.default(), settings=settings, tcp=tcp,
                             print_runner=run_print_request, on_ready=ready)
    _children.use_pidfd()

    from aimon_cli._store import chosen_backend, default_store, store_is_chosen
    from aimon_core.runtime import Application
    from aimon_core.stores import StoreError

    try:
        store = default_store()
    except StoreError as exc:
        sys.stderr.write(f"aimon: {exc}\n")
        return 1
    # A networked store (--store, AIMON_STORE_URL, store.url) also holds the service's inbox,
    # keys and signals, so services on several machines reach each other's sessions.
    service_stores = chosen_backend().service if store_is_chosen() else None

    async def main() -> None:
        service = Service(options, app=Application(store), stores=service_stores)
        loop = asyncio.get_running_loop()
        for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(number, service.stop)
        await service.run()

    try:
        asyncio.run(main())
    except ServiceRunningError as exc:
        sys.stderr.write(f"aimon: {exc}\n")
        return 3
    except ServicePathError as exc:
        sys.stderr.write(f"aimon: {exc}\n")
        return 2
    finally:
        if store_is_chosen():  # its sessions are released: stop renewing, close connections
            chosen_backend().close()
    return 0

