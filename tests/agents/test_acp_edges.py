"""What an ACP agent may legitimately do at the edges of the protocol: announce commands before
``session/new`` is answered, split a character between chunks, offer only an "always" permission,
read lines of a file with other line separators in it, write into a folder that does not exist
yet, and ask for a terminal that keeps no output. Real agent subprocesses (``bad_agent.py``)."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from ahp_lab.protocol.jsonvalue import to_json
from ahp_lab.protocol.uris import file_uri

from .conftest import SECRET_ENV, acp_lab, arun, bad_agent, pending_call, transitions


def test_commands_announced_before_the_session_is_answered_are_offered(tmp_path: Path) -> None:
    """Each once, and only those a ``/`` word can name: one listed twice was offered twice, and a
    name with a line break gave a completion whose text held one (ACP agent round 10)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("early_update")) as lab:
            assert lab.session_state["lifecycle"] == "ready"
            items = await lab.client.request(
                "completions", {"channel": lab.chat, "kind": "userMessage", "text": "/ea", "offset": 3}
            )
            assert [i["insertText"] for i in items["items"]] == ["/early "]
            assert (await lab.send("go")).status == "complete"

    arun(go())


def test_updates_read_together_with_the_answer_to_session_new_are_all_applied(tmp_path: Path) -> None:
    """The agent's title, mode and commands come in one read with session/new's answer: the
    session's channel does not exist yet when they are handled, and each still shows, in order."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("early_batch")) as lab:
            assert (await lab.send("go")).status == "complete"  # the session has been set up by now
            assert lab.session_state["title"] == "Named early"
            assert lab.session_state["config"]["values"]["mode"] == "code"
            items = await lab.client.request(
                "completions", {"channel": lab.chat, "kind": "userMessage", "text": "/ea", "offset": 3}
            )
            assert [i["insertText"] for i in items["items"]] == ["/early "]

    arun(go())


@pytest.mark.parametrize(
    ("mode", "text"),
    [
        # a smiley split between two chunks as its two UTF-16 halves arrives whole
        ("surrogates", "working... smile \U0001f600 done"),
        # a run of text that ends (a tool call, the turn's end) on a first half shows U+FFFD there
        # instead of losing the character without a trace
        ("lone_halves", "working... before the call \ufffd\n\nafter it \ufffd"),
    ],
)
def test_characters_cut_by_utf16_units_arrive_whole_or_as_replacement_characters(
    tmp_path: Path, mode: str, text: str
) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent(mode)) as lab:
            turn = await lab.send("go")
            assert turn.status == "complete"
            assert turn.text == text
            out = tmp_path / "log.jsonl"
            lab.export(out)  # strict UTF-8: a lone surrogate used to make this raise
            assert ("\U0001f600" if mode == "surrogates" else "\ufffd") in out.read_text(encoding="utf-8")

    arun(go())


def test_a_character_cut_by_an_agent_that_dies_is_kept_as_a_replacement_character(tmp_path: Path) -> None:
    """The agent's last chunk ends on the first half of a character, then the agent exits: the
    turn fails, and the half it held shows as U+FFFD instead of vanishing with the turn."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("lone_half_dies")) as lab:
            turn = await lab.send("go")
            assert turn.status == "error"
            assert turn.text == "working... last words \ufffd"

    arun(go())


def test_a_plain_approval_never_grants_always(tmp_path: Path) -> None:
    """Offered only "always allow" (and a reject), a plain ``lab.approve()`` says so instead of
    granting it for the rest of the session; the explicit choice is remembered, and a later
    request that offers no way to allow is put to the person again."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("ask", "always")) as lab:
            pending = lab.start("go")
            await pending_call(lab)
            with pytest.raises(ValueError, match=r"no one-time approve option, only 'aa' \(Always allow\)"):
                lab.approve()
            lab.approve(option="aa")
            assert 'outcome={"optionId": "aa"' in (await pending).text
            again = await asyncio.wait_for(lab.send("again"), 20)  # remembered: nobody is asked
            assert 'outcome={"optionId": "aa"' in again.text
            # the third request offers only "Reject": the remembered allow cannot answer it
            third = lab.start("third")
            call = await pending_call(lab)
            assert [o["id"] for o in call["options"]] == ["ro"]
            lab.deny()
            assert 'outcome={"optionId": "ro"' in (await third).text

    arun(go())


def test_files_and_a_terminal_that_keeps_no_output(tmp_path: Path) -> None:
    filler = ("x" * 99 + "\n") * 90_000  # 9 MB: over the host's read limit for a whole file
    text = "one\ntwo\fstill two\u2028and still\nthree\nfour\n" + filler
    (tmp_path / "lines.txt").write_text(text, encoding="utf-8")

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("files", str(tmp_path))) as lab:
            turn = await lab.send("go")
            assert turn.status == "complete", turn.error
            assert "line3='three\\n'" in turn.text  # lines end at \n only, and a few lines of a big file
            assert "write=True" in turn.text
            assert (tmp_path / "new" / "deeper" / "out.txt").read_text() == "written"
            assert "output='' truncated=True" in turn.text  # outputByteLimit 0 keeps nothing

    arun(go())


def test_a_read_is_summed_up_in_lines_as_the_agent_counts_them(tmp_path: Path) -> None:
    """The timeline's "N lines" for a file read counts lines ending at \\n, as ``line`` and
    ``limit`` do: a form feed, U+2028 or a lone \\r inside a line does not make more of them."""
    path = tmp_path / "odd.txt"
    path.write_bytes("one\fstill one\u2028still one\r\ntwo\rstill two\nthree".encode())

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("read_all", str(path))) as lab:
            turn = await lab.send("go")
            assert turn.status == "complete" and "read 44 characters" in turn.text
            assert [c.state["content"][0]["text"] for c in turn.tool_calls] == [f"read {path}: 3 lines"]

    arun(go())


def test_a_missing_file_is_acps_resource_not_found_and_odd_text_a_refused_write(tmp_path: Path) -> None:
    """An agent's read of a missing file got -32603 (an internal error), not ACP's -32002 that
    agents look for; a write of text with a lone surrogate got -32603 with Python's exception,
    a traceback in the log, and no call in the timeline."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("read_all", str(tmp_path / "missing.txt"))) as lab:
            turn = await lab.send("go")
            assert "[read_all failed (-32002): Resource not found:" in turn.text
            assert [c.success for c in turn.tool_calls] == [False]
        async with acp_lab(tmp_path, bad_agent("write_odd", str(tmp_path / "odd.txt"))) as lab:
            turn = await lab.send("go")
            assert "[write_odd failed (-32602): the content is not valid Unicode" in turn.text
            [call] = turn.tool_calls
            assert not call.success and "refused: the content is not valid Unicode" in call.result_text
            assert not (tmp_path / "odd.txt").exists()

    arun(go())


