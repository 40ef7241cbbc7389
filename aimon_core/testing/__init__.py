"""Test doubles that let tests run aimon and the real provider SDKs without a network."""

from ._loopback import (
    CutStream,
    Fault,
    LoopbackModelServer,
    RecordedRequest,
    Reply,
    ResetConnection,
    Responder,
    ScriptedToolCall,
    StallStream,
    Step,
    StreamError,
)
from ._loopback_script import loads_script

__all__ = [
    "CutStream",
    "Fault",
    "LoopbackModelServer",
    "RecordedRequest",
    "Reply",
    "ResetConnection",
    "Responder",
    "ScriptedToolCall",
    "StallStream",
    "Step",
    "StreamError",
    "loads_script",
]
