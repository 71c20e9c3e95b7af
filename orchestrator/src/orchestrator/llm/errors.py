"""Why a model call failed, split by who must act on it.

    LLMError                  the call failed; ``user_message`` says what to do
     ├── LLMUnavailable       no usable answer: connection error, timeout, 5xx or overload
     │                        (after retries): wait a minute
     ├── LLMRateLimited       429 rate limit; ``retry_after_s`` when the server said: wait
     ├── LLMQuotaExceeded     429 ``insufficient_quota``: the account is out of credit
     ├── LLMAuthFailed        401 / 403: the API key is wrong or lacks access
     └── LLMRejected          400 / 404 / 422: the request is wrong (model name, settings)

``user_message`` is a short fixed text, the only part of an error a user ever sees.
The exception's own text (for logs) holds the HTTP status and the provider's error
code, never the provider's message (it may quote the API key) nor the key itself.
"""

from __future__ import annotations

import math


class LLMError(Exception):
    user_message: str = "The language model failed. Please try again in a minute."


class LLMUnavailable(LLMError):
    user_message = "The language model is not answering right now. Please try again in a minute."


class LLMRateLimited(LLMError):
    def __init__(self, detail: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(detail)
        self.retry_after_s = retry_after_s
        if retry_after_s is None:
            wait = "in a minute"
        else:
            seconds = max(1, math.ceil(retry_after_s))
            wait = f"in {seconds} second{'' if seconds == 1 else 's'}"
        self.user_message = f"The language model is busy (rate limit). Please try again {wait}."


class LLMQuotaExceeded(LLMError):
    user_message = (
        "The language model account is out of credit/quota: "
        "check the plan and billing of the API key's account."
    )


class LLMAuthFailed(LLMError):
    user_message = (
        "The language model refused the API key: check OPENAI_API_KEY "
        "(and that the key may use this model)."
    )


class LLMRejected(LLMError):
    user_message = (
        "The language model rejected the request: check the model name and settings "
        "(OPENAI_MODEL, agents.yaml)."
    )
