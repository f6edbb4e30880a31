"""Layered configuration behind the workspace-trust boundary (seed 003, "configuration").

Two JSON files, each an object keyed by extension id:

* the **user** layer, ``~/.ahp_lab/config.json`` (``user_config=`` elsewhere): the person's own;
* the **project** layer, ``<workspace>/.ahp_lab/config.json``: comes with the code being worked
  on, so it is read **only when the workspace is trusted**. In an untrusted workspace the file is
  never opened, whatever an extension declares; the framework decides, not the extension.

A missing file or section is "no layer"; a file that is not a JSON object, or a section its schema
refuses, is a problem reported with one sentence, and the extension gets its default.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..tools import FAILURES, first_error
from .contract import Configuration

__all__ = ["Workspace", "ConfigError", "USER_CONFIG", "PROJECT_CONFIG", "read_layer", "resolve_configuration"]

#: The user layer's default location.
USER_CONFIG = Path("~/.ahp_lab/config.json")
#: The project layer, relative to the workspace root.
PROJECT_CONFIG = Path(".ahp_lab/config.json")
_MAX_CONFIG_BYTES = 1_000_000


class ConfigError(ValueError):
    """A configuration layer that cannot be used, in one sentence."""


@dataclass(frozen=True)
class Workspace:
    """The folder an agent works in and whether the person trusts it (default: not trusted)."""

    root: Path
    trusted: bool = False

    @classmethod
    def at(cls, root: str | os.PathLike | None = None, *, trusted: bool = False) -> Workspace:
        """A workspace at ``root`` (default: the current directory), ``~`` expanded."""
        return cls(Path(os.path.abspath(os.path.expanduser(os.fspath(root or os.getcwd())))), trusted)

    @property
    def project_config(self) -> Path:
        """The project configuration file (read only when the workspace is trusted)."""
        return self.root / PROJECT_CONFIG


def read_layer(path: Path) -> dict | None:
    """The JSON object in ``path`` (``None`` when there is no such file)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"{path} could not be read ({exc.strerror or exc}).") from None
    if len(data) > _MAX_CONFIG_BYTES:
        raise ConfigError(f"{path} is larger than {_MAX_CONFIG_BYTES} bytes.")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}).") from None
    except RecursionError:
        raise ConfigError(f"{path} nests too deep to be read.") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{path} must hold a JSON object keyed by extension id.")
    return doc


def _validate(schema: type[BaseModel], value: Any, where: str) -> BaseModel:
    if isinstance(value, schema):
        return value
    try:
        return schema.model_validate(value.model_dump() if isinstance(value, BaseModel) else value)
    except ValidationError as exc:
        at, why = first_error(exc, "value")
        raise ConfigError(f"{where}: {at} {why}.") from None


class _Layers:
    """Reads each file at most once per activation, the project file only when trusted."""

    def __init__(self, workspace: Workspace, user_config: Path) -> None:
        self.workspace = workspace
        self.user_config = user_config
        self._docs: dict[str, dict | None] = {}

    def doc(self, layer: str) -> dict | None:
        if layer == "project" and not self.workspace.trusted:
            return None  # the trust boundary: the file is not even opened
        if layer not in self._docs:
            path = self.user_config if layer == "user" else self.workspace.project_config
            self._docs[layer] = None
            self._docs[layer] = read_layer(path)
        return self._docs[layer]

    def section(self, layer: str, extension_id: str, schema: type[BaseModel]) -> BaseModel | None:
        doc = self.doc(layer)
        if doc is None or extension_id not in doc:
            return None
        return _validate(schema, doc[extension_id], f"the {layer} configuration of {extension_id}")


def resolve_configuration(
    extension_id: str, declaration: Configuration, layers: _Layers
) -> tuple[Any, list[str]]:
    """The extension's configuration and the problems met (one sentence each)."""
    default = declaration.default if declaration.default is not None else declaration.schema()
    layer_schema = declaration.layer_schema or declaration.schema
    problems: list[str] = []

    def layer(name: str) -> Any:
        try:
            return layers.section(name, extension_id, layer_schema)
        except ConfigError as exc:
            problems.append(str(exc))
            return None

    if declaration.scope == "layered":
        user, project = layer("user"), layer("project")
        try:
            value = _validate(
                declaration.schema, declaration.resolve(user, project), f"the configuration of {extension_id}"
            )
        except ConfigError as exc:
            problems.append(str(exc))
            value = default
        except FAILURES as exc:  # the extension's resolve failed: its default, and say why
            problems.append(
                f"resolving the configuration of {extension_id} failed: {type(exc).__name__}: {exc}."
            )
            value = default
        return value, problems
    found = layer(declaration.scope)
    return (found if found is not None else default), problems


def layers_for(workspace: Workspace, user_config: str | os.PathLike | None) -> _Layers:
    """The configuration layers of one session activation."""
    path = Path(os.path.expanduser(os.fspath(user_config or USER_CONFIG)))
    return _Layers(workspace, path)