def test_a_write_outside_the_working_directories_creates_no_folder(tmp_path: Path) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    (work / "lines.txt").write_text("a\nb\nc\n")

    async def go() -> None:
        # the agent's folder argument points the write at work/../outside/new/deeper/out.txt
        async with acp_lab(work, bad_agent("files", str(work / ".." / "outside"))) as lab:
            turn = await lab.send("go")
            assert turn.status == "complete", turn.error
            assert "write=False" in turn.text and "outside the session's working directories" in turn.text
            assert not outside.exists()

    arun(go())


def test_a_change_the_agent_takes_in_part_stays_in_part(tmp_path: Path) -> None:
    """The agent takes the first property and refuses the second (never fast when detailed): only
    the refused one is put back, so the session's state says what the agent runs with."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("options")) as lab:
            await lab.adispatch(
                {"type": "session/configChanged", "config": {"verbosity": "detailed", "fast": True}}
            )
            # the agent refuses fast: the host puts it back (until then it reads True)
            await lab.wait_for(lab.session, lambda s: s["config"]["values"]["fast"] is False or None)
            values = lab.session_state["config"]["values"]
            assert (values["verbosity"], values["fast"]) == ("detailed", False)
            turn = await lab.send("go")
            assert json.loads(turn.text.removeprefix("working... ")) == {
                "fast": False,
                "verbosity": "detailed",
            }

    arun(go())


def test_a_value_the_agent_offers_later_is_taken(tmp_path: Path) -> None:
    """A ``config_option_update`` carries the options' full choices: a value offered there is the
    agent's value, not a violation (the session's schema keeps its first choices)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("options")) as lab:
            turn = await lab.send("offer")
            assert turn.status == "complete", turn.error
            assert lab.session_state["config"]["values"]["verbosity"] == "verbose"

    arun(go())


def test_legacy_mode_updates_are_ignored_beside_a_mode_option(tmp_path: Path) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("mode_option")) as lab:
            assert lab.session_state["config"]["values"]["mode"] == "careful"
            turn = await lab.send("go")
            assert turn.status == "complete", turn.error
            assert lab.session_state["config"]["values"]["mode"] == "careful"

    arun(go())


def test_a_restart_restores_every_value_the_fresh_process_takes_and_shows_what_it_refused(
    tmp_path: Path,
) -> None:
    """The old process offered "verbose" later; the fresh one does not, and refuses it. Restoring
    stopped at that refusal (fast was never sent) and the session kept showing "verbose": now each
    value is restored on its own and the session says what the agent runs with."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("options")) as lab:
            await lab.adispatch({"type": "session/configChanged", "config": {"fast": True}})
            await lab.wait_for(lab.session, lambda s: s["config"]["values"]["fast"] is True or None)
            assert (await lab.send("offer")).status == "complete"
            assert lab.session_state["config"]["values"]["verbosity"] == "verbose"
            await lab.restart_agent()
            values = lab.session_state["config"]["values"]
            assert (values["verbosity"], values["fast"]) == ("normal", True)
            turn = await lab.send("go")
            assert turn.status == "complete", turn.error
            assert json.loads(turn.text.removeprefix("working... ")) == {"fast": True, "verbosity": "normal"}

    arun(go())


def test_a_confirmation_the_agents_options_cannot_carry_is_rejected_and_the_call_still_waits(
    tmp_path: Path,
) -> None:
    """Another client approving without naming an option, where the agent offers no one-time
    allow, made the chat show the call approved while the agent was told ``cancelled`` (in ACP:
    the whole turn was cancelled). A denial naming the allow option made the agent run the tool
    that the chat showed denied. An approval with an edited input showed the edit approved while the
    agent ran its own. Each is rejected with the reason; the call keeps waiting."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("ask", "always")) as lab:
            pending = lab.start("go")
            call = await pending_call(lab)
            turn_id = lab.state(lab.chat)["activeTurn"]["id"]
            base = {"type": "chat/toolCallConfirmed", "turnId": turn_id, "toolCallId": call["toolCallId"]}
            attempts = [
                {**base, "approved": True, "confirmed": "user-action"},
                {**base, "approved": False, "reason": "denied", "selectedOptionId": "aa"},
                {**base, "approved": True, "confirmed": "user-action", "selectedOptionId": "ro"},
                # ACP answers with an option only: the chat showed the edit approved, the agent ran
                # its own input (ACP agent round 9)
                {**base, "approved": True, "confirmed": "user-action", "selectedOptionId": "aa",
                 "editedToolInput": '{"cmd": "true"}'},
            ]  # fmt: skip
            for action in attempts:
                lab.client.dispatch(lab.chat, action)
            await lab.client.settle()
            reasons = [r["reason"] for r in list(lab.client.rejections)[-4:]]
            assert (
                "offers no option that allows tool call" in reasons[0] and "'aa' (Always allow)" in reasons[0]
            )
            assert (
                reasons[1].startswith("option 'aa' allows tool call") and "the action denies it" in reasons[1]
            )
            assert (
                reasons[2].startswith("option 'ro' rejects tool call")
                and "the action approves it" in reasons[2]
            )
            assert "the agent cannot run an edited input" in reasons[3]
            assert (await pending_call(lab))[
                "status"
            ] == "pending-confirmation"  # still the person's to decide
            lab.approve(option="aa")
            turn = await pending
            assert turn.status == "complete" and 'outcome={"optionId": "aa"' in turn.text

    arun(go())


