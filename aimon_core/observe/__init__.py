"""Seeing what an agent did and what it cost: interceptor chains, the cost ledger and its
hard caps, traces (a local store, and OpenTelemetry export when asked for).

The interceptor chain around model calls is in `aimon_core.llm` (`InterceptingLLMClient`,
`ModelCallInterceptor`), re-exported here; the chain around executions is here.
"""

from typing import TYPE_CHECKING

from aimon_core._lazy import lazy_getattr
from aimon_core.llm import InterceptingLLMClient, ModelCall, ModelCallInterceptor, ModelProceed
from aimon_core.observe._chain import (
    ExecutionInterceptor,
    ExecutionProceed,
    InterceptingAgentExecutor,
    execution_kind,
)

if TYPE_CHECKING:
    from aimon_core.observe._costs import BudgetCapError, CostLedger, LedgerScope, LedgerStore
    from aimon_core.observe._ledger import LedgerEntry, SQLiteLedgerStore, ledger_path
    from aimon_core.observe._settings import (
        BudgetCaps,
        ObserveSettings,
        PriceSetting,
        TracingSettings,
        price_table,
    )
    from aimon_core.observe._setup import Observation, observe_runtime

_LAZY = {
    "BudgetCapError": "_costs",
    "CostLedger": "_costs",
    "LedgerScope": "_costs",
    "LedgerStore": "_costs",
    "LedgerEntry": "_ledger",
    "SQLiteLedgerStore": "_ledger",
    "ledger_path": "_ledger",
    "BudgetCaps": "_settings",
    "ObserveSettings": "_settings",
    "PriceSetting": "_settings",
    "TracingSettings": "_settings",
    "price_table": "_settings",
    "Observation": "_setup",
    "observe_runtime": "_setup",
}

__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "BudgetCapError",
    "BudgetCaps",
    "CostLedger",
    "ExecutionInterceptor",
    "ExecutionProceed",
    "InterceptingAgentExecutor",
    "InterceptingLLMClient",
    "LedgerEntry",
    "LedgerScope",
    "LedgerStore",
    "ModelCall",
    "ModelCallInterceptor",
    "ModelProceed",
    "Observation",
    "ObserveSettings",
    "PriceSetting",
    "SQLiteLedgerStore",
    "TracingSettings",
    "execution_kind",
    "ledger_path",
    "observe_runtime",
    "price_table",
]
