"""Decode/encode entry points: ``TYPES``, ``parse``, ``dump``, ``roundtrip``, ``validate_action``,
``validate_params``, ``validate_state``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from . import (
    actions,
    annotation,
    base,
    changeset,
    chat,
    common,
    customizations,
    jsonrpc,
    messages,
    resource_watch,
    root,
    session,
    terminal,
)
from .actions import ACTION_TYPES
from .errors import ProtocolError, json_type_name, to_protocol_error
from .jsonvalue import to_json
from .limits import DEFAULT_LIMITS, MAX_SAFE_INTEGER, Limits, check_json

__all__ = [
    "TYPES",
    "STATE_TYPES",
    "UNION_TYPES",
    "parse",
    "dump",
    "roundtrip",
    "validate_action",
    "validate_params",
    "validate_state",
    "adapter",
]

_MODULES = (
    common,
    customizations,
    terminal,
    changeset,
    annotation,
    resource_watch,
    chat,
    session,
    root,
    actions,
    messages,
    jsonrpc,
)

#: Named unions and scalar aliases (everything in ``TYPES`` that is not a model class).
UNION_TYPES: dict[str, Any] = {
    "StateAction": actions.StateAction,
    "Customization": customizations.Customization,
    "ChildCustomization": customizations.ChildCustomization,
    "CustomizationLoadState": customizations.CustomizationLoadState,
    "McpServerState": customizations.McpServerState,
    "StringOrMarkdown": common.StringOrMarkdown,
    "ToolInput": common.ToolInput,
    "SessionStatus": base.SessionStatus,
    "JsonPrimitive": base.JsonPrimitive,
    "TerminalClaim": terminal.TerminalClaim,
    "TerminalContentPart": terminal.TerminalContentPart,
    "ChangesetOperationTarget": changeset.ChangesetOperationTarget,
    "MessageAttachment": chat.MessageAttachment,
    "ToolCallContributor": chat.ToolCallContributor,
    "ToolCallRiskAssessment": chat.ToolCallRiskAssessment,
    "ToolResultContent": chat.ToolResultContent,
    "ToolCallState": chat.ToolCallState,
    "ToolCallConfirmationState": chat.ToolCallConfirmationState,
    "ChatInputQuestion": chat.ChatInputQuestion,
    "ChatInputAnswerValue": chat.ChatInputAnswerValue,
    "ChatInputAnswer": chat.ChatInputAnswer,
    "ResponsePart": chat.ResponsePart,
    "ChatOrigin": chat.ChatOrigin,
    "ChatSource": chat.ChatSource,
    "SessionInputRequest": session.SessionInputRequest,
    "ChannelState": messages.ChannelState,
    "ReconnectResult": messages.ReconnectResult,
    "JsonRpcMessage": jsonrpc.JsonRpcMessage,
    "JsonRpcId": jsonrpc.JsonRpcId,
}

#: Channel kind → state model.
STATE_TYPES: dict[str, type[BaseModel]] = {
    "root": root.RootState,
    "session": session.SessionState,
    "chat": chat.ChatState,
    "terminal": terminal.TerminalState,
    "changeset": changeset.ChangesetState,
    "annotations": annotation.AnnotationsState,
    "resourceWatch": resource_watch.ResourceWatchState,
}


def _model_classes() -> dict[str, type[BaseModel]]:
    out: dict[str, type[BaseModel]] = {}
    for module in _MODULES:
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            if isinstance(obj, type) and issubclass(obj, base.WireModel):
                out[name] = obj
    return out


MODEL_CLASSES: dict[str, type[BaseModel]] = _model_classes()


class _Adapters(Mapping[str, TypeAdapter]):
    """Type name → ``TypeAdapter``, each built on first access (validators are costly to build).

    This is the one place where validation is deferred: the models themselves use
    ``defer_build=True``, and an adapter (with the validators of the models it reaches) is
    built the first time its type is looked up, then kept.
    """

    def __init__(self, types: dict[str, Any]) -> None:
        self._types = types
        self._built: dict[str, TypeAdapter] = {}

    def __getitem__(self, name: str) -> TypeAdapter:
        ta = self._built.get(name)
        if ta is None:
            ta = self._built[name] = TypeAdapter(self._types[name])
        return ta

    def __iter__(self) -> Iterator[str]:
        return iter(self._types)

    def __len__(self) -> int:
        return len(self._types)


#: Every protocol type by name → its ``TypeAdapter``: all model classes (by class name) plus the
#: named unions and scalars of :data:`UNION_TYPES`. Adapters are built on first access.
TYPES: Mapping[str, TypeAdapter] = _Adapters({**MODEL_CLASSES, **UNION_TYPES})
_ACTION_TYPE_NAMES: dict[str, str] = {t: cls.__name__ for t, cls in ACTION_TYPES.items()}
_STATE_TYPE_NAMES: dict[str, str] = {k: cls.__name__ for k, cls in STATE_TYPES.items()}


def adapter(type_name: str) -> TypeAdapter:
    try:
        return TYPES[type_name]
    except KeyError:
        raise ProtocolError.build(
            None, None, f"unknown protocol type {type_name!r}", "unknown_type"
        ) from None


def parse(type_name: str, data: Any) -> Any:
    """Decode wire JSON ``data`` as the protocol type ``type_name`` (model, raw dict or scalar).

    ``null`` members are treated as absent, unknown keys are kept, unknown discriminator values
    decode to plain dicts. Raises :class:`ProtocolError` on invalid data.
    """
    ta = adapter(type_name)
    try:
        return ta.validate_python(to_json(data), by_alias=True, by_name=False)
    except ValidationError as exc:
        raise to_protocol_error(exc, type_name) from None


def dump(value: Any) -> Any:
    """Encode models (and containers of models, raw values, ``Text``) as wire JSON."""
    if isinstance(value, BaseModel):
        return base.wire_dump(value)
    if isinstance(value, dict):
        return {k: dump(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [dump(v) for v in value]
    return to_json(value)


def roundtrip(type_name: str, data: Any) -> Any:
    """``dump(parse(type_name, data))``."""
    return dump(parse(type_name, data))


def validate_action(data: Any, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """Validate one raw action and return its normalized JSON.

    The value is first checked against ``limits`` (:func:`~ahp_lab.protocol.limits.check_json`:
    JSON types only, nesting, string lengths, lone surrogates, non-finite numbers, overall size).

    The model is chosen by ``type`` first (no whole-union validation). Normalization drops ``null``
    members of declared optional fields (``null`` ≡ absent) but leaves opaque maps untouched, and
    keeps explicit ``null`` members of merge payloads (``root|session/configChanged.config``,
    ``session/chatUpdated.changes``, ``chat/inputCompleted.answers``, ``chat/toolCallComplete.result``)
    because there ``null`` means "remove this key". Raises :class:`ProtocolError` for unknown types
    and invalid payloads.
    """
    if not isinstance(data, dict):
        raise ProtocolError.build(
            "action", None, f"must be a JSON object, got {json_type_name(data)}", "type"
        )
    action_type = data.get("type")
    subject = action_type if isinstance(action_type, str) and len(action_type) <= 80 else "action"
    # first: it is iterative, to_json is not; and it bounds what to_json and the model then cost
    check_json(data, limits, subject, max_containers=limits.max_action_containers)
    data = to_json(data)
    if action_type is None:
        raise ProtocolError.build("action", "type", "is required", "required")
    if not isinstance(action_type, str):
        raise ProtocolError.build(
            "action", "type", f"must be a string, got {json_type_name(action_type)}", "type"
        )
    ta = TYPES[_ACTION_TYPE_NAMES[action_type]] if action_type in _ACTION_TYPE_NAMES else None
    if ta is None:
        raise ProtocolError(
            f"unknown action type {action_type!r}",
            field="type",
            rule="is not a known action type",
            subject=action_type,
            code="unknown_action_type",
        )
    try:
        model = ta.validate_python(data, by_alias=True, by_name=False)
    except ValidationError as exc:
        raise to_protocol_error(exc, action_type) from None  # the message names the field and rule
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


_PARAMS_ADAPTERS: dict[str, TypeAdapter] = {
    method: TYPES[model.__name__] for method, (model, _result) in messages.COMMANDS.items()
}


def validate_params(method: str, data: Any, limits: Limits = DEFAULT_LIMITS) -> BaseModel:
    """Validate the params of a client → host request with the protocol's command models.

    ``data`` is checked against ``limits`` first, then against the method's params model
    (``CreateSessionParams`` for ``createSession``, ...). Raises :class:`ProtocolError` whose
    message names the method, the field and the rule (``createSession: field
    'workingDirectories' must be an array, got string``). Unknown keys are allowed and kept.
    """
    ta = _PARAMS_ADAPTERS.get(method)
    if ta is None:
        raise ProtocolError.build(None, None, f"unknown method {method!r}", "unknown_method")
    check_json(data, limits, method)
    unsafe = _unsafe_integer(data)
    if unsafe is not None:  # a count or a limit past it is another number to a JavaScript peer
        raise ProtocolError.build(method, unsafe, "must be an integer from -(2^53 - 1) to 2^53 - 1")
    try:
        return ta.validate_python(data, by_alias=True, by_name=False)
    except ValidationError as exc:
        raise to_protocol_error(exc, method) from None


def _unsafe_integer(params: Any) -> str | None:
    """The name of the first of a command's own numbers (its params' members, and a subscription's
    ``view``: ``limit``, ``position``, ``view.turns``, ``lastSeenServerSeq``…) past JSON's safe
    range, else ``None``. What a client carries through (``_meta``, a tool's schema, an action) is
    not the host's to read as a number."""
    if type(params) is not dict:
        return None
    view = params.get("view")
    members = list(params.items())
    if type(view) is dict:
        members += [(f"view.{k}", v) for k, v in view.items()]
    for name, value in members:
        if type(value) is int and abs(value) > MAX_SAFE_INTEGER:
            return name
    return None


def validate_state(kind: str, data: Any) -> BaseModel:
    """Validate the state of a channel of ``kind`` (``root``, ``session``, ``chat``, ``terminal``,
    ``changeset``, ``annotations``, ``resourceWatch``). ``Text`` values are accepted."""
    ta = TYPES[_STATE_TYPE_NAMES[kind]] if kind in _STATE_TYPE_NAMES else None
    if ta is None:
        raise ProtocolError.build(None, None, f"unknown channel kind {kind!r}", "unknown_kind")
    try:
        return ta.validate_python(to_json(data), by_alias=True, by_name=False)
    except ValidationError as exc:
        raise to_protocol_error(exc, f"{kind} state") from None
