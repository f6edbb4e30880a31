"""Common data types shared by several channels (overview.md §3.5, §10)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from .base import URI, Int, JsonPrimitive, Number, OpaqueMap, WireModel, kinded_union

__all__ = [
    "Markdown",
    "StringOrMarkdown",
    "Icon",
    "TextPosition",
    "TextRange",
    "TextSelection",
    "ContentRef",
    "FileEditSide",
    "FileEditDiff",
    "FileEdit",
    "UsageInfo",
    "ErrorInfo",
    "ProtectedResourceMetadata",
    "ConfigPropertySchema",
    "ConfigSchema",
    "Implementation",
    "ModelSelection",
    "OAuthClient",
    "McpAuthRequirement",
    "ToolInput",
]


class Markdown(WireModel):
    """The object form of ``StringOrMarkdown``."""

    markdown: str


def _som(value: Any) -> str | None:
    if isinstance(value, str):
        return "string"
    if isinstance(value, (dict, Markdown)):
        return "markdown"
    return None


#: ``string`` (plain text) | ``{markdown: string}``; re-encoded in the same form.
StringOrMarkdown = kinded_union(
    "StringOrMarkdown",
    {"string": str, "markdown": Markdown},
    _som,
    "ahp_string_or_markdown",
    "must be a string or a {markdown} object",
)


class Icon(WireModel):
    src: URI
    content_type: str | None = None
    sizes: list[str] | None = None
    #: ``"light"`` | ``"dark"``
    theme: str | None = None


class TextPosition(WireModel):
    """Zero-based position."""

    line: Int
    character: Int


class TextRange(WireModel):
    start: TextPosition
    end: TextPosition


class TextSelection(WireModel):
    range: TextRange


class ContentRef(WireModel):
    """Content fetched with ``resourceRead``."""

    uri: URI
    size_hint: Number | None = None
    content_type: str | None = None
    nonce: str | None = None


def _tool_input(value: Any) -> str | None:
    if isinstance(value, str):
        return "string"
    if isinstance(value, (dict, ContentRef)):
        return "ref"
    return None


#: ``ToolInput = string | ContentRef`` (inline or by reference).
ToolInput = kinded_union(
    "ToolInput",
    {"string": str, "ref": ContentRef},
    _tool_input,
    "ahp_tool_input",
    "must be a string or a ContentRef object",
)


class FileEditSide(WireModel):
    """``before`` / ``after`` of a :class:`FileEdit`."""

    uri: URI
    content: ContentRef


class FileEditDiff(WireModel):
    added: Int | None = None
    removed: Int | None = None


class FileEdit(WireModel):
    """create = only ``after``; delete = only ``before``; rename = different uris."""

    before: FileEditSide | None = None
    after: FileEditSide | None = None
    diff: FileEditDiff | None = None


class UsageInfo(WireModel):
    input_tokens: Number | None = None
    output_tokens: Number | None = None
    model: str | None = None
    cache_read_tokens: Number | None = None
    meta: OpaqueMap | None = Field(None, alias="_meta")


class ErrorInfo(WireModel):
    #: open string
    error_type: str
    message: str
    stack: str | None = None
    meta: OpaqueMap | None = Field(None, alias="_meta")


class ProtectedResourceMetadata(WireModel):
    """RFC 9728 protected-resource metadata. Wire names are snake_case (no camelCase aliases).

    ``required`` absent ⇒ treat as ``true``.
    """

    model_config = ConfigDict(alias_generator=None)

    resource: str
    resource_name: str | None = None
    authorization_servers: list[str] | None = None
    jwks_uri: str | None = None
    scopes_supported: list[str] | None = None
    bearer_methods_supported: list[str] | None = None
    resource_signing_alg_values_supported: list[str] | None = None
    resource_documentation: str | None = None
    resource_policy_uri: str | None = None
    resource_tos_uri: str | None = None
    required: bool | None = None


class ConfigPropertySchema(WireModel):
    #: ``"string" | "number" | "boolean" | "array" | "object"``
    type: str
    title: str
    description: str | None = None
    default: Any = None
    enum: list[JsonPrimitive] | None = None
    enum_labels: list[str] | None = None
    enum_descriptions: list[str] | None = None
    read_only: bool | None = None
    items: ConfigPropertySchema | None = None
    properties: dict[str, ConfigPropertySchema] | None = None
    required: list[str] | None = None
    additional_properties: ConfigPropertySchema | None = None


class ConfigSchema(WireModel):
    type: Literal["object"] = "object"
    properties: dict[str, ConfigPropertySchema]
    required: list[str] | None = None


class Implementation(WireModel):
    """Informational identity (``clientInfo`` / ``serverInfo``); never used for feature detection."""

    name: str
    version: str | None = None
    title: str | None = None


class ModelSelection(WireModel):
    id: str
    config: dict[str, JsonPrimitive] | None = None


class OAuthClient(WireModel):
    client_id: str
    client_secret: str | None = None


class McpAuthRequirement(WireModel):
    """Never contains a token."""

    #: ``"required" | "expired" | "insufficientScope"``
    reason: str
    oauth_client: OAuthClient | None = None
    resource: ProtectedResourceMetadata
    required_scopes: list[str] | None = None
    description: str | None = None
