"""The price table of the fleet file (``prices:`` in config/agents.yaml), per million tokens."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from meshkit.yaml_config import load_yaml, validated


class ModelPrice(BaseModel):
    """A model's price per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0, description="default: input's")
    output: float = Field(ge=0, description="reasoning tokens are billed as output")


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