def test_a_refusal_quoting_the_agents_options_never_carries_a_secret(tmp_path: Path) -> None:
    """The reason a confirmation is rejected quotes the agent's option names: one named with the
    secret the person gave the agent went unmasked into the echo, the log and the export."""
    from .conftest import SECRET_ENV

    secret = SECRET_ENV["BAD_AGENT_KEY"]

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("ask", "leaky")) as lab:
            pending = lab.start("go")
            call = await pending_call(lab)
            turn_id = lab.state(lab.chat)["activeTurn"]["id"]
            lab.client.dispatch(
                lab.chat,
                {
                    "type": "chat/toolCallConfirmed",
                    "turnId": turn_id,
                    "toolCallId": call["toolCallId"],
                    "approved": True,
                    "confirmed": "user-action",
                },
            )
            await lab.client.settle()
            reason = lab.client.rejections[-1]["reason"]
            assert "'aa' (Always allow using ***)" in reason and secret not in reason
            exported = io.StringIO()
            lab.store.export(exported)
            assert secret not in exported.getvalue()
            lab.approve(option="aa")  # (it offers no way to deny: that is refused too)
            assert (await pending).status == "complete"

    arun(go())


def test_a_denial_naming_no_option_reaches_an_agent_that_only_rejects_always_as_a_rejection(
    tmp_path: Path,
) -> None:
    """With no one-time reject on offer, a plain denial was sent as ``cancelled`` (in ACP, the
    whole turn) while the chat showed the call denied; it is the agent's "always reject", which
    this one denial does not make the bridge remember."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("ask", "reject_always")) as lab:
            for prompt in ("go", "again"):  # asked again: the fallback was not remembered
                pending = lab.start(prompt)
                call = await pending_call(lab)
                turn_id = lab.state(lab.chat)["activeTurn"]["id"]
                denial = {"turnId": turn_id, "toolCallId": call["toolCallId"], "approved": False}
                lab.client.dispatch(
                    lab.chat, {"type": "chat/toolCallConfirmed", **denial, "reason": "denied"}
                )
                turn = await pending
                assert turn.status == "complete" and 'outcome={"optionId": "ra"' in turn.text

    arun(go())


def test_a_plain_lab_deny_is_not_remembered_as_always_reject(tmp_path: Path) -> None:
    """Offered "allow once" and "always reject", a plain ``lab.deny()`` named the "always reject"
    option itself, and the bridge took that for the person's choice: every later request of the
    kind was refused without asking anyone. It rejects this once; the next request is asked."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("ask", "reject_always")) as lab:
            for prompt in ("go", "again"):
                pending = lab.start(prompt)
                call = await asyncio.wait_for(pending_call(lab), 20)  # asked, both times
                lab.deny()
                confirmed = transitions(lab, "chat/toolCallConfirmed")[-1].action
                assert confirmed["toolCallId"] == call["toolCallId"] and "selectedOptionId" not in confirmed
                turn = await pending
                assert turn.status == "complete" and 'outcome={"optionId": "ra"' in turn.text

    arun(go())


def test_an_exit_plan_approval_is_not_remembered_and_the_next_plan_is_put_to_the_person(
    tmp_path: Path,
) -> None:
    """Seed 001's exit plan mode asks with a ``switch_mode`` call whose "Yes, and auto-accept" is an
    ``allow_always`` option: it names the mode to go on in, not a standing grant. Remembered, it
    approved every later plan of the session unread."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("ask", "exit_plan")) as lab:
            first = lab.start("plan one")
            await asyncio.wait_for(pending_call(lab), 20)
            lab.approve(option="code")
            assert 'outcome={"optionId": "code"' in (await first).text
            second = lab.start("plan two")
            call = await asyncio.wait_for(pending_call(lab), 20)  # asked again
            assert call["status"] == "pending-confirmation" and call.get("confirmed") is None
            lab.deny(option="plan")
            assert 'outcome={"optionId": "plan"' in (await second).text

    arun(go())


def test_an_approved_call_keeps_its_approval_its_input_and_the_hosts_notes(tmp_path: Path) -> None:
    """After a person approved a call, the agent changing its input does not make the approval
    read "not-needed" (a new toolCallReady would), and the agent's own final content does not
    wipe the host's note of the file it wrote meanwhile: both show as the host's notes."""
    planted = tmp_path / "planted.txt"

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("approved_then_changed", str(planted))) as lab:
            pending = lab.start("go")
            await pending_call(lab)
            lab.approve(option="ao")
            turn = await pending
            assert turn.status == "complete", turn.error
            (call,) = turn.tool_calls
            assert call.state["confirmed"] == "user-action" and call.state["selectedOption"]["id"] == "ao"
            assert call.state["toolInput"] == '{"v": 1}'  # what the person approved
            texts = [c.get("text", "") for c in call.state["content"]]
            assert "all 12 tests passed" in texts
            assert any(t.startswith(f"write {planted}: wrote 7 bytes") for t in texts), texts
            assert any('changed this call\'s input after it started: {"v": 2}' in t for t in texts), texts
            assert planted.read_text() == "planted"

    arun(go())


def test_a_second_permission_request_for_a_waiting_call_is_refused_and_one_for_an_ended_call_too(
    tmp_path: Path,
) -> None:
    """One answer of the person cannot be told apart for two requests about the same call: the
    second is refused at once (-32602) and the first still waits for the person. A request
    about a call the agent completed is refused too, not answered "cancelled" (a cancelled turn)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("twice_asked")) as lab:
            pending = lab.start("go")
            call = await pending_call(lab)
            assert call["invocationMessage"] == "First ask"
            await lab.wait_for(lab.chat, lambda c: "[second_ask failed (-32602)" in json.dumps(c), timeout=20)
            lab.approve(option="ao")
            turn = await pending
            assert 'first={"optionId": "ao", "outcome": "selected"}' in turn.text
            assert "a permission request for tool call 'p1' is already waiting for an answer" in turn.text
            assert "[ended_ask failed (-32602): " in turn.text and "has already ended" in turn.text

    arun(go())


