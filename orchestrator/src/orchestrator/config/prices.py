"""The price table of the fleet file (``prices:`` in config/agents.yaml): per million tokens,
and per minute of audio for a transcription model."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from meshkit.yaml_config import load_yaml, validated


class ModelPrice(BaseModel):
    """A model's price per million tokens, or per minute of audio (a transcription model):
    a price names one or both."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(default=0, ge=0)
    cached_input: float | None = Field(default=None, ge=0, description="default: input's")
    output: float = Field(default=0, ge=0, description="reasoning tokens are billed as output")
    per_minute: float = Field(default=0, ge=0, description="of audio transcribed")

    @model_validator(mode="before")
    @classmethod
    def _named(cls, value: object) -> object:
        named = set(value) if isinstance(value, dict) else set()
        if (
            isinstance(value, dict)
            and "per_minute" not in named
            and not {"input", "output"} <= named
        ):
            raise ValueError("name input and output (per million tokens), or per_minute (audio)")
        return value


class Prices(BaseModel):
    """The price table (``prices:`` in agents.yaml): a model is priced by its name, or by
    the longest listed name it extends with ``-`` (``gpt-5-mini`` prices
    ``gpt-5-mini-2025-08-07``)."""

    model_config = ConfigDict(extra="forbid")

    currency: str = Field(default="USD", min_length=1, max_length=8)
    models: dict[str, ModelPrice] = Field(default_factory=dict)

    def price(self, model: str) -> ModelPrice | None:
        if model in self.models:
            return self.models[model]
        prefixes = [name for name in self.models if model.startswith(f"{name}-")]
        return self.models[max(prefixes, key=len)] if prefixes else None


def load_prices(path: Path, environ: Mapping[str, str] | None = None) -> Prices:
    """The price table of the fleet file (none listed: every model unpriced)."""
    raw = load_yaml(path, environ)
    return validated(Prices, raw.get("prices") or {}, path, "prices")
