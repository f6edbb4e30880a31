"""Root channel state (root-channel.md §1)."""

from __future__ import annotations

from pydantic import Field

from .base import URI, Int, Number, OpaqueMap, WireModel
from .common import ConfigSchema, ProtectedResourceMetadata
from .customizations import Customization
from .terminal import TerminalClaim

__all__ = [
    "MultipleChatsCapability",
    "MultipleWorkingDirectoriesCapability",
    "AgentCapabilities",
    "SessionModelInfo",
    "AgentInfo",
    "RootConfigState",
    "TerminalInfo",
    "RootState",
]


class MultipleChatsCapability(WireModel):
    fork: bool | None = None
    side_chat: bool | None = None


class MultipleWorkingDirectoriesCapability(WireModel):
    #: ``workingDirectories[0]`` must never be removed or reordered
    immutable_primary: bool | None = None


class AgentCapabilities(WireModel):
    multiple_chats: MultipleChatsCapability | None = None
    multiple_working_directories: MultipleWorkingDirectoriesCapability | None = None


class SessionModelInfo(WireModel):
    id: str
    provider: str
    name: str
    max_context_window: Number | None = None
    max_output_tokens: Number | None = None
    max_prompt_tokens: Number | None = None
    supports_vision: bool | None = None
    #: ``"enabled" | "disabled" | "unconfigured"``
    policy_state: str | None = None
    #: model options; resolved values go in ``ModelSelection.config``
    config_schema: ConfigSchema | None = None
    meta: OpaqueMap | None = Field(None, alias="_meta")


class AgentInfo(WireModel):
    #: e.g. ``"copilot"``
    provider: str
    display_name: str
    description: str
    models: list[SessionModelInfo]
    protected_resources: list[ProtectedResourceMetadata] | None = None
    customizations: list[Customization] | None = None
    capabilities: AgentCapabilities | None = None


class RootConfigState(WireModel):
    schema_: ConfigSchema = Field(alias="schema")
    values: OpaqueMap


class TerminalInfo(WireModel):
    resource: URI
    title: str
    claim: TerminalClaim
    exit_code: Int | None = None


class RootState(WireModel):
    agents: list[AgentInfo]
    #: count of non-disposed sessions
    active_sessions: Int | None = None
    terminals: list[TerminalInfo] | None = None
    config: RootConfigState | None = None
    meta: OpaqueMap | None = Field(None, alias="_meta")
