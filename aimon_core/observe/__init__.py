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
    from aimon_core.observe._ledger import (
        LedgerEntry,
        SQLiteLedgerStore,
        ledger_path,
        start_of_day,
        start_of_month,
    )
    from aimon_core.observe._settings import (
        BudgetCaps,
        ObserveSettings,
        PriceSetting,
        TracingSettings,
        price_table,
    )
    from aimon_core.observe._setup import Observation, observe_runtime
    from aimon_core.observe._spans import (
        FileTraceSpanStore,
        SpanExporter,
        SpanRecord,
        TraceSpanStore,
        find_trace,
        project_trace_store,
    )
    from aimon_core.observe._trace import Tracing
    from aimon_core.observe._tree import render_trace, trace_summary
    from aimon_core.observe._usage import (
        USAGE_GROUPS,
        SinceError,
        UsageRow,
        parse_since,
        row_json,
        summarize,
    )

_LAZY = {
    "BudgetCapError": "_costs",
    "CostLedger": "_costs",
    "LedgerScope": "_costs",
    "LedgerStore": "_costs",
    "LedgerEntry": "_ledger",
    "SQLiteLedgerStore": "_ledger",
    "ledger_path": "_ledger",
    "start_of_day": "_ledger",
    "start_of_month": "_ledger",
    "USAGE_GROUPS": "_usage",
    "SinceError": "_usage",
    "UsageRow": "_usage",
    "parse_since": "_usage",
    "row_json": "_usage",
    "summarize": "_usage",
    "BudgetCaps": "_settings",
    "ObserveSettings": "_settings",
    "PriceSetting": "_settings",
    "TracingSettings": "_settings",
    "price_table": "_settings",
    "Observation": "_setup",
    "observe_runtime": "_setup",
    "FileTraceSpanStore": "_spans",
    "SpanExporter": "_spans",
    "SpanRecord": "_spans",
    "TraceSpanStore": "_spans",
    "find_trace": "_spans",
    "project_trace_store": "_spans",
    "Tracing": "_trace",
    "render_trace": "_tree",
    "trace_summary": "_tree",
}

__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "USAGE_GROUPS",
    "BudgetCapError",
    "BudgetCaps",
    "CostLedger",
    "ExecutionInterceptor",
    "ExecutionProceed",
    "FileTraceSpanStore",
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
    "SinceError",
    "SpanExporter",
    "SpanRecord",
    "TraceSpanStore",
    "Tracing",
    "TracingSettings",
    "UsageRow",
    "execution_kind",
    "find_trace",
    "ledger_path",
    "observe_runtime",
    "parse_since",
    "price_table",
    "project_trace_store",
    "render_trace",
    "row_json",
    "start_of_day",
    "start_of_month",
    "summarize",
    "trace_summary",
]
