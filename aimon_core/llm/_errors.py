"""Errors a model call can end with; each says whether a retry may help."""

from __future__ import annotations


class LLMError(Exception):
    """A model call failed."""

    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status = status
        self.retry_after = retry_after

    def __str__(self) -> str:
        where = f"{self.provider} " if self.provider else ""
        code = f" (HTTP {self.status})" if self.status else ""
        return f"{where}API error{code}: {self.message}"


class LLMAuthError(LLMError):
    """The API key is missing, wrong or not allowed to use this model."""


class LLMBadRequestError(LLMError):
    """The provider rejected the request itself (400, 404, 422); retrying cannot help."""


class LLMQuotaError(LLMError):
    """The account is out of credit or over a spend cap; retrying cannot help."""


class LLMRateLimitError(LLMError):
    """Too many requests (429); retry after `retry_after` seconds if given."""

    retryable = True


class LLMOverloadedError(LLMError):
    """The provider is overloaded (Anthropic 529)."""

    retryable = True


class LLMServerError(LLMError):
    """The provider failed (5xx)."""

    retryable = True


class LLMConnectionError(LLMError):
    """The connection failed or was reset before a response arrived."""

    retryable = True


class LLMTimeoutError(LLMError):
    """The request or stream timed out (including a stream idle past its limit)."""

    retryable = True


class LLMStreamError(LLMError):
    """A stream broke off, reported an error mid-way, or ended without its final event."""

    retryable = True


class LLMResponseError(LLMError):
    """The response was complete but unusable (for example a tool call cut off by max tokens)."""


class ModelConfigError(LLMError):
    """No usable provider or model is configured."""

    def __str__(self) -> str:
        return self.message
