"""A hostile ACP agent (attacker round 35): terminal output cut inside its key, output in four-byte
characters, terminals by the dozen, a command line with escapes, slash commands of 150,000
characters. Real agent subprocesses (``bad_agent.py``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from ahp_lab.protocol.jsonvalue import to_json
from ahp_lab.protocol.limits import Limits

from .conftest import SECRET_ENV, acp_lab, arun, bad_agent

NOT_RECORDED = "\n[output beyond this point is not recorded]\n"


def _data(lab, terminal: str) -> str:
    """The output a terminal channel recorded (its ``terminal/data`` in the log, joined)."""
    return "".join(
        t.action["data"]
        for t in lab.transitions
        if t.channel == terminal and t.accepted and t.type == "terminal/data"
    )


def _terminal_channels(lab) -> list[str]:
    return [uri for uri in lab.host.store.channels() if uri.startswith("ahp-terminal:")]


def test_output_cut_inside_the_agents_key_shows_no_part_of_it(tmp_path: Path) -> None:
    """The host cut a terminal's output before it masked it: where the cut fell inside a key, the
    masking no longer knew it, and the key's end (15 of its 20 characters) reached the tool call's
    preview, the chat's state, the export and the frames of ``terminal/output``. A known secret's
    end left at a cut is masked now, wherever the host cuts an output at its start."""
    key = SECRET_ENV["BAD_AGENT_KEY"]

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("terminal_cut")) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 60)
            assert turn.status == "complete", turn.error
            [call] = turn.tool_calls
            [shown] = [c for c in call.state["content"] if c["type"] == "terminal"]
            preview = shown["result"]["preview"]
            assert shown["result"]["truncated"] and preview.startswith("***Z") and preview.endswith("Z")
            export = tmp_path / "export.jsonl"
            lab.export(export)
            frames = json.dumps([f.to_json() for f in lab.acp_frames])
            [read] = [f for f in lab.acp_frames if "output" in (f.message.get("result") or {})]
            assert read.message["result"]["output"].startswith("***Z")
            recorded = json.dumps(to_json(lab.host.store.state(lab.chat))) + export.read_text() + frames
            for end in (key[5:], key[9:], key[-6:]):
                assert end not in recorded, end

    arun(go())


def test_a_terminal_keeps_its_output_cap_in_bytes_in_its_channel(tmp_path: Path) -> None:
    """The cap on what a terminal's channel records counted characters against a number of bytes:
    output in four-byte characters kept four times the cap in the host's state."""

    async def go() -> None:
        limits = Limits(max_terminal_output_bytes=6000)  # its first 4,109 in ASCII
        async with acp_lab(tmp_path, bad_agent("terminal_cut", "wide"), limits=limits) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 60)
            assert turn.status == "complete", turn.error
            [terminal] = _terminal_channels(lab)
            data = _data(lab, terminal)
            assert data.endswith(NOT_RECORDED) and "\U0001f600" in data
            assert 5960 < len(data[: -len(NOT_RECORDED)].encode()) <= 6000  # (its key masked: 17 fewer)

    arun(go())


def test_ended_terminals_no_longer_listed_leave_the_hosts_state(tmp_path: Path) -> None:
    """Terminals an agent ran one after another kept their channels, output and all, after they
    left ``RootState.terminals``: 40 of them held 160 MiB for good. Only the listed ones keep
    theirs, and a disposed session's go with it."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("terminal_churn")) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 60)
            assert turn.status == "complete", turn.error
            listed = [t["resource"] for t in lab.host.store.state("ahp-root://")["terminals"]]
            made = {t.channel for t in lab.transitions if t.channel.startswith("ahp-terminal:")}
            assert len(made) == 60 and len(listed) <= 33
            assert sorted(_terminal_channels(lab)) == sorted(listed)
            assert all(lab.host.store.state(uri)["exitCode"] == 0 for uri in listed)
            lab.host.dispose_session(lab.session)
            assert _terminal_channels(lab) == [] and lab.host.store.state("ahp-root://")["terminals"] == []

    arun(go())


def test_a_terminals_title_is_one_printable_line(tmp_path: Path) -> None:
    """A terminal's title kept the escape sequence, the right-to-left override and the line break
    of the command line the agent sent, in its channel and in every client's ``RootState.terminals``
    (the tool call showing the same command had a clean title)."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("terminal_cut")) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 60)
            assert turn.status == "complete", turn.error
            [terminal] = _terminal_channels(lab)
            titles = [lab.host.store.state(terminal)["title"]]
            titles += [t["title"] for t in lab.host.store.state("ahp-root://")["terminals"]]
            assert all(t.startswith("sh -c printf") and t.endswith("evil line") for t in titles), titles
            assert not any(c in t for t in titles for c in "\x1b\x07\u202e\n")

    arun(go())


