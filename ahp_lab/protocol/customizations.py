"""Customizations (customizations-and-client-tools.md §1) and MCP server state (mcp-servers.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from .base import URI, OpaqueMap, WireModel, tagged_union
from .common import ErrorInfo, Icon, McpAuthRequirement, TextRange

__all__ = [
    "CustomizationLoadingState",
    "CustomizationLoadedState",
    "CustomizationDegradedState",
    "CustomizationErrorState",
    "CustomizationLoadState",
    "McpServerStartingState",
    "McpServerReadyState",
    "McpServerAuthRequiredState",
    "McpServerErrorState",
    "McpServerStoppedState",
    "McpServerState",
    "ListChangedCapability",
    "SamplingCapability",
    "AhpMcpUiHostCapabilities",
    "McpAppInfo",
    "CustomizationBase",
    "ContainerCustomizationBase",
    "LeafCustomizationBase",
    "PluginCustomization",
    "ClientPluginCustomization",
    "DirectoryCustomization",
    "AgentCustomization",
    "SkillCustomization",
    "PromptCustomization",
    "RuleCustomization",
    "HookCustomization",
    "McpServerCustomization",
    "ChildCustomization",
    "Customization",
    "CHILD_TYPES",
    "MCP_NOT_ALLOWED",
    "is_enabled",
    "child_effective",
    "effective_enabled",
]


# ---------------------------------------------------------------- load state (by kind)


class CustomizationLoadingState(WireModel):
    kind: Literal["loading"] = "loading"


class CustomizationLoadedState(WireModel):
    kind: Literal["loaded"] = "loaded"


class CustomizationDegradedState(WireModel):
    kind: Literal["degraded"] = "degraded"
    message: str


class CustomizationErrorState(WireModel):
    kind: Literal["error"] = "error"
    message: str


CustomizationLoadState = tagged_union(
    "kind",
    [
        CustomizationLoadingState,
        CustomizationLoadedState,
        CustomizationDegradedState,
        CustomizationErrorState,
    ],
)


# ---------------------------------------------------------------- MCP server state (by kind)


class McpServerStartingState(WireModel):
    kind: Literal["starting"] = "starting"


class McpServerReadyState(WireModel):
    kind: Literal["ready"] = "ready"


class McpServerAuthRequiredState(McpAuthRequirement):
    """All :class:`McpAuthRequirement` fields plus ``kind:"authRequired"``."""

    kind: Literal["authRequired"] = "authRequired"


class McpServerErrorState(WireModel):
    kind: Literal["error"] = "error"
    error: ErrorInfo


class McpServerStoppedState(WireModel):
    kind: Literal["stopped"] = "stopped"


McpServerState = tagged_union(
    "kind",
    [
        McpServerStartingState,
        McpServerReadyState,
        McpServerAuthRequiredState,
        McpServerErrorState,
        McpServerStoppedState,
    ],
)


class ListChangedCapability(WireModel):
    list_changed: bool | None = None


class SamplingCapability(WireModel):
    tools: OpaqueMap | None = None


class AhpMcpUiHostCapabilities(WireModel):
    server_tools: ListChangedCapability | None = None
    server_resources: ListChangedCapability | None = None
    logging: OpaqueMap | None = None
    sampling: SamplingCapability | None = None


class McpAppInfo(WireModel):
    capabilities: AhpMcpUiHostCapabilities


# ---------------------------------------------------------------- customizations (by type)


class CustomizationBase(WireModel):
    id: str
    uri: URI
    name: str
    icons: list[Icon] | None = None
    range: TextRange | None = None
    meta: OpaqueMap | None = Field(None, alias="_meta")


class LeafCustomizationBase(CustomizationBase):
    """Leaf children; ``enabled`` absent ⇒ enabled."""

    enabled: bool | None = None


class AgentCustomization(LeafCustomizationBase):
    type: Literal["agent"] = "agent"
    description: str | None = None
    model: str | None = None
    tools: list[str] | None = None
    disable_model_invocation: bool | None = None
    disable_user_invocation: bool | None = None


class SkillCustomization(LeafCustomizationBase):
    type: Literal["skill"] = "skill"
    description: str | None = None
    disable_model_invocation: bool | None = None
    disable_user_invocation: bool | None = None


class PromptCustomization(LeafCustomizationBase):
    type: Literal["prompt"] = "prompt"
    description: str | None = None


class RuleCustomization(LeafCustomizationBase):
    type: Literal["rule"] = "rule"
    description: str | None = None
    always_apply: bool | None = None
    globs: list[str] | None = None


class HookCustomization(LeafCustomizationBase):
    type: Literal["hook"] = "hook"


class McpServerCustomization(CustomizationBase):
    """A top-level (host-originated) MCP server or a container child."""

    type: Literal["mcpServer"] = "mcpServer"
    enabled: bool
    state: McpServerState
    channel: URI | None = None
    mcp_app: McpAppInfo | None = None


ChildCustomization = tagged_union(
    "type",
    [
        AgentCustomization,
        SkillCustomization,
        PromptCustomization,
        RuleCustomization,
        HookCustomization,
        McpServerCustomization,
    ],
)


class ContainerCustomizationBase(CustomizationBase):
    enabled: bool
    #: set when a client contributed the container; absent ⇒ host-originated
    client_id: str | None = None
    load: CustomizationLoadState | None = None
    #: absent ⇒ not parsed yet; ``[]`` ⇒ parsed, contributes nothing
    children: list[ChildCustomization] | None = None


class PluginCustomization(ContainerCustomizationBase):
    type: Literal["plugin"] = "plugin"
    version: str | None = None


class ClientPluginCustomization(PluginCustomization):
    """What clients publish in ``SessionActiveClient.customizations``."""

    #: opaque change token
    nonce: str | None = None


class DirectoryCustomization(ContainerCustomizationBase):
    type: Literal["directory"] = "directory"
    #: the child type the directory holds (``agent``, ``skill``, ``prompt``, ``rule``, ``hook``, ``mcpServer``)
    contents: str
    writable: bool


Customization = tagged_union(
    "type",
    [
        PluginCustomization,
        DirectoryCustomization,
        AgentCustomization,
        SkillCustomization,
        PromptCustomization,
        RuleCustomization,
        HookCustomization,
        McpServerCustomization,
    ],
)


# ---------------------------------------------------------------- effective enablement (§1.3)

#: Child customization types (they live only inside containers).
CHILD_TYPES = ("agent", "skill", "prompt", "rule", "hook", "mcpServer")
#: ``error.errorType`` of an MCP server a remote client published that the host has not started
#: because the person at the kernel has not allowed it (an ahp_lab convention; views offer "Allow").
MCP_NOT_ALLOWED = "McpServerNotAllowed"


def is_enabled(entry: object) -> bool:
    """An entry's own ``enabled`` flag; absent (or not a boolean) ⇒ enabled."""
    value = entry.get("enabled") if isinstance(entry, Mapping) else None
    return value if isinstance(value, bool) else True


def child_effective(container: object, child: object) -> bool:
    """``container.enabled && (child.enabled ?? true)``: a disabled container disables every child."""
    return is_enabled(container) and is_enabled(child)


def effective_enabled(customizations: object) -> dict[str, bool]:
    """Effective enablement of every entry in a customization tree, by id (the one implementation).

    Top-level entries (containers and bare MCP servers) use their own ``enabled``; children of a
    container (any non-``mcpServer`` top-level entry with a ``children`` array) are effective only
    while their container is enabled. Entries without a string id are skipped; the first entry
    with an id wins (ids are session-unique).
    """
    out: dict[str, bool] = {}
    if not isinstance(customizations, list):
        return out
    for entry in customizations:
        if not isinstance(entry, Mapping):
            continue
        eid = entry.get("id")
        if isinstance(eid, str):
            out.setdefault(eid, is_enabled(entry))
        kids = entry.get("children")
        if entry.get("type") == "mcpServer" or not isinstance(kids, list):
            continue
        for child in kids:
            cid = child.get("id") if isinstance(child, Mapping) else None
            if isinstance(cid, str):
                out.setdefault(cid, child_effective(entry, child))
    return out
