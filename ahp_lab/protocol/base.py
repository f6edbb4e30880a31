"""Shared machinery for the AHP wire models.

* :class:`WireModel` — base class of every object type: camelCase wire names, ``null`` ≡ absent,
  unknown keys preserved, absent optionals omitted on output.
* Scalar helpers: :data:`Number` (int-or-float that keeps ints as ints), :data:`Int`,
  :data:`SessionStatus`, :data:`JsonPrimitive`, :data:`OpaqueMap`.
* :func:`tagged_union` — a discriminated union on one key with a raw fallback for unknown values.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    PlainValidator,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    Tag,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from .errors import UNION_TAGS
from .jsonvalue import to_json

__all__ = [
    "WireModel",
    "PatchModel",
    "Number",
    "Int",
    "SessionStatus",
    "JsonPrimitive",
    "OpaqueMap",
    "URI",
    "tagged_union",
    "wire_dump",
]

URI = str
#: Opaque JSON object copied verbatim (``_meta``, config ``values``, ``structuredContent``, schemas).
OpaqueMap = dict[str, Any]


class WireModel(BaseModel):
    """Base of every AHP object type.

    * attribute names are snake_case, wire names camelCase (``_meta`` ↔ ``meta``);
    * a JSON ``null`` for any member is dropped before validation (``null`` ≡ absent), except the
      members listed in ``__keep_nulls__`` (or all members when it is ``True``);
    * unknown keys are kept (``extra="allow"``) and re-emitted;
    * ``Literal`` fields with a default (discriminators such as ``type``/``kind``/``status``) are
      filled in when absent so they are always emitted, even for models built in Python;
    * serialization omits absent members and never emits ``None`` for them.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        strict=True,
        ser_json_inf_nan="null",
        # Build each model's validator on first use, not at import: `import ahp_lab` stays cheap
        # and a process validates only the types it meets (see ahp_lab.protocol.codec.TYPES).
        defer_build=True,
    )

    #: Members whose explicit ``null`` is meaningful (merge payloads); ``True`` = all members.
    __keep_nulls__: ClassVar[bool | frozenset[str]] = frozenset()
    #: ``(alias, name, default)`` of constant members that must always be present on the wire.
    __wire_constants__: ClassVar[tuple[tuple[str, str, Any], ...]] = ()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        consts = []
        for name, info in cls.model_fields.items():
            ann = info.annotation
            is_const = get_origin(ann) is Literal and len(get_args(ann)) == 1
            if is_const and info.default is not None and not info.is_required():
                consts.append((info.alias or name, name, info.default))
        cls.__wire_constants__ = tuple(consts)

    @model_validator(mode="before")
    @classmethod
    def _wire_normalize(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        keep = cls.__keep_nulls__
        if keep is not True:
            for value in data.values():
                if value is None:
                    data = {k: v for k, v in data.items() if v is not None or k in keep}
                    break
        for alias, name, default in cls.__wire_constants__:
            if alias not in data and name not in data:
                data = {alias: default, **data}
        return data

    @model_serializer(mode="wrap")
    def _wire_serialize(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        keep = self.__keep_nulls__
        if keep is not True and isinstance(data, dict):
            for value in data.values():
                if value is None:
                    return {k: v for k, v in data.items() if v is not None or k in keep}
        return data

    def to_wire(self) -> dict[str, Any]:
        """The JSON form of this model (camelCase keys, absent members omitted)."""
        return wire_dump(self)


class PatchModel(WireModel):
    """A merge payload: explicit ``null`` members mean "remove this key" and are kept.

    Encode with :func:`~ahp_lab.protocol.dump` (``exclude_unset``): a plain ``model_dump()`` would
    also emit the never-set members as ``null``.
    """

    __keep_nulls__: ClassVar[bool | frozenset[str]] = True


def wire_dump(model: BaseModel) -> Any:
    """``model`` as wire JSON: camelCase keys, absent members omitted, ``Text`` values as ``str``."""
    return to_json(model.model_dump(mode="python", by_alias=True, exclude_unset=True))


# --------------------------------------------------------------------------------------------
# Scalars


def _validate_number(value: Any) -> int | float:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        raise PydanticCustomError("ahp_finite_number", "must be a finite number")
    raise PydanticCustomError("ahp_number", "must be a number")


def _validate_int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise PydanticCustomError("int_type", "must be an integer")


def _validate_status(value: Any) -> int:
    value = _validate_int(value)
    if value < 0:
        raise PydanticCustomError("greater_than_equal", "must be >= 0", {"ge": 0})
    return value


def _validate_primitive(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise PydanticCustomError("ahp_json_primitive", "must be a JSON primitive")


#: A JSON number: ints stay ``int`` and floats stay ``float`` (no ``0`` → ``0.0`` coercion).
Number = Annotated[int | float, PlainValidator(_validate_number)]
#: A JSON integer of unbounded size (``bool`` rejected).
Int = Annotated[int, PlainValidator(_validate_int)]
#: ``SessionStatus``: a non-negative int bitset; unknown bits are preserved (see reducer-rules §6).
SessionStatus = Annotated[int, PlainValidator(_validate_status)]
#: ``string | number | boolean | null``.
JsonPrimitive = Annotated[Any, PlainValidator(_validate_primitive)]


# --------------------------------------------------------------------------------------------
# Discriminated unions with a raw fallback

RAW = "*"


def _tag(label: str) -> str:
    UNION_TAGS.add(label)
    return label


def tagged_union(field: str, variants: list[type[WireModel]], *, raw: bool = True) -> Any:
    """``Annotated[Union[...], Discriminator(...)]`` over ``variants`` keyed by ``field``.

    Each variant declares ``field`` as a ``Literal`` (one or more values). A known value selects
    its variant (a malformed payload is then a validation error for that variant); any other
    string value decodes to a plain ``dict`` that re-encodes verbatim (when ``raw``). A missing or
    non-string discriminator is an ``ahp_discriminator`` error.
    """
    by_value: dict[str, str] = {}
    by_class: dict[type, str] = {}
    members: list[Any] = []
    for cls in variants:
        values = get_args(cls.model_fields[field].annotation)
        tag = _tag(f"{field}={'|'.join(values)}")
        for v in values:
            by_value[v] = tag
        by_class[cls] = tag
        members.append(Annotated[cls, Tag(tag)])
    raw_tag = _tag(f"{field}={RAW}")
    if raw:
        members.append(Annotated[dict[str, Any], Tag(raw_tag)])

    def discriminate(value: Any) -> str | None:
        if isinstance(value, dict):
            key = value.get(field)
            if isinstance(key, str):
                return by_value.get(key, raw_tag if raw else None)
            return None
        tag = by_class.get(type(value))
        if tag is not None:
            return tag
        key = getattr(value, field, None)
        if isinstance(key, str):
            return by_value.get(key)
        return None

    return Annotated[
        Union[tuple(members)],  # noqa: UP007 - dynamic member list
        Discriminator(
            discriminate,
            custom_error_type="ahp_discriminator",
            custom_error_message=f"missing or invalid discriminator '{field}'",
        ),
    ]


def kinded_union(name: str, members: dict[str, Any], discriminate: Any, error_type: str, message: str) -> Any:
    """A union whose branch is chosen by ``discriminate(value) -> label | None`` (labels registered
    as union tags so they never show up in error paths)."""
    parts = [Annotated[tp, Tag(_tag(f"<{name}:{label}>"))] for label, tp in members.items()]

    def disc(value: Any) -> str | None:
        label = discriminate(value)
        return None if label is None else f"<{name}:{label}>"

    return Annotated[
        Union[tuple(parts)],  # noqa: UP007 - dynamic member list
        Discriminator(disc, custom_error_type=error_type, custom_error_message=message),
    ]