def test_slash_commands_are_offered_cut_and_masked(tmp_path: Path) -> None:
    """An agent's 200 commands of 150,000 characters made each ``/`` completion 30 MB (over the
    16 MiB a message may be), masked again each time: the loop held 3 s a request. A command's
    description is cut at 1,000 characters, masked before the cut; a name that long is not offered."""
    key = SECRET_ENV["BAD_AGENT_KEY"]

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("big_commands")) as lab:
            assert (await asyncio.wait_for(lab.send("go"), 60)).status == "complete"
            answer = await lab.client.request(
                "completions", {"channel": lab.chat, "kind": "userMessage", "text": "/c1", "offset": 3}
            )
            items = answer["items"]
            assert len(items) == 111 and items[0]["insertText"] == "/c1 "  # c1, c10-c19, c100-c199
            described = items[0]["attachment"]["modelRepresentation"]
            assert described == "d" * 995 + "***dd…"  # its key masked, then cut
            assert key[:6] not in json.dumps(answer)
            assert len(json.dumps(answer)) < 200_000
            long = await lab.client.request(
                "completions", {"channel": lab.chat, "kind": "userMessage", "text": "/nnn", "offset": 4}
            )
            assert long["items"] == []

    arun(go())


def test_a_turn_shows_at_most_2000_of_the_agents_tool_calls(tmp_path: Path) -> None:
    """Nothing bounded the tool calls of a turn: 25,000 small ones took the loop 60 s and made a chat
    of 21 MB, more than a message may be. A turn shows 2,000; one note says the rest are not shown,
    and an update of one of those is no protocol violation."""
    from ahp_lab.agents.acp.mapping import MAX_TURN_CALLS

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("many_calls")) as lab:
            turn = await asyncio.wait_for(lab.send("go"), 120)
            assert turn.status == "complete", turn.error
            assert len(turn.tool_calls) == MAX_TURN_CALLS == 2000 and turn.text.endswith("done")
            notes = [
                p["content"] for p in turn.state["responseParts"] if p.get("kind") == "systemNotification"
            ]
            assert notes == [
                "The agent's further tool calls in this turn are not shown: it announced more than 2,000."
            ]

    arun(go())


# -- review 58: the cuts and the forgetting above, read again ---------------------------------------


async def _terminal(lab, script: str):
    """A command the host runs for the lab's agent session (a real ``sh``)."""
    ctx = lab.host.agent_sessions.contexts[lab.session]
    return await ctx.create_terminal("sh", ["-c", script])


def test_a_secret_that_repeats_its_start_cut_where_it_begins_is_masked_whole(tmp_path: Path) -> None:
    """With the cut of a kept output exactly where a secret that repeats its start at its end
    begins ("hunter2-hunter2"), only the repeated end was masked: "***-hunter2" showed, no whole
    secret left for the readers' masking to know."""

    async def go() -> None:
        async with acp_lab(tmp_path) as lab:
            lab.host.redactor.add("hunter2-hunter2")
            terminal = await _terminal(lab, "printf 'xxxxhunter2-hunter2 and more output'")
            await terminal.wait_for_exit()
            terminal.limit = len("hunter2-hunter2 and more output")  # as an outputByteLimit cutting there
            text, cut, _, _ = terminal.output()
            preview, _ = terminal.preview(len("hunter2-hunter2 and more output"))
            assert cut and text == preview == "*** and more output"

    arun(go())


def test_a_secret_the_channels_cap_cuts_is_masked_from_where_it_starts(tmp_path: Path) -> None:
    """The cap on a terminal channel's output cut a known secret after its 14th character, and the
    note that follows left nothing for the stream to hold back: 14 of its 20 characters reached the
    channel, the log and every client's view."""
    secret = "Zx9Qw8Er7Ty6Ui5Op4Lk"

    async def go() -> None:
        async with acp_lab(tmp_path, limits=Limits(max_terminal_output_bytes=4000)) as lab:
            lab.host.redactor.add(secret)
            terminal = await _terminal(lab, f"head -c 3986 /dev/zero | tr '\\0' x; printf '{secret} done'")
            await terminal.wait_for_exit()
            data = _data(lab, terminal.uri)
            assert data.endswith("x***" + NOT_RECORDED) and secret[:6] not in data

    arun(go())


