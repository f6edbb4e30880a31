"""Workbench views: anywidget classes over pure view-model functions.

``Workbench(source)`` composes the chat pane, the session input queue, the customization tree, the
tool-call timeline and the transition inspector over a
:class:`~ahp_lab.widgets.source.WorkbenchSource`.
"""

from .base import Coalescer, SourceView, ViewContext
from .chat import active_turn_patch, chat_view_model, part_view, promote_patch, turn_view
from .inputs import inputs_view_model, local_approval_view
from .inspector import TransitionFilter, inspector_rows, readable_patch, transition_detail, transition_row
from .model_calls import ModelCallsView, model_calls_view_model
from .sanitize import clean_text, safe_url, text_block
from .source import LocalApprovalSource, Transition, WorkbenchSource
from .statemachine import state_machine_model
from .timeline import ToolCallHistory, collect_tool_calls, timeline_view_model, tool_call_steps
from .tree import effective_customizations, tree_view_model
from .views import ChatPane, CustomizationTree, InputQueue, ToolCallTimeline, TransitionInspector, Workbench
from .wire import WireView, wire_view_model

__all__ = [
    "ChatPane",
    "Coalescer",
    "CustomizationTree",
    "InputQueue",
    "LocalApprovalSource",
    "ModelCallsView",
    "SourceView",
    "ToolCallHistory",
    "ToolCallTimeline",
    "Transition",
    "TransitionFilter",
    "TransitionInspector",
    "ViewContext",
    "WireView",
    "Workbench",
    "WorkbenchSource",
    "active_turn_patch",
    "chat_view_model",
    "clean_text",
    "collect_tool_calls",
    "effective_customizations",
    "inputs_view_model",
    "local_approval_view",
    "model_calls_view_model",
    "inspector_rows",
    "part_view",
    "promote_patch",
    "readable_patch",
    "safe_url",
    "state_machine_model",
    "text_block",
    "timeline_view_model",
    "tool_call_steps",
    "transition_detail",
    "transition_row",
    "tree_view_model",
    "turn_view",
    "wire_view_model",
]
