"""What tests of aimon, and of code built on it, use: doubles and the store contract.

A scripted model (`ScriptedLLMClient`, `reply`, `script`) for unit tests of agents and tools;
a loopback server speaking the providers' wire formats, so end-to-end tests run the real SDKs
without a network; and the contracts every `SessionRecordStore` and `SessionLeaseStore`
backend, every backend of the service's stores and every workflow `RunStore` backend passes.
"""

from aimon_core.llm import ScriptedLLMClient, ScriptedLLMClientError, reply, script

from ._knowledge_contract import KnowledgeStoreContract
from ._lease_contract import ExpiringLeaseStoreContract, SessionLeaseStoreContract
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
from ._routine_contract import RoutineStoreContract
from ._run_store_contract import RunStoreContract
from ._service_contract import IdempotencyStoreContract, SessionInboxContract, SignalBusContract
from ._store_contract import FakeClock, SessionRecordStoreContract, every_block_conversation

__all__ = [
    "CutStream",
    "ExpiringLeaseStoreContract",
    "FakeClock",
    "Fault",
    "IdempotencyStoreContract",
    "KnowledgeStoreContract",
    "LoopbackModelServer",
    "RecordedRequest",
    "Reply",
    "ResetConnection",
    "Responder",
    "RoutineStoreContract",
    "RunStoreContract",
    "ScriptedLLMClient",
    "ScriptedLLMClientError",
    "ScriptedToolCall",
    "SessionInboxContract",
    "SessionLeaseStoreContract",
    "SessionRecordStoreContract",
    "SignalBusContract",
    "StallStream",
    "Step",
    "StreamError",
    "every_block_conversation",
    "loads_script",
    "reply",
    "script",
]