def test_a_disposed_sessions_last_output_and_its_forgotten_terminals_memory(tmp_path: Path) -> None:
    """Output goes into a terminal's channel every 50 ms: a session disposed in between lost the
    command's last words. And a terminal the host dropped kept its output (up to 1 MiB) for as long
    as the agent's bridge held it."""

    async def go() -> None:
        async with acp_lab(tmp_path) as lab:
            read = asyncio.get_running_loop().create_future()
            ctx = lab.host.agent_sessions.contexts[lab.session]
            terminal = await ctx.create_terminal(
                "sh",
                ["-c", "printf 'last words'; exec sleep 30"],
                on_output=lambda t: read.done() or read.set_result(0),
            )
            await read  # read, not yet in the channel
            lab.host.dispose_session(lab.session)
            await terminal.wait_for_exit()
            logged = _data(lab, terminal.uri)
            assert logged == "last words" and terminal.forgotten and terminal.output()[0] == ""

    arun(go())


def test_terminals_the_host_dropped_leave_the_agents_bridge(tmp_path: Path) -> None:
    """The bridge kept every terminal the agent made, output and all, after the host had dropped
    it: 27 ended ones held 27 MiB. It drops them as the agent makes the next one."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("terminal_churn")) as lab:
            assert (await asyncio.wait_for(lab.send("go"), 60)).status == "complete"
            bridge = lab.agent.bridges[lab.session]
            assert len(bridge.terminals) <= 34 and not any(t.forgotten for t in bridge.terminals.values())
            assert sorted(bridge.terminals)[-1] == "term-60" or "term-60" in bridge.terminals

    arun(go())


# -- attacker round 36: the cuts and the caps above, attacked again -----------------------------------


def test_a_key_the_channels_cap_cuts_across_two_reads_is_masked(tmp_path: Path) -> None:
    """The cap's cut was masked within the read it fell in, but the stream had held back the key's
    start from the read before and gave it back joined with the note: 15 of its 20 characters
    reached the channel, the log and the export. The cap ends the stream, whose held start is
    masked as a cut end is."""
    key = SECRET_ENV["BAD_AGENT_KEY"]

    async def go() -> None:
        async with acp_lab(tmp_path, limits=Limits(max_terminal_output_bytes=3000)) as lab:
            lab.host.redactor.add(key)
            script = f"head -c 2985 /dev/zero | tr '\\0' F; printf '{key[:10]}'; sleep 0.3; printf '{key[10:]}tail'"
            terminal = await _terminal(lab, script)  # (the sleep is the command's: two reads)
            await terminal.wait_for_exit()
            data = _data(lab, terminal.uri)
            assert data.endswith("F***" + NOT_RECORDED) and key[:6] not in data
            export = tmp_path / "export.jsonl"
            lab.export(export)
            assert key[:15] not in export.read_text()  # (the command line holds its two halves apart)

    arun(go())


def test_a_command_whose_description_masks_shorter_shows_no_key_where_it_is_cut(tmp_path: Path) -> None:
    """A command's description was cut at 1,200 characters, masked, then cut at 1,000: twelve copies
    of the key before shrank to *** each, and a thirteenth, cut at 1,200 before masking and so not
    known, came within the 1,000 kept (15 of its characters in every client's / completion)."""
    key = SECRET_ENV["BAD_AGENT_KEY"]

    async def go() -> None:
        async with acp_lab(tmp_path) as lab:
            description = (key + " ") * 12 + "x" * (1185 - 12 * (len(key) + 1)) + key + " tail " + "y" * 500
            lab.host.agent_sessions.contexts[lab.session].set_commands(
                [{"name": "c1", "description": description}]
            )
            answer = await lab.client.request(
                "completions", {"channel": lab.chat, "kind": "userMessage", "text": "/c", "offset": 2}
            )
            shown = answer["items"][0]["attachment"]["modelRepresentation"]
            assert shown.startswith("*** " * 12) and key[:6] not in shown and shown.endswith("x***…")

    arun(go())


def test_permission_requests_an_agent_keeps_waiting_are_bounded(tmp_path: Path) -> None:
    """3,000 permission requests asked at once, each for a call of its own, all waited for the person
    past the turn's 2,000 calls, and each read the chat again at every change: the loop stood still
    9.8 s. 32 may wait at once; the others are refused, each with its reason."""

    async def go() -> None:
        async with acp_lab(tmp_path, bad_agent("permission_storm")) as lab:
            lab.start("go")

            def settled(chat):
                parts = (chat.get("activeTurn") or {}).get("responseParts") or ()
                waiting = [
                    p for p in parts if (p.get("toolCall") or {}).get("status") == "pending-confirmation"
                ]
                said = "".join(p.get("content", "") for p in parts if p.get("kind") == "markdown")
                return (len(waiting), said) if said.count("failed (-32602)") == 8 else None

            waiting, said = await lab.wait_for(lab.chat, settled, timeout=60)
            assert (
                waiting == 32 and said.count("32 permission requests are waiting for the person already") == 8
            )

    arun(go())
