"""The session's inputNeeded list follows its chats' blocking tool calls and input requests, and a
tool-call action brings only that call's entry in line, and a part nobody answers none: the list is
the same as a full recomputation after every action, however long the turn (hypothesis drives the
actions)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ahp_lab.host import Host, mirror
from ahp_lab.protocol.jsonvalue import to_json

CALLS = [f"c{i}" for i in range(24)]  # past PLAIN_MAX: the turn's parts become an indexed Vector
CLIENT = {"kind": "client", "clientId": "notebook-tools"}


def _step(call: str, what: str) -> list[dict]:
    base = {"turnId": "t", "toolCallId": call}
    if what == "start":
        return [{"type": "chat/toolCallStart", **base, "toolName": "x", "displayName": "X"}]
    if what == "start-client":
        return [
            {"type": "chat/toolCallStart", **base, "toolName": "x", "displayName": "X", "contributor": CLIENT}
        ]
    if what == "ask":
        return [{"type": "chat/toolCallReady", **base, "invocationMessage": "may I?"}]
    if what == "run":
        return [{"type": "chat/toolCallReady", **base, "invocationMessage": "go", "confirmed": "not-needed"}]
    if what == "approve":
        return [{"type": "chat/toolCallConfirmed", **base, "approved": True, "confirmed": "user-action"}]
    if what == "auth":
        return [{"type": "chat/toolCallAuthRequired", **base, "serverId": "s", "reason": "login"}]
    if what == "done":
        result = {"success": True, "pastTenseMessage": "did it"}
        return [{"type": "chat/toolCallComplete", **base, "result": result}]
    if what == "ask-result":
        result = {"success": True, "pastTenseMessage": "did it", "requiresResultConfirmation": True}
        return [{"type": "chat/toolCallComplete", **base, "result": result}]
    if what == "request":
        request = {"id": f"r-{call}", "message": "which?", "questions": []}
        return [{"type": "chat/inputRequested", "turnId": "t", "request": request}]
    if what == "part-text":  # a part nobody answers: the entries stand (nothing is read again)
        return [
            {
                "type": "chat/responsePart",
                "turnId": "t",
                "part": {"kind": "markdown", "id": call, "content": "x"},
            }
        ]
    if what == "part-odd":
        return [{"type": "chat/responsePart", "turnId": "t", "part": [call]}]
    if what == "part-input":  # an open input request, appended as a part
        request = {"id": f"p-{call}", "message": "which?"}
        return [
            {"type": "chat/responsePart", "turnId": "t", "part": {"kind": "inputRequest", "request": request}}
        ]
    if what == "part-call":  # a call waiting for confirmation, appended as a part
        tc = {"toolCallId": call, "toolName": "x", "displayName": "X", "status": "pending-confirmation"}
        return [{"type": "chat/responsePart", "turnId": "t", "part": {"kind": "toolCall", "toolCall": tc}}]
    return [{"type": "chat/inputCompleted", "turnId": "t", "requestId": f"r-{call}", "response": "decline"}]


STEPS = st.lists(
    st.tuples(
        st.sampled_from(CALLS),
        st.sampled_from(
            [
                "start",
                "start-client",
                "ask",
                "run",
                "approve",
                "auth",
                "done",
                "ask-result",
                "request",
                "answer",
                "part-text",
                "part-odd",
                "part-input",
                "part-call",
            ]
        ),
    ),
    min_size=1,
    max_size=80,
)


@settings(max_examples=60, deadline=None)
@given(STEPS)
def test_the_sessions_input_needed_is_a_full_recomputation_after_every_action(steps):
    host = Host()
    session = "ahp-session:/mirror"
    host.create_session(session, {})
    chat = host.store.state(session)["defaultChat"]
    user = {"text": "go", "origin": {"kind": "user"}}
    host.dispatch(chat, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "x", "message": user})
    for call in CALLS[:20]:  # a long turn to start with
        host.dispatch(chat, _step(call, "start")[0])
    for call, what in steps:
        for action in _step(call, what):
            host.dispatch(chat, action)
            full = mirror.input_needed_for_chat(chat, host.store.state(chat))
            listed = {e["id"]: to_json(e) for e in host.store.state(session).get("inputNeeded") or ()}
            assert listed.keys() == full.keys(), (call, what)
            for eid, entry in full.items():
                assert mirror._comparable(listed[eid]) == mirror._comparable(entry)
    host.dispatch(chat, {"type": "chat/turnComplete", "turnId": "t"})
    assert not host.store.state(session).get("inputNeeded")
