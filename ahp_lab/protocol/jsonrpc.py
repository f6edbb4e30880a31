"""JSON-RPC 2.0 framing (overview.md §2) and the AHP error codes (§2.1).

A :data:`JsonRpcMessage` is classified by key presence: ``method`` + ``id`` → request; ``method``
without ``id`` → notification; ``id`` + ``error`` → error response; ``id`` + ``result`` → success
response. Every key present on input is re-emitted: ``params: {}`` and ``result: {}`` stay, and a
``result: null`` (e.g. the answer to ``ping``) is kept as ``null``.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Annotated, Any, ClassVar, Literal

from pydantic import PlainValidator
from pydantic_core import PydanticCustomError

from .base import Int, OpaqueMap, WireModel, kinded_union

__all__ = [
    "ErrorCode",
    "JsonRpcId",
    "JsonRpcRequest",
    "JsonRpcNotification",
    "JsonRpcErrorObject",
    "JsonRpcSuccessResponse",
    "JsonRpcErrorResponse",
    "JsonRpcMessage",
    "jsonrpc_kind",
]


class ErrorCode(IntEnum):
    """JSON-RPC error codes used by AHP."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SESSION_NOT_FOUND = -32001
    PROVIDER_NOT_FOUND = -32002
    SESSION_ALREADY_EXISTS = -32003
    TURN_IN_PROGRESS = -32004
    UNSUPPORTED_PROTOCOL_VERSION = -32005
    CONTENT_NOT_FOUND = -32006
    AUTH_REQUIRED = -32007
    NOT_FOUND = -32008
    PERMISSION_DENIED = -32009
    ALREADY_EXISTS = -32010
    CONFLICT = -32011


def _validate_id(value: Any) -> int | str:
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise PydanticCustomError("ahp_jsonrpc_id", "must be an integer or a string")


#: A request id (AHP uses numbers; strings are accepted as JSON-RPC allows them).
JsonRpcId = Annotated[int | str, PlainValidator(_validate_id)]


class JsonRpcRequest(WireModel):
    jsonrpc: Literal["2.0"] = "2.0"
    id: JsonRpcId
    method: str
    params: OpaqueMap | None = None


class JsonRpcNotification(WireModel):
    jsonrpc: Literal["2.0"] = "2.0"
    method: str
    params: OpaqueMap | None = None


class JsonRpcErrorObject(WireModel):
    code: Int
    message: str
    data: Any = None


class JsonRpcSuccessResponse(WireModel):
    """``result`` is any JSON value; an explicit ``null`` is kept."""

    __keep_nulls__: ClassVar[frozenset[str]] = frozenset({"result", "id"})

    jsonrpc: Literal["2.0"] = "2.0"
    id: JsonRpcId | None
    result: Any


class JsonRpcErrorResponse(WireModel):
    """``id`` may be ``null`` (e.g. for a parse error) and is then kept."""

    __keep_nulls__: ClassVar[frozenset[str]] = frozenset({"id"})

    jsonrpc: Literal["2.0"] = "2.0"
    id: JsonRpcId | None
    error: JsonRpcErrorObject


_BY_CLASS = {
    JsonRpcRequest: "request",
    JsonRpcNotification: "notification",
    JsonRpcSuccessResponse: "success",
    JsonRpcErrorResponse: "error",
}


def jsonrpc_kind(value: Any) -> str | None:
    """``"request" | "notification" | "success" | "error"`` by key presence, else ``None``."""
    kind = _BY_CLASS.get(type(value))
    if kind is not None:
        return kind
    if not isinstance(value, dict):
        return None
    if "method" in value:
        return "request" if "id" in value else "notification"
    if "id" in value:
        if "error" in value:
            return "error"
        if "result" in value:
            return "success"
    return None


JsonRpcMessage = kinded_union(
    "JsonRpcMessage",
    {
        "request": JsonRpcRequest,
        "notification": JsonRpcNotification,
        "success": JsonRpcSuccessResponse,
        "error": JsonRpcErrorResponse,
    },
    jsonrpc_kind,
    "ahp_jsonrpc_kind",
    "is not a JSON-RPC 2.0 message",
)
