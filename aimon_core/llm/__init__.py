"""The model layer: provider-neutral messages, the LLMClient seam, providers and retries."""

from typing import TYPE_CHECKING

from aimon_core._lazy import lazy_getattr
from aimon_core.llm._client import (
    LLMClient,
    ScriptedLLMClient,
    ScriptedLLMClientError,
    ScriptStep,
    collect,
    reply,
    script,
)
from aimon_core.llm._errors import (
    LLMAuthError,
    LLMBadRequestError,
    LLMConnectionError,
    LLMError,
    LLMOverloadedError,
    LLMQuotaError,
    LLMRateLimitError,
    LLMResponseError,
    LLMServerError,
    LLMStreamError,
    LLMTimeoutError,
    ModelConfigError,
)
from aimon_core.llm._messages import (
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    LLMRequest,
    LLMResponse,
    Message,
    ModelSettings,
    ResponseCompleted,
    RetryScheduled,
    Role,
    StopReason,
    StreamEvent,
    StreamRestarted,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseStarted,
    Usage,
    UsageReported,
)

if TYPE_CHECKING:
    from aimon_core.llm._anthropic import AnthropicClient
    from aimon_core.llm._models import (
        DEFAULT_MODELS,
        ModelInfo,
        cost_usd,
        known_models,
        model_info,
    )
    from aimon_core.llm._openai import OpenAIClient
    from aimon_core.llm._redact import RedactingClient, SecretSource, redact_message
    from aimon_core.llm._retry import RetryingClient, RetryPolicy
    from aimon_core.llm._select import (
        ProviderChoice,
        choose_provider,
        make_client,
        ollama_models,
        probe_ollama,
    )

# The provider clients, retries, registry and selection load on first use: start-up paths
# (`aimon --version`, the first REPL prompt) never pay for them.
_LAZY = {
    "AnthropicClient": "_anthropic",
    "DEFAULT_MODELS": "_models",
    "ModelInfo": "_models",
    "cost_usd": "_models",
    "known_models": "_models",
    "model_info": "_models",
    "OpenAIClient": "_openai",
    "RedactingClient": "_redact",
    "SecretSource": "_redact",
    "redact_message": "_redact",
    "RetryingClient": "_retry",
    "RetryPolicy": "_retry",
    "ProviderChoice": "_select",
    "choose_provider": "_select",
    "make_client": "_select",
    "ollama_models": "_select",
    "probe_ollama": "_select",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "DEFAULT_MODELS",
    "AnthropicClient",
    "ContentBlock",
    "DocumentBlock",
    "ImageBlock",
    "LLMAuthError",
    "LLMBadRequestError",
    "LLMClient",
    "LLMConnectionError",
    "LLMError",
    "LLMOverloadedError",
    "LLMQuotaError",
    "LLMRateLimitError",
    "LLMRequest",
    "LLMResponse",
    "LLMResponseError",
    "LLMServerError",
    "LLMStreamError",
    "LLMTimeoutError",
    "Message",
    "ModelConfigError",
    "ModelInfo",
    "ModelSettings",
    "OpenAIClient",
    "ProviderChoice",
    "RedactingClient",
    "ResponseCompleted",
    "RetryPolicy",
    "RetryScheduled",
    "RetryingClient",
    "Role",
    "ScriptStep",
    "ScriptedLLMClient",
    "ScriptedLLMClientError",
    "SecretSource",
    "StopReason",
    "StreamEvent",
    "StreamRestarted",
    "TextBlock",
    "TextDelta",
    "ThinkingBlock",
    "ThinkingDelta",
    "ToolDefinition",
    "ToolResultBlock",
    "ToolUseBlock",
    "ToolUseStarted",
    "Usage",
    "UsageReported",
    "choose_provider",
    "collect",
    "cost_usd",
    "known_models",
    "make_client",
    "model_info",
    "ollama_models",
    "probe_ollama",
    "redact_message",
    "reply",
    "script",
]
