"""Seeing what an agent did: interceptor chains around executions and model calls.

The interceptor chain around model calls is in `aimon_core.llm` (`InterceptingLLMClient`,
`ModelCallInterceptor`), re-exported here; the chain around executions is here.
"""

from aimon_core.llm import InterceptingLLMClient, ModelCall, ModelCallInterceptor, ModelProceed
from aimon_core.observe._chain import (
    ExecutionInterceptor,
    ExecutionProceed,
    InterceptingAgentExecutor,
)

__all__ = [
    "ExecutionInterceptor",
    "ExecutionProceed",
    "InterceptingAgentExecutor",
    "InterceptingLLMClient",
    "ModelCall",
    "ModelCallInterceptor",
    "ModelProceed",
]