def test_a_tool_call_id_too_long_to_show_fails_the_agent(tmp_path: Path) -> None:
    """A tool call's id ends up in state, URIs and on screen: one of 300 characters is the agent
    breaking the bridge's bound, told as the turn's error, and nothing of the call is shown."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("odd_ids")) as lab:
            turn = await lab.send("go")
            assert turn.status == "error"
            assert "tool call id is 300 characters long, over 200" in turn.error["message"]
            assert not turn.tool_calls

    arun(go())


def test_a_key_a_command_writes_in_two_parts_reaches_no_terminal_state(tmp_path: Path) -> None:
    """A terminal's output was redacted a read at a time: a key the command wrote in two parts
    (or one across two 64 KiB reads) left 23 of its 43 characters in ``terminal/data``, the log and
    the export, while the tool call's whole text was masked (an ACP agent of our own). The output
    is redacted across its reads as streamed text is."""
    from .conftest import SECRET_ENV

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("terminal_key")) as lab:
            turn = await lab.send("go")
            assert turn.status == "complete", turn.error
            terminal = next(uri for uri in lab.store.channels() if uri.startswith("ahp-terminal:"))
            data = "".join(
                t.action.get("data", "") for t in lab.transitions if t.channel == terminal and t.accepted
            )
            assert data == "key *** and *** done\n"
            # the output as every view has it (the command line, the terminal's title and the title
            # of the call that shows it, holds the halves as the agent wrote them: they are its
            # text, not output)
            [call] = turn.tool_calls
            outputs = [i.get("text") or i["result"]["preview"] for i in call.state["content"]]
            assert "key *** and *** done" in outputs[0]
            shown = json.dumps([lab.store.state(terminal)["content"], outputs])
            for fragment in ("C3d4E5A1b2", "E5A1b2C3d4E5", SECRET_ENV["BAD_AGENT_KEY"][:9], "ecret-value"):
                assert fragment not in shown and fragment not in data, fragment

    arun(go())


def test_credentials_an_agent_streams_a_character_at_a_time_reach_no_record(tmp_path: Path) -> None:
    """An agent sending one character a chunk cut every key after its first letter: the "s" of an
    sk- key went out alone, and the rest ("k-proj-…") no rule knew, so every credential reached the
    chat, the export and the frames whole. The text is masked as if it had come in one chunk."""
    secrets = ("Q7xW9zR2tY4uI6oP8aS1", "hunter2xyz", "abcdef123456789", "A1b2C3d4E5f6G7h8I9j0")

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("char_key")) as lab:
            turn = await lab.send("go")
            assert turn.status == "complete", turn.error
            lab.export(tmp_path / "log.jsonl")
            records = {
                "state": json.dumps(lab.state(lab.chat)),
                "export": (tmp_path / "log.jsonl").read_text(),
                "frames": json.dumps([f.to_json() for f in lab.acp_frames]),
            }
            for name, text in records.items():
                for secret in secrets:
                    assert secret[:8] not in text, (name, secret)
            parts = lab.state(lab.chat)["turns"][-1]["responseParts"]
            shown = {
                p.get("kind"): p.get("content") for p in parts if p.get("kind") in ("markdown", "reasoning")
            }
            assert shown["markdown"].endswith("use *** with API_KEY=***, then Bearer *** ok"), shown
            assert shown["reasoning"] == "the token *** is set", shown
            assert len(lab.acp_frames) > 100  # a frame a character

    arun(go())


def test_an_answer_read_after_the_agent_exited_is_its_answer(tmp_path: Path) -> None:
    """The host noticed an agent's exit before it read the answer the agent wrote before exiting
    (under load: the flaky steering test of stop 50), and failed a turn the agent had answered.
    What it wrote is read to the end of its output first: here the answer is long to read, so the
    exit is seen before it is. The next turn says the agent exited."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("answer_then_exit")) as lab:
            turn = await lab.send("go")
            assert turn.status == "complete", turn.error
            again = await lab.send("again")
            assert again.status == "error" and "exited" in again.error["message"], again.error

    arun(go())


