"""Local approvals in the input queue: client tool calls waiting for this notebook's own approval
(``approval="always"``). They are client state, not host state, so the source reports them
(``local_approvals`` / ``decide_local`` / ``subscribe_local_approvals``)."""

import json

import pytest

from ahp_lab.widgets import InputQueue, Workbench
from ahp_lab.widgets.inputs import inputs_view_model, local_approval_view

from .conftest import WEIRD

C = "ahp-chat:/demo-chat"


def _approval(tcid="tests-1", chat=C, **extra):
    return {
        "toolCallId": tcid,
        "chat": chat,
        "turnId": "t2",
        "toolName": "runUnitTests",
        "title": "Run unit tests",
        "toolInput": '{"pattern": "auth"}',
        "clientId": "notebook",
        **extra,
    }


def test_attached_to_the_matching_client_execution(demo):
    plain = inputs_view_model(demo.state(demo.session))
    got = inputs_view_model(demo.state(demo.session), local_approvals=[_approval()])
    [entry] = [e for e in got["entries"] if e["kind"] == "toolClientExecution"]
    assert entry["toolCallId"] == "tests-1"
    assert entry["localApproval"] == {
        "toolCallId": "tests-1",
        "chat": C,
        "turnId": "t2",
        "toolName": "runUnitTests",
        "title": "Run unit tests",
        "clientId": "notebook",
        "input": {
            "text": '{"pattern": "auth"}',
            "length": 19,
            "truncated": False,
            "ref": "local/tests-1/input",
            "markdown": False,
        },
    }
    # a client execution is not blocking by itself; one waiting for a person is
    assert entry["blocking"] and got["blocking"] == plain["blocking"] + 1
    assert got["count"] == plain["count"] and got["local"] == 1
    assert "local" not in plain


def test_listed_on_its_own_without_a_session_entry(demo):
    got = inputs_view_model(demo.state(demo.session), local_approvals=[_approval("other-9")])
    local = got["entries"][-1]
    assert local["kind"] == "localApproval" and local["id"] == f"local/{C}#other-9"
    assert local["blocking"] and local["displayName"] == "Run unit tests"
    assert local["chatTitle"] == "Refactor the parser" and local["toolCallId"] == "other-9"
    assert not any("localApproval" in e for e in got["entries"] if e["kind"] == "toolClientExecution")
    # same id, other chat: not the same call
    got = inputs_view_model(
        demo.state(demo.session), local_approvals=[_approval("tests-1", chat="ahp-chat:/elsewhere")]
    )
    assert got["entries"][-1]["kind"] == "localApproval"
    assert got["count"] == len(demo.state(demo.session)["inputNeeded"]) + 1


def test_empty_session_and_hostile_fields():
    got = inputs_view_model(
        {},
        local_approvals=[
            _approval("x", title="\x1b[31mred\x1b[0m\nWipe", toolInput="A" * 100_000),
        ],
    )
    [e] = got["entries"]
    view = e["localApproval"]
    assert view["title"] == "red Wipe"
    assert view["input"]["truncated"] and len(view["input"]["text"]) < 100_000
    assert got["count"] == 1 and got["blocking"] == 1 and got["local"] == 1


@pytest.mark.parametrize("weird", WEIRD)
def test_malformed_approvals_never_raise(weird, demo):
    for value in (weird, [weird], [weird, _approval()]):
        json.dumps(inputs_view_model(demo.state(demo.session), local_approvals=value))
    json.dumps(local_approval_view(weird, "r"))
    json.dumps(local_approval_view(_approval(toolCallId=weird, chat=weird, toolInput=weird), "r"))


def test_many_approvals_are_capped():
    many = [_approval(f"c{i}") for i in range(500)]
    got = inputs_view_model({}, local_approvals=many)
    assert got["shown"] == 50 and got["local"] == 50


def test_the_queue_shows_and_decides_local_approvals(demo):
    wb = Workbench(demo)
    q = wb.inputs
    assert not any("localApproval" in e for e in q.model["entries"])
    demo.add_local_approval("tests-1", turn_id="t2", tool_name="runUnitTests", title="Run unit tests")
    [entry] = [e for e in q.model["entries"] if e["kind"] == "toolClientExecution"]
    assert entry["localApproval"]["title"] == "Run unit tests"
    q._on_custom_msg(q, {"type": "local_approval", "toolCallId": "tests-1", "approved": True})
    assert demo.local_decisions == [("tests-1", True)] and q.error == ""
    assert not any("localApproval" in e for e in q.model["entries"])
    # unknown id and malformed messages become a one-line error, never an exception
    q._on_custom_msg(q, {"type": "local_approval", "toolCallId": "nope", "approved": False})
    assert "no local approval" in q.error
    q._on_custom_msg(q, {"type": "local_approval", "toolCallId": "tests-1", "approved": "yes"})
    assert "approved: true|false" in q.error
    assert demo.local_decisions == [("tests-1", True)]
    wb.close()
    assert demo._local_listeners == []


