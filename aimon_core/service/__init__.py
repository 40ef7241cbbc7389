"""The service: `aimon serve`, one process per user hosting sessions for its clients.

Clients (the command line's `--bg`, `ps`, `attach`, `send`, `stop`, a warm `aimon -p`) speak
the service protocol (docs/PROTOCOL.md) over a unix socket in aimon's data folder. The service
is an application scope: it owns the runtimes, the hosted sessions and its stores (a session
inbox, idempotency keys, a signal bus), each a small protocol with an embedded backend.
"""

from typing import TYPE_CHECKING

from aimon_core._lazy import lazy_getattr

if TYPE_CHECKING:
    from aimon_core.service._client import (
        AsyncServiceClient,
        ServiceClient,
        ServiceUnavailableError,
    )
    from aimon_core.service._hosted import HostedOptions, HostedSession
    from aimon_core.service._paths import ServicePathError, ServicePaths, environment_fingerprint
    from aimon_core.service._rewake import REWAKE_MARK, Rewake, Rewakes
    from aimon_core.service._server import (
        PrintRunner,
        Service,
        ServiceOptions,
        ServiceRunningError,
        ServiceStores,
        peer_credentials,
    )
    from aimon_core.service._settings import ServiceSettings, service_settings
    from aimon_core.service._stores import (
        HOLD_SECONDS,
        IdempotencyStore,
        InboxItem,
        LocalSignalBus,
        MemoryIdempotencyStore,
        MemoryInbox,
        SessionInbox,
        Signal,
        SignalBus,
        SignalHandler,
        SQLiteIdempotencyStore,
        SQLiteInbox,
    )
    from aimon_core.service._values import from_wire, to_wire
    from aimon_core.service._wire import PROTOCOL_VERSION, ErrorCode, ProtocolError, RemoteError

# Every name loads on first use: a warm `aimon -p` imports the client and the wire only.
_LAZY = {
    "AsyncServiceClient": "_client",
    "ServiceClient": "_client",
    "ServiceUnavailableError": "_client",
    "HostedOptions": "_hosted",
    "HostedSession": "_hosted",
    "ServicePathError": "_paths",
    "ServicePaths": "_paths",
    "environment_fingerprint": "_paths",
    "REWAKE_MARK": "_rewake",
    "Rewake": "_rewake",
    "Rewakes": "_rewake",
    "PrintRunner": "_server",
    "Service": "_server",
    "ServiceOptions": "_server",
    "ServiceRunningError": "_server",
    "ServiceStores": "_server",
    "peer_credentials": "_server",
    "ServiceSettings": "_settings",
    "service_settings": "_settings",
    "HOLD_SECONDS": "_stores",
    "IdempotencyStore": "_stores",
    "InboxItem": "_stores",
    "LocalSignalBus": "_stores",
    "MemoryIdempotencyStore": "_stores",
    "MemoryInbox": "_stores",
    "SessionInbox": "_stores",
    "Signal": "_stores",
    "SignalBus": "_stores",
    "SignalHandler": "_stores",
    "SQLiteIdempotencyStore": "_stores",
    "SQLiteInbox": "_stores",
    "PROTOCOL_VERSION": "_wire",
    "ErrorCode": "_wire",
    "ProtocolError": "_wire",
    "RemoteError": "_wire",
    "from_wire": "_values",
    "to_wire": "_values",
}

__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "HOLD_SECONDS",
    "PROTOCOL_VERSION",
    "REWAKE_MARK",
    "AsyncServiceClient",
    "ErrorCode",
    "HostedOptions",
    "HostedSession",
    "IdempotencyStore",
    "InboxItem",
    "LocalSignalBus",
    "MemoryIdempotencyStore",
    "MemoryInbox",
    "PrintRunner",
    "ProtocolError",
    "RemoteError",
    "Rewake",
    "Rewakes",
    "SQLiteIdempotencyStore",
    "SQLiteInbox",
    "Service",
    "ServiceClient",
    "ServiceOptions",
    "ServicePathError",
    "ServicePaths",
    "ServiceRunningError",
    "ServiceSettings",
    "ServiceStores",
    "ServiceUnavailableError",
    "SessionInbox",
    "Signal",
    "SignalBus",
    "SignalHandler",
    "environment_fingerprint",
    "from_wire",
    "peer_credentials",
    "service_settings",
    "to_wire",
]