def test_the_start_of_a_key_a_failed_turn_ended_on_is_masked_in_the_frames(tmp_path: Path) -> None:
    """``lab.acp_frames`` read a turn's chunks as one stream, ended only by a prompt's result: a
    turn the agent answered with an error left the start of a key held, and it showed unmasked in
    the next turn's first chunk, glued to text the agent sent with another prompt (ACP agent round
    12). The chat masks it; the frames now do too, each chunk keeping its own text."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("key_start_error")) as lab:
            assert (await lab.send("first")).status == "error"
            assert (await lab.send("second")).status == "complete"
            chunks = [
                f.message["params"]["update"]["content"]["text"]
                for f in lab.acp_frames
                if f.label == "session/update agent_message_chunk"
            ]
            assert chunks == ["working... ", "the key is ***", "working... ", " and more"], chunks
            assert "Q7xW9zR2t" not in json.dumps(lab.state(lab.chat))

    arun(go())


def test_a_key_streamed_in_pieces_reaches_no_record_in_any_piece(tmp_path: Path) -> None:
    """A key the host knows, cut by a thought between its two message chunks, left its tail in
    the next markdown part (a new stream); each frame of ``lab.acp_frames`` was redacted alone,
    so an sk- key in two thought chunks showed there whole but for its "sk-"; and the start of a
    key a turn ended on went in as it was, under the length the generic rules need."""
    key = SECRET_ENV["BAD_AGENT_KEY"]
    token_tail = "proj-Q7xW9zR2tY4uI6oP8aS1dF3gH5jK7lZ0xC2vB4nM6"

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("split_key")) as lab:
            turn = await lab.send("go")
            assert turn.status == "complete", turn.error
            lab.export(tmp_path / "log.jsonl")
            frames = json.dumps([f.to_json() for f in lab.acp_frames])
            records = {
                "state": json.dumps(lab.state(lab.chat)),
                "export": (tmp_path / "log.jsonl").read_text(),
                "frames": frames,
            }
            for name, text in records.items():
                for piece in (key[10:], key[:10], token_tail[:12], "sk-proj-Q7xW9zR2"):
                    assert piece not in text, (name, piece)
            parts = lab.state(lab.chat)["turns"][-1]["responseParts"]
            shown = [p.get("content") for p in parts if p.get("kind") in ("markdown", "reasoning")]
            assert shown == ["working... key: ", "thinking *** done", "*** done; the other: ***"], shown
            assert "done; the other: ***" in frames and "thinking " in frames

    arun(go())


def test_a_command_printing_fast_in_a_tool_call_shows_its_tail_a_few_times_a_second(tmp_path: Path) -> None:
    """Each chunk of a terminal's output re-sent the tool call's whole content (its 4,000-character
    tail): 20,000 short lines made 17,379 actions (round 8), 82 MB in the log and every client's socket, for
    200 KB of output. The tail is shown at most four times a second, and as the command ends."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("terminal_call")) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 60)
            assert turn.status == "complete", turn.error
            [call] = turn.tool_calls
            changes = [
                t
                for t in lab.transitions.where(channel=lab.chat, type="chat/toolCallContentChanged")
                if t.accepted
            ]
            elapsed_s = (turn.state["duration"] or 0) / 1000
            assert 1 <= len(changes) <= 4 * elapsed_s + 4, (len(changes), elapsed_s)
            assert call.state["content"][-1]["text"].endswith("line 599\n")

    arun(go())


def test_a_command_a_signal_ended_shows_its_exit_code_in_its_tool_call(tmp_path: Path) -> None:
    """The terminal channel said 137 for a killed command (round 7), and its tool call showed no
    exit code at all, as if it were still running (ACP probe, round 8)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("killed_call")) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 30)
            assert turn.status == "complete", turn.error
            [call] = turn.tool_calls
            [item] = [c for c in call.state["content"] if c["type"] == "terminal"]
            assert item["result"]["exitCode"] == 137

    arun(go())


def test_a_title_and_usage_from_the_agent_are_shown_as_every_client_can_read_them(tmp_path: Path) -> None:
    """A session title with a right-to-left override, a newline and an escape sequence went to
    every connection's session list as it was; usage counts past 2^53 (which a JavaScript client
    reads as other numbers) and a 5,000-character currency were kept (ACP probe, round 8)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("odd_info")) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 30)
            assert turn.status == "complete", turn.error
            assert lab.session_state["title"] == "evil linered"
            usage = [t.action["usage"] for t in lab.transitions.where(channel=lab.chat, type="chat/usage")]
            assert usage[-1]["_meta"]["acp"] == {"used": 1_000, "size": 200_000}
            assert all(2**53 not in (u.get("_meta", {}).get("acp") or {}).values() for u in usage)
            assert "XXXX" not in json.dumps(usage)

    arun(go())


async def _steered(lab, marker: Path):
    """The turn "first", steered with "bananas" while the agent works on it; the agent ends its first
    prompt once ``marker`` exists (bad_agent's steered modes)."""
    pending = lab.start("first")
    await lab.wait_for(lab.chat, lambda c: c.get("activeTurn") or None)
    lab.start("bananas", steer=True)
    await lab.wait_for(lab.chat, lambda c: c.get("steeringMessage") or None)
    marker.touch()  # the agent ends its first prompt
    return await pending


