"""The exceptions sagents_nb raises.

SagentsError
├── ConfigurationError       a missing endpoint, a bad argument, a sync call on the library thread
├── Rejected                 a preprocessor refused a message
├── RunPaused                `result()` was asked of a paused run
├── StoreError               a durable store is missing, foreign, damaged or of another version
└── LLMError                 the endpoint failed
    ├── EndpointError        an HTTP error status (carries `status`, `excerpt`, `base_url`)
    ├── TransportError       no answer: connection refused, timeout
    ├── MalformedReply       an answer that is not a usable chat completion
    └── CassetteMismatch     a cassette has no recorded exchange for a request
"""

from __future__ import annotations


class SagentsError(Exception):
    """Base class of every sagents_nb error."""


class ConfigurationError(SagentsError):
    """The toolkit was asked to do something it cannot do as configured."""


class Rejected(SagentsError):
    """Raised by a preprocessor to refuse a message; `send` re-raises it and adds nothing."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class RunPaused(SagentsError):
    """The run is paused at an action and has no result yet."""


class StoreError(SagentsError):
    """A durable session store cannot be used as asked (missing, foreign, damaged, wrong id).

    `what` says what happened; `remedy`, when the cause is known, what to do about it (a full
    disk and another writer call for different things)."""

    def __init__(self, what: str, *, remedy: str = "") -> None:
        super().__init__(f"{what}; {remedy}" if remedy else what)
        self.what = what
        self.remedy = remedy


class LLMError(SagentsError):
    """The model endpoint failed."""

    def __init__(self, message: str, *, base_url: str = "") -> None:
        super().__init__(message)
        self.base_url = base_url


class EndpointError(LLMError):
    """The endpoint answered with an HTTP error status."""

    def __init__(
        self, status: int, excerpt: str, *, base_url: str, retry_after: float | None = None
    ):
        hint = {
            400: "the request was rejected; check the model name and the messages",
            401: "check the API key (OPENAI_API_KEY or sn.LLM(api_key=...))",
            403: "the key is not allowed to use this model or endpoint",
            404: "check base_url and the model name",
            429: "rate limited; wait and retry",
        }.get(status, "the server failed; retry later")
        super().__init__(
            f"endpoint {base_url} answered HTTP {status}: {excerpt!r} ({hint})", base_url=base_url
        )
        self.status = status
        self.excerpt = excerpt
        self.retry_after = retry_after


class TransportError(LLMError):
    """The endpoint could not be reached or did not answer in time."""


class MalformedReply(LLMError):
    """The endpoint's answer is not a usable chat completion."""


class CassetteMismatch(LLMError):
    """A cassette that may not record has no unplayed exchange matching a request."""
