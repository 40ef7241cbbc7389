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
        url: str = "",
    ) -> None:
        """Args:
        url: the API's base URL, for errors about reaching it (credentials left out).
        """
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status = status
        self.retry_after = retry_after
        self.url = url
        # Attempts made in all; RetryingClient sets it when it gives up.
        self.attempts = 1

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
    """The server could not be reached, or the connection broke before a response arrived.

    `message` says what failed in a few words ("connection refused"); `unreachable` says
    nothing answered at all (refused, unknown host): a wrong URL or a server that is not
    running, which retries rarely cure, so they are few.
    """

    retryable = True

    def __init__(self, message: str, *, provider: str = "", url: str = "",
                 unreachable: bool = False) -> None:
        super().__init__(message, provider=provider, url=url)
        self.unreachable = unreachable

    def __str__(self) -> str:
        where = f" at {self.url}" if self.url else ""
        api = f"the {self.provider} API" if self.provider else "the model API"
        return f"cannot reach {api}{where} ({self.message}{_tries(self)})"


class LLMTimeoutError(LLMError):
    """The request or stream timed out (including a stream idle past its limit)."""

    retryable = True

    def __str__(self) -> str:
        if not self.url:
            return super().__str__()
        code = f" (HTTP {self.status})" if self.status else ""
        api = f"the {self.provider} API" if self.provider else "the model API"
        return f"{api} at {self.url} timed out{code}: {self.message}{_tries(self)}"


def _tries(error: LLMError) -> str:
    return f"; gave up after {error.attempts} attempts" if error.attempts > 1 else ""


class LLMStreamError(LLMError):
    """A stream broke off, reported an error mid-way, or ended without its final event."""

    retryable = True


class LLMResponseError(LLMError):
    """The response was complete but unusable (for example a tool call cut off by max tokens)."""


class ModelConfigError(LLMError):
    """No usable provider or model is configured."""

    def __str__(self) -> str:
        return self.message
