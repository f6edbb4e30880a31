"""Typed wire vocabulary of the Agent Host Protocol (AHP) v0.8.0.

Every object type of the protocol is a pydantic v2 model (``WireModel``): attributes are
snake_case, wire names camelCase (``_meta`` is the attribute ``meta``; RFC 9728
``ProtectedResourceMetadata`` keeps its snake_case wire names).

Decoding/encoding policy
------------------------
* **null ≡ absent.** A JSON ``null`` member is dropped before validation, as if the key were
  missing. Encoding omits absent members (``exclude_unset`` semantics) but always emits a present
  value, however falsy (``"isPty": false``, ``"status": 0``, ``"params": {}``). Opaque maps
  (``_meta``, config ``values``, ``structuredContent``, JSON Schemas) are copied verbatim, nulls
  inside them included. Merge payloads keep explicit nulls because there ``null`` means "remove
  this key": ``root|session/configChanged.config``, ``session/chatUpdated.changes``,
  ``chat/inputCompleted.answers`` and ``chat/toolCallComplete.result``. JSON-RPC ``result: null``
  and error ``id: null`` are kept too.
* **Unknown keys are preserved.** Known models use ``extra="allow"``: keys the spec does not
  declare survive a decode/encode round-trip, so round-trip group B fixtures (017, 019) are
  asserted against ``preservedOutput``.
* **Unknown variants are preserved.** Discriminated unions (``StateAction``, ``Customization``,
  ``ResponsePart``, ``ToolCallState``, ``ToolResultContent``, ``MessageAttachment``,
  ``SessionInputRequest``, ``McpServerState``, …) decode a *known* discriminator into its typed
  variant (a malformed payload is then an error) and any *other* string value into a plain
  ``dict`` that re-encodes verbatim. A missing or non-string discriminator is an error.
* **Numbers.** ``SessionStatus`` is a non-negative int bitset with unknown bits preserved;
  ``serverSeq``/``clientSeq`` are unbounded ints; ``number`` fields keep ints as ints.
* **Open strings.** Enumerations that may grow (``changeKind``, ``displayKind``, ``errorType``,
  statuses inside state, …) are typed ``str``; ``Literal`` is used for discriminators only.

The package imports lazily: ``ahp_lab.protocol.text`` / ``.jsonvalue`` stay light (the reducers
use only those); the models are loaded on first access to any other name of this package.

Entry points: :func:`parse`, :func:`dump`, :func:`roundtrip`, :func:`validate_action`,
:func:`validate_state`, :data:`TYPES`; action tables :data:`ACTION_TYPES`, :data:`ACTION_SINCE`,
:data:`CLIENT_DISPATCHABLE`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

PROTOCOL_VERSION = "0.8.0"
#: Versions offered during ``initialize`` (most preferred first).
SUPPORTED_VERSIONS: tuple[str, ...] = ("0.8.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1")

#: Submodules whose whole ``__all__`` is re-exported.
_MODEL_MODULES = (
    "common",
    "customizations",
    "terminal",
    "changeset",
    "annotation",
    "resource_watch",
    "chat",
    "session",
    "root",
    "actions",
    "messages",
    "jsonrpc",
    "limits",
)
#: Individually re-exported names.
_NAMED = {
    "codec": (
        "TYPES",
        "STATE_TYPES",
        "UNION_TYPES",
        "MODEL_CLASSES",
        "parse",
        "dump",
        "roundtrip",
        "validate_action",
        "validate_params",
        "validate_state",
        "adapter",
    ),
    "errors": ("ProtocolError", "explain"),
    "base": ("WireModel", "PatchModel", "Number", "Int", "SessionStatus", "JsonPrimitive", "OpaqueMap"),
    "jsonvalue": ("to_json", "strip_nulls", "dumps", "loads", "json_equal"),
    "text": ("Text", "append_text"),
}

_loaded: list[str] | None = None


def _load() -> list[str]:
    """Import every submodule and bind the public names here (once)."""
    global _loaded
    if _loaded is None:
        names = ["PROTOCOL_VERSION", "SUPPORTED_VERSIONS"]
        namespace = globals()
        for module_name, attrs in _NAMED.items():
            module = importlib.import_module(f".{module_name}", __name__)
            for attr in attrs:
                namespace[attr] = getattr(module, attr)
                names.append(attr)
        for module_name in _MODEL_MODULES:
            module = importlib.import_module(f".{module_name}", __name__)
            for attr in module.__all__:
                namespace[attr] = getattr(module, attr)
                if attr not in names:
                    names.append(attr)
        _loaded = names
    return _loaded


def __getattr__(name: str) -> Any:
    names = _load()
    if name == "__all__":
        return list(names)
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_load()))


if TYPE_CHECKING:  # static view of the lazily bound names
    from .actions import *  # noqa: F403
    from .annotation import *  # noqa: F403
    from .base import Int, JsonPrimitive, Number, OpaqueMap, PatchModel, SessionStatus, WireModel  # noqa: F401
    from .changeset import *  # noqa: F403
    from .chat import *  # noqa: F403
    from .codec import (  # noqa: F401
        MODEL_CLASSES,
        STATE_TYPES,
        TYPES,
        UNION_TYPES,
        adapter,
        dump,
        parse,
        roundtrip,
        validate_action,
        validate_params,
        validate_state,
    )
    from .common import *  # noqa: F403
    from .customizations import *  # noqa: F403
    from .errors import ProtocolError, explain  # noqa: F401
    from .jsonrpc import *  # noqa: F403
    from .jsonvalue import dumps, json_equal, loads, strip_nulls, to_json  # noqa: F401
    from .messages import *  # noqa: F403
    from .resource_watch import *  # noqa: F403
    from .root import *  # noqa: F403
    from .session import *  # noqa: F403
    from .terminal import *  # noqa: F403
    from .text import Text, append_text  # noqa: F401