def test_a_steering_message_reaches_the_agent_once_its_prompt_ends(tmp_path: Path) -> None:
    """A steering message sent while an ACP agent worked was accepted, then never delivered nor
    removed: it stayed in the chat through the next turns. ACP takes a person's words only between
    prompts: the host takes it once the agent's prompt ends and sends it as a further prompt of
    the same turn (chat-channel §10: the host consumes steering messages during a turn)."""

    async def go() -> None:
        marker = tmp_path / "go-on"
        async with acp_lab(tmp_path, bad_agent("steered", str(marker))) as lab:
            turn = await _steered(lab, marker)
            assert turn.status == "complete", turn.error
            assert "heard: bananas" in turn.text
            # what it sent with its first answer goes on in the turn (it was dropped: ACP agent round 10)
            assert "[said with the first answer] " in turn.text
            assert "steeringMessage" not in lab.state(lab.chat)
            # the turn's usage is its prompts' together (it kept the last one's: a verification round)
            assert lab.state(lab.chat)["turns"][-1]["usage"]["inputTokens"] == 105

    arun(go())


def test_a_steering_message_the_agent_dies_before_getting_is_said_not_lost(tmp_path: Path) -> None:
    """The steering message was taken from the chat before the agent had it: an agent that exited
    after its first prompt failed the turn, and the message was gone from the chat, the turn and
    the error (a verification round). The error names it."""

    async def go() -> None:
        marker = tmp_path / "go-on"
        async with acp_lab(tmp_path, bad_agent("steered_dies", str(marker))) as lab:
            turn = await _steered(lab, marker)
            assert turn.status == "error"
            assert "the steering message 'bananas' was not delivered" in turn.error["message"]

    arun(go())


def test_a_config_change_racing_the_agents_own_report_ends_as_the_agent_runs(tmp_path: Path) -> None:
    """A client set a verbosity and a mode while the agent, slow to answer, reported the values it
    had then: the host kept the agent's stale reports, though the agents' answers to the set
    requests came after them, and showed ask/normal while the agent ran code/terse, turn after turn
    (ACP agent round 9)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("racing")) as lab:
            change = {"type": "session/configChanged", "config": {"verbosity": "terse", "mode": "code"}}
            assert (await lab.adispatch(change, lab.session)).accepted
            turn = await lab.send("which?")  # sent once the change has reached the agent
            assert json.loads(turn.text.removeprefix("working... ")) == {
                "fast": False, "mode": "code", "verbosity": "terse"
            }  # fmt: skip
            values = lab.session_state["config"]["values"]
            assert (values["mode"], values["verbosity"]) == ("code", "terse")

    arun(go())


def test_an_image_whose_data_is_not_base64_is_said_not_served_as_an_image(tmp_path: Path) -> None:
    """An image chunk whose data was not base64 was served through resourceRead as UTF-8 text
    labelled image/png (ACP agent round 9). The turn says what came instead."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("bad_image")) as lab:
            turn = await lab.send("show me")
            assert turn.status == "complete", turn.error
            assert "[image content not kept: its data is not base64 (as image/png)]" in turn.text
            parts = turn.state["responseParts"]
            assert not [p for p in parts if p.get("kind") == "contentRef"]

    arun(go())


def test_a_mode_the_agent_switches_to_after_its_answer_is_the_mode_shown(tmp_path: Path) -> None:
    """A report of its own the agent sends after answering set_mode (read with the answer) is newer
    than the answer: the host put the sent mode back over it, and showed code while the agent ran
    ask (a verification round)."""

    assert arun(_mode_after_asking(tmp_path, "switches_back", "code")) == ("ask", "ask")


async def _mode_after_asking(tmp_path: Path, agent_mode: str, asked: str) -> tuple[str, str]:
    """(the mode the bad agent in ``agent_mode`` says it runs, the mode the session shows) after a
    client asked for mode ``asked``."""
    async with acp_lab(tmp_path, bad_agent(agent_mode)) as lab:
        change = {"type": "session/configChanged", "config": {"mode": asked}}
        assert (await lab.adispatch(change, lab.session)).accepted
        turn = await lab.send("which?")
        return json.loads(turn.text.removeprefix("working... "))["mode"], lab.session_state["config"][
            "values"
        ]["mode"]


def test_a_mode_the_agent_switches_to_before_refusing_the_one_it_was_sent_is_the_mode_shown(
    tmp_path: Path,
) -> None:
    """Asked for a mode, the agent switched itself to another (seed 001: a mode change may come from
    the agent at any time), then refused the one it was sent: the host put back the mode from before
    the request over the agent's own report, and showed ask while the agent ran code, the mode that
    edits without asking (ACP agent round 10). A refused change is put back only where nothing
    changed it since."""

    assert arun(_mode_after_asking(tmp_path, "switches_then_refuses", "plan")) == ("code", "code")


def test_the_persons_key_in_the_agents_modes_reaches_neither_state_nor_another_client(tmp_path: Path) -> None:
    """The key handed to the agent (``AcpAgent(env=...)``) in a mode's description and another mode's
    id went into the session's config schema, the export, every client's view and
    ``resolveSessionConfig``'s answer unmasked, while the value the agent reported was masked, so
    that it was not among the values the schema offered (ACP agent round 10)."""
    key = SECRET_ENV["BAD_AGENT_KEY"]

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("secret_modes")) as lab:
            turn = await lab.send("go")
            assert turn.status == "complete"
            config = lab.session_state["config"]
            assert (
                config["values"]["mode"] == "m-***"
                and "m-***" in config["schema"]["properties"]["mode"]["enum"]
            )
            out = tmp_path / "log.jsonl"
            lab.export(out)
            resolved = await lab.client.request("resolveSessionConfig", {})
            assert key not in out.read_text() and key not in json.dumps(resolved)
            assert key not in json.dumps(to_json(lab.session_state))

    arun(go())


