"""ACP session modes and config options → the AHP session's ``config`` (schema and values), and
back: which ACP option or mode each AHP config property is (seed 001 on ACP modes).

``modes.availableModes`` + ``currentModeId`` become a ``mode`` property; ``select`` and ``boolean``
config options more properties, keyed by option id; an option of category ``mode`` *is* the
``mode`` property (the legacy modes are then ignored). ``docs/acp.md`` says it in prose.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["MODE_PROPERTY", "config_from_acp", "values_from_options", "offered_values", "option_key"]

MODE_PROPERTY = "mode"
#: Mode ids, option ids and choice values longer than this are not offered: they are sent back
#: whole, so they cannot be cut as names are (3 MB of them went into the session's state).
MAX_ID_CHARS = 1000


#: At most this many modes, options and choices of one option are offered (3,000 ids of 1,000
#: characters made a 6 MB config).
MAX_CHOICES = 100


def _fits(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= MAX_ID_CHARS


def _current(value: Any) -> Any:
    """A current value as the session shows it: a choice's id or a boolean; anything else (one too
    long to be an id, a list, an object) is none of them."""
    return value if _fits(value) or isinstance(value, bool) else None


def _enum_property(
    title: str, description: Any, choices: list[tuple[str, str, Any]], cut: Callable[[str], str]
) -> dict:
    prop: dict[str, Any] = {
        "type": "string",
        "title": cut(title),
        "enum": [c[0] for c in choices],
        "enumLabels": [cut(c[1]) for c in choices],
        "enumDescriptions": [cut(str(c[2] or "")) for c in choices],
        "sessionMutable": True,
    }
    if description:
        prop["description"] = cut(str(description))
    return prop


def _select_choices(options: Any) -> list[tuple[str, str, str | None]]:
    out = []
    for item in options or ():
        if isinstance(item, dict) and "options" in item:  # a group: flattened, its name is lost
            out.extend(_select_choices(item["options"]))
        elif isinstance(item, dict) and _fits(item.get("value")):
            out.append((item["value"], str(item.get("name") or item["value"]), item.get("description")))
    return out[:MAX_CHOICES]


def option_key(option: dict, legacy_modes: bool) -> str:
    """The config property an ACP config option becomes (its id; the mode category is ``mode``)."""
    if option.get("category") == "mode" and not legacy_modes:
        return MODE_PROPERTY
    return option["id"] if option["id"] != MODE_PROPERTY else "mode-option"


def config_from_acp(
    modes: dict | None, options: list[dict] | None, cut: Callable[[str], str] = lambda text: text
) -> tuple[dict | None, dict[str, tuple]]:
    """``(config, routes)`` from ``session/new``'s ``modes`` and ``configOptions`` (JSON, camelCase).

    ``config`` is ``{schema, values}`` (``None`` when the agent offers neither); ``routes`` maps a
    property to how a change reaches the agent: ``("mode",)`` → ``session/set_mode``,
    ``("option", id, type)`` → ``session/set_config_option``. ``cut`` bounds each name, label and
    description (a 20 MB mode description made a 20 MB session state; ids and values stay whole).
    """
    props: dict[str, dict] = {}
    values: dict[str, Any] = {}
    routes: dict[str, tuple] = {}
    options = [o for o in options or () if isinstance(o, dict) and _fits(o.get("id"))][:MAX_CHOICES]
    mode_option = any(o.get("category") == "mode" for o in options)
    legacy = bool(modes) and not mode_option
    if legacy:
        choices = [
            (m["id"], str(m.get("name") or m["id"]), m.get("description"))
            for m in modes.get("availableModes") or ()
            if isinstance(m, dict) and _fits(m.get("id"))
        ][:MAX_CHOICES]
        props[MODE_PROPERTY] = _enum_property("Mode", "How the agent works: its session mode", choices, cut)
        values[MODE_PROPERTY] = _current(modes.get("currentModeId"))
        routes[MODE_PROPERTY] = ("mode",)
    for option in options:
        key = option_key(option, legacy)
        if option.get("type") == "boolean":
            prop: dict[str, Any] = {
                "type": "boolean",
                "title": cut(str(option.get("name") or key)),
                "sessionMutable": True,
            }
            if option.get("description"):
                prop["description"] = cut(str(option["description"]))
        elif option.get("type") == "select":
            prop = _enum_property(
                str(option.get("name") or key),
                option.get("description"),
                _select_choices(option.get("options")),
                cut,
            )
        else:
            continue  # an option type this host does not know: not offered
        props[key] = prop
        values[key] = _current(option.get("currentValue"))
        routes[key] = ("option", option["id"], option.get("type"))
    if not props:
        return None, routes
    return {"schema": {"type": "object", "properties": props}, "values": values}, routes


def values_from_options(options: list[dict] | None, routes: dict[str, tuple]) -> dict:
    """Config values from a ``configOptions`` list (``config_option_update``, set responses)."""
    by_id = {r[1]: key for key, r in routes.items() if r[0] == "option"}
    return {
        by_id[o["id"]]: _current(o.get("currentValue"))
        for o in options or ()
        if isinstance(o, dict) and o.get("id") in by_id
    }


def offered_values(options: list[dict] | None, routes: dict[str, tuple]) -> dict[str, list]:
    """The values each option of a ``configOptions`` list offers now (a select's choices, a
    boolean's two), by config property."""
    by_id = {r[1]: key for key, r in routes.items() if r[0] == "option"}
    out: dict[str, list] = {}
    for o in options or ():
        if isinstance(o, dict) and o.get("id") in by_id:
            choices = (
                [True, False]
                if o.get("type") == "boolean"
                else [c[0] for c in _select_choices(o.get("options"))]
            )
            out[by_id[o["id"]]] = choices
    return out
