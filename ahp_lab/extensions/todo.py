"""The todo extension: a task list in session state that rewinds with the chat (seed 003 §2).

Declares only ``session_state``, one resident tool (``UpdateTodos``: at most one item in progress)
and a ``before_model_call`` hook that reminds the model of the list in the synthetic tail.
"""

from __future__ import annotations

import json
import time
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..tools import ToolError
from .contract import Extension, ExtensionTool, Hooks, SessionState, ToolResult

__all__ = ["todo_extension", "TodoItem", "TodoState", "TODO_ID"]

TODO_ID = "todo"


class TodoItem(BaseModel):
    """One task."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1, max_length=64)
    content: str = Field(min_length=1, max_length=500)
    status: Literal["pending", "in_progress", "completed"] = "pending"


class TodoState(BaseModel):
    """The list (``updated_at`` is 0 until the first update)."""

    version: int = 1
    updated_at: int = 0
    items: list[TodoItem] = Field(default_factory=list)


class UpdateTodosArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    todos: list[TodoItem] = Field(
        max_length=20, description="The whole new list; at most one item in_progress."
    )


def _update(runtime, call) -> ToolResult:
    items = call.args.todos
    ids = [t.id for t in items]
    if len(set(ids)) != len(ids):
        raise ToolError("every todo needs its own id")
    if sum(t.status == "in_progress" for t in items) > 1:
        raise ToolError("at most one todo may be in_progress at a time")
    state = runtime.state.update(TodoState(updated_at=int(time.time() * 1000), items=items))
    return ToolResult("Todo list updated.", details={"todos": [t.model_dump() for t in state.items]})


def _remind(runtime) -> str | None:
    state = runtime.state.value
    if state.updated_at == 0:
        return None
    items = [t.model_dump() for t in state.items]
    return "Current session Todo state (internal state data, not a new user request):\n" + json.dumps(
        items, ensure_ascii=False
    )


def todo_extension() -> Extension:
    """The todo extension (id ``todo``)."""
    return Extension(
        id=TODO_ID,
        session_state=SessionState(TodoState),
        tools=[
            ExtensionTool(
                "UpdateTodos",
                "Replace the session's Todo list (plan multi-step work, mark progress). At most one item in_progress.",
                _update,
                UpdateTodosArgs,
                title="Update todos",
            )
        ],
        hooks=Hooks(before_model_call=_remind),
    )