def test_terminals_asked_for_at_once_stay_within_the_sessions_limit(tmp_path: Path) -> None:
    """Sixty ``terminal/create`` requests sent at once all started a process, against a limit of 16
    a session may have: each was checked before the first process had started, and recorded
    after (ACP agent round 10). The ones still starting count."""
    from ahp_lab.protocol.limits import Limits

    async def go() -> None:
        async with acp_lab(
            tmp_path, bad_agent("terminal_burst"), limits=Limits(max_agent_terminals=5)
        ) as lab:
            turn = await lab.send("go")
            assert "created=5" in turn.text and turn.text.count("release one first") == 19
            assert len(lab.host.store.state("ahp-root://")["terminals"]) == 5

    arun(go())


def test_a_call_that_wrote_a_file_keeps_saying_so_when_its_turn_is_cancelled(tmp_path: Path) -> None:
    """An agent rewrote a file inside a running call (the host noted it in the call), and the person
    cancelled: the cancel dropped the open call's content (chat-channel T13), so nothing in the chat
    said the file had changed (ACP agent round 10). Such a call now ends first, its note kept,
    saying it was cancelled and the file stays written."""
    (tmp_path / "important.py").write_text("old\n")

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("write_then_wait", str(tmp_path))) as lab:
            pending = lab.start("go")

            def wrote(chat: dict) -> bool:
                parts = (chat.get("activeTurn") or {}).get("responseParts") or []
                return "important.py: wrote" in json.dumps(to_json(parts))

            await lab.wait_for(lab.chat, wrote, timeout=30)
            await lab.cancel()
            turn = await asyncio.wait_for(pending, 30)
            assert turn.status == "cancelled" and (tmp_path / "important.py").read_text() == "new\n"
            [call] = turn.tool_calls
            assert call.state["status"] == "completed" and call.state["success"] is False
            assert "important.py: wrote 4 bytes" in json.dumps(call.state["content"])
            assert "the files it wrote stay written" in call.state["error"]["message"]

    arun(go())


def test_what_the_agent_reports_of_an_ended_call_is_said_beside_it(tmp_path: Path) -> None:
    """An agent announced a call again under the id of one that had completed, then failed it with
    "boom": AHP kept the first call's success and nothing in the chat said the failure (it was
    only logged; ACP agent round 10). An ended call stays as it ended (AHP's end is final), and a
    notification beside it says each status the agent reported after."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("reuses_id")) as lab:
            turn = await lab.send("go")
            [call] = turn.tool_calls
            assert call.state["status"] == "completed" and call.state["success"] is True
            notes = [
                p["content"] for p in turn.state["responseParts"] if p.get("kind") == "systemNotification"
            ]
            assert len(notes) == 2 and "after it had ended: it is running" in notes[0]
            assert "(t1) after it had ended: it failed, boom" in notes[1]

    arun(go())


def test_what_a_cell_reads_of_the_agents_frames_is_masked(tmp_path: Path) -> None:
    """``lab.acp_frames`` was masked, but the frame log itself, which docs/acp.md names as the way
    back (``lab.agent.frames.frames_for_seq(seq)``) and notebook 08 waits on
    (``lab.agent.frames.wait_for(...)``), gave the frames as exchanged: a frame printed in a cell
    put the agent's key into the saved notebook (ACP agent round 13)."""
    key = SECRET_ENV["OFFLINE_AGENT_TOKEN"]

    async def go() -> None:
        async with acp_lab(tmp_path) as lab:
            frames = lab.agent.frames
            since = frames.next_index
            await lab.send(f"hello {key}")
            prompt = await frames.wait_for(lambda f: f.label == "session/prompt", since=since)
            assert "hello ***" in json.dumps(prompt.message) and key not in repr(prompt)
            linked = [f for t in lab.transitions for f in frames.frames_for_seq(t.seq)]
            shown = [*frames, frames[0], *frames[-2:]]
            assert any(f.label == "session/prompt" for f in linked) and len(shown) == len(frames) + 3
            assert all(key not in repr(f) for f in linked + shown)

    arun(go())


def test_a_word_in_the_agents_env_that_it_offers_as_a_choice_stays_a_choice(tmp_path: Path) -> None:
    """``AcpAgent(env={"AGENT_DEFAULT_MODE": "plan"})`` made every "plan" a secret: the mode showed
    as ``***``, no client could choose it, and the agent's "highlight" read "***light" with
    ``high`` in its env (ACP agent round 13). What an agent offers every client as a choice is no
    secret, and a secret that is a word is masked as a word."""
    env = {**SECRET_ENV, "AGENT_DEFAULT_MODE": "plan", "AGENT_STYLE": "brief", "AGENT_PRIVATE_WORD": "config"}

    async def go() -> None:
        async with acp_lab(tmp_path, env=env) as lab:
            schema = lab.session_state["config"]["schema"]["properties"]
            assert "plan" in schema["mode"]["enum"] and "brief" in schema["verbosity"]["enum"]
            transition = await lab.adispatch({"type": "session/configChanged", "config": {"mode": "plan"}})
            assert transition.accepted
            turn = await lab.send("config")
            assert turn.text == "mode=plan verbosity=brief"
            # a word the agent does not offer stays masked, as a word only
            assert lab.host.redactor.text("config configuration") == "*** configuration"

    arun(go())


def test_a_frame_waited_for_masks_a_key_split_across_chunks(tmp_path: Path) -> None:
    """``frames.wait_for`` masked the frame it returned by itself, so the half of a key the agent
    streamed in that chunk showed, where iterating masks the chunks as one run (the review of stop
    52). Each frame waited for is the one iterating gives."""
    key = SECRET_ENV["BAD_AGENT_KEY"]

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("split_key")) as lab:
            await lab.send("go")
            frames = lab.agent.frames
            first = frames[0].index
            waited = [
                await frames.wait_for(lambda f, i=i: f.index == i) for i in range(first, first + len(frames))
            ]
            assert [f.message for f in waited] == [f.message for f in frames]
            text = json.dumps([f.message for f in waited])
            for piece in (key[10:], key[:10]):
                assert piece not in text, piece

    arun(go())