def test_time_travel_hides_local_approvals_and_refuses_decisions(demo):
    wb = Workbench(demo)
    demo.add_local_approval("zz-1", title="Deploy")
    assert wb.inputs.model["entries"][-1]["kind"] == "localApproval"
    wb.inspector.selected_seq = demo.transitions[3].seq
    wb.inspector.time_travel = True
    assert not any(e["kind"] == "localApproval" for e in wb.inputs.model["entries"])
    wb.inputs._on_custom_msg(wb.inputs, {"type": "local_approval", "toolCallId": "zz-1", "approved": True})
    assert "read-only" in wb.inputs.error and demo.local_decisions == []
    wb.inspector.time_travel = False
    assert wb.inputs.model["entries"][-1]["kind"] == "localApproval"
    wb.close()


def test_a_source_without_local_approvals(demo):
    class Plain:
        def __init__(self, inner):
            self._inner = inner
            self.session, self.chat = inner.session, inner.chat

        def __getattr__(self, name):
            if name in ("local_approvals", "decide_local", "subscribe_local_approvals"):
                raise AttributeError(name)
            return getattr(self._inner, name)

    q = InputQueue(Plain(demo))
    assert "local" not in q.model
    q._on_custom_msg(q, {"type": "local_approval", "toolCallId": "x", "approved": True})
    assert "no local approvals" in q.error
    q.close()


def test_a_failing_source_is_shown_not_raised(demo):
    def boom():
        raise RuntimeError("client gone")

    demo.local_approvals = boom
    q = InputQueue(demo)
    assert "client gone" in q.error and q.model["entries"]
    q.close()


def test_local_approvals_of_a_live_lab():
    import asyncio

    from ahp_lab.agents.scripted import call
    from ahp_lab.lab import Lab

    from .test_with_lab import _run

    async def main():
        lab = await Lab.open()

        @lab.tool(approval="always")
        def wipe(path: str) -> str:
            """Wipe a directory."""
            return f"wiped {path}"

        wb = lab.show()
        src = wb.source
        changes: list[int] = []
        unsubscribe = src.subscribe_local_approvals(lambda: changes.append(1))
        first = lab.start("go", script=[call("wipe", path="/a")])
        await lab.client.wait_for(lab.chat, lambda _s: True if lab.client.approvals else None, timeout=10)
        [pending] = src.local_approvals()
        assert pending["toolName"] == "wipe" and pending["title"] == "Wipe" and changes == [1]
        assert pending["chat"] == lab.chat and pending["clientId"] == "notebook"
        assert '"/a"' in pending["toolInput"]
        wb.inputs.refresh()
        [entry] = wb.inputs.model["entries"]
        assert (
            entry["kind"] == "toolClientExecution"
            and entry["localApproval"]["toolCallId"] == pending["toolCallId"]
        )
        wb.inputs._on_custom_msg(
            wb.inputs, {"type": "local_approval", "toolCallId": pending["toolCallId"], "approved": True}
        )
        assert src.local_approvals() == [] and wb.inputs.error == ""
        turn = await first
        assert turn.tool_calls[0].status == "completed" and turn.tool_calls[0].result_text == "wiped /a"
        assert changes == [1, 1]
        with pytest.raises(LookupError):
            src.decide_local(pending["toolCallId"], True)
        # a denial fails the call (the tool never runs)
        second = lab.start("again", script=[call("wipe", path="/b")])
        await lab.client.wait_for(lab.chat, lambda _s: True if lab.client.approvals else None, timeout=10)
        src.decide_local(src.local_approvals()[0]["toolCallId"], False)
        turn = await second
        assert turn.tool_calls[0].status == "completed" and turn.tool_calls[0].success is False
        await asyncio.sleep(0)
        unsubscribe()
        wb.close()
        # a replayed log has none and refuses decisions
        from ahp_lab.lab import LabReplay, LabSource

        ro = LabSource(LabReplay(lab.store))
        assert ro.local_approvals() == []
        with pytest.raises(PermissionError):
            ro.decide_local("x", True)
        ro.subscribe_local_approvals(lambda: None)()

    _run(main)
