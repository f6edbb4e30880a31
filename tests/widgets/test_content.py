"""Display forms shared by the chat and the timeline: one status for a failed call, and card text
that does not repeat the tool's title."""

from ahp_lab.widgets.content import tool_call_view


def _call(**fields):
    return {"toolCallId": "c1", "toolName": "drop_table", "displayName": "Drop Table", **fields}


def test_a_failed_completion_reads_failed_and_completed_failed_in_the_detail():
    failed = _call(
        status="completed", success=False, pastTenseMessage="Drop Table failed", error={"message": "no"}
    )
    lane = tool_call_view(failed, "k", full=False)
    detail = tool_call_view(failed, "k", full=True)
    assert (lane["status"], lane["failed"], lane["statusLabel"]) == ("completed", True, "failed")
    assert detail["statusLabel"] == "completed · failed" and detail["errorMessage"] == "no"
    ok = tool_call_view(_call(status="completed", success=True), "k", full=False)
    assert (ok["failed"], ok["statusLabel"]) == (False, "completed")
    for status in ("running", "cancelled", "pending-result-confirmation"):
        view = tool_call_view(_call(status=status, success=False), "k", full=False)
        assert (view["failed"], view["statusLabel"]) == (False, status)


def test_the_card_does_not_repeat_the_title_as_its_summary():
    for generic in ("Ran Drop Table", "Drop Table succeeded", "Drop Table failed", "ran drop table"):
        view = tool_call_view(
            _call(status="completed", success=True, pastTenseMessage=generic), "k", full=False
        )
        assert view["summary"] == "", generic
    told = tool_call_view(_call(status="completed", success=True, pastTenseMessage="Dropped 3 tables"), "k")
    assert told["summary"] == "Dropped 3 tables"
    assert told["pastTense"]["text"] == "Dropped 3 tables"  # the detail keeps the field as it is