def test_a_secret_named_as_one_stays_masked_whatever_the_agent_offers(tmp_path: Path) -> None:
    """Forgetting the words an agent offers as choices forgot them for every source: with
    ``DB_PASSWORD=review`` given to one server, an agent offering a "review" mode un-masked the
    password everywhere (the review of stop 52). A value under a name that says secret stays."""
    env = {**SECRET_ENV, "AGENT_DB_PASSWORD": "code", "AGENT_STYLE": "plan"}

    async def go() -> None:
        async with acp_lab(tmp_path, env=env) as lab:
            modes = lab.session_state["config"]["schema"]["properties"]["mode"]["enum"]
            assert "plan" in modes and "code" not in modes, modes  # the password stays masked: ***
            assert lab.host.redactor.text("the code and the plan") == "the *** and the plan"

    arun(go())


def test_a_few_lines_deep_in_a_file_without_line_breaks_are_refused_early(tmp_path: Path) -> None:
    """Line 3 of an 8 GiB sparse file with no line break: the host read all of it to get there,
    its loop blocked some 30 s (a 1 TB file, an hour): the lines skipped count toward a bound now
    (hostile ACP agent, attacker round 33)."""
    with open(tmp_path / "lines.txt", "wb") as f:
        f.truncate(8 * 1024**3)  # sparse: no disk used

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("files", str(tmp_path))) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 60)
            assert "line3=" not in turn.text
            assert "takes reading more than 67,108,864 bytes" in json.dumps(lab.chat_state)

    arun(go())


def test_a_terminal_run_in_a_folder_named_after_the_agents_key_does_not_show_the_key(tmp_path: Path) -> None:
    """The terminal channel's ``cwd`` was the folder's URI unmasked: an agent naming a folder after
    the key it was given put the key in state, the export and every client's snapshot (hostile ACP
    agent, attacker round 33)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("keyed_cwd", str(tmp_path))) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 30)
            assert turn.status == "complete", turn.error
            [terminal] = [uri for uri in lab.host.store.channels() if uri.startswith("ahp-terminal:")]
            cwd = lab.host.store.state(terminal)["cwd"]
            assert cwd.startswith(file_uri(tmp_path)) and SECRET_ENV["BAD_AGENT_KEY"] not in cwd

    arun(go())


def _started_with_pid(pid: int) -> subprocess.Popen | None:
    """A program started later that got ``pid`` (forced through ns_last_pid), or ``None``."""
    for _ in range(200):
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(pid - 1))
        program = subprocess.Popen(["sleep", "1000"], start_new_session=True)
        if program.pid == pid:
            return program
        program.kill()
        program.wait()
    return None


@pytest.mark.skipif(
    not os.access("/proc/sys/kernel/ns_last_pid", os.W_OK), reason="forcing a pid's reuse needs ns_last_pid"
)
def test_stopping_a_terminal_whose_command_ended_kills_no_program_that_took_its_pid(tmp_path: Path) -> None:
    """Stopping a terminal (a restart, a dispose, a release, closing the lab) killed the process
    group of its command's pid long after the command ended: another program of the person's that
    took the pid, leading a group of its own, died (attacker round 33)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("bare_terminal")) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 30)
            assert turn.status == "complete", turn.error
            [terminal] = lab.host.agent_sessions.context(lab.session).terminals.values()
            assert terminal.process.returncode == 0  # ended, and reaped: its pid is free
            program = _started_with_pid(terminal.process.pid)
            if program is None:
                pytest.skip("the pid was not handed out again")
            try:
                terminal.kill()
                await asyncio.wait_for(lab.restart_agent(), 30)
                assert program.poll() is None  # alive
            finally:
                program.kill()
                program.wait()

    arun(go())


def test_terminals_created_and_released_by_the_thousand_are_not_listed_for_good(tmp_path: Path) -> None:
    """Every terminal event sent the whole ``RootState.terminals`` list, and released terminals
    stayed in it: 1,500 create-and-release cycles took 217 s of the loop and filled the log's
    budget (attacker round 33). The newest ended ones are listed (and keep their channels:
    test_acp_terminals)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("terminal_churn")) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 60)
            assert turn.status == "complete", turn.error
            listed = lab.host.store.state("ahp-root://")["terminals"]
            made = {t.channel for t in lab.transitions if t.channel.startswith("ahp-terminal:")}
            assert len(made) == 60 and len(listed) <= 33

    arun(go())


def test_a_terminal_shown_in_many_running_calls_is_previewed_in_a_few_once_each(tmp_path: Path) -> None:
    """Each preview tick rebuilt and sent the whole content of every running call showing the
    terminal, each time it listed it: 200 calls listing one terminal 64 times blocked the loop 8 s
    a tick and made 1,123 MB of actions for 1.2 MB of output (attacker round 33)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("terminal_everywhere")) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 60)
            assert turn.status == "complete", turn.error
            changed = transitions(lab, "chat/toolCallContentChanged")
            assert changed and all(
                sum(i["type"] == "terminal" for i in t.action["content"]) == 1 for t in changed
            )
            runs, run = [], 0  # each preview: a run of changes, one per call it refreshes
            for t in lab.transitions:
                run = run + 1 if t.type == "chat/toolCallContentChanged" else 0
                runs.append(run)
            assert max(runs) <= 8

    arun(go())
