"""What the memory tools return (defined once, in meshkit.wire)."""

from __future__ import annotations

from meshkit.wire.memory import AppendResult, ResetResult, Window

__all__ = ["AppendResult", "ResetResult", "Window"]
