"""The wire shapes of the orchestrator's infrastructure servers: one definition for both sides.

A server returns these from its tools; the orchestrator reads the tools' structured
results into the same classes (``Registry.call_as``).
"""
