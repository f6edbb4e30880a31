"""The in-kernel AHP host: authority over state, commands over JSON-RPC, turn driving."""

from .host import ROOT, Host, ResolvedTool

__all__ = ["Host", "ResolvedTool", "ROOT"]
