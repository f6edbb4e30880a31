"""The inspector's ACP lane: raw ACP frames next to the AHP transitions each produced, both ways."""

from __future__ import annotations

from pathlib import Path

from ahp_lab.widgets import TransitionInspector

from .conftest import acp_lab, arun, transitions


def test_acp_lane_links_frames_and_transitions_both_ways(tmp_path: Path) -> None:
    async def go() -> None:
        async with acp_lab(tmp_path) as lab:
            await lab.send("hello")
            inspector = TransitionInspector(lab.as_source())
            sent: list = []
            inspector.send_msg = lambda msg: sent.append(msg)  # what would go to the browser
            inspector.refresh()
            assert inspector.acp["available"] and inspector.acp["total"] == len(lab.acp_frames)
            inspector._on_custom_msg(inspector, {"type": "acpWindow", "start": 0, "count": 500, "req": "a"})
            rows = sent[-1]["rows"]
            assert sent[-1]["type"] == "acpRows" and sent[-1]["req"] == "a"
            assert [r["label"] for r in rows[:2]] == ["initialize", "response #0"]
            chunk = next(r for r in rows if r["label"] == "session/update agent_message_chunk")
            assert chunk["direction"] == "in" and len(chunk["seqs"]) >= 1
            # frame -> transition: the chunk's first seq is a chat action the agent produced
            produced = lab.transitions[chunk["seqs"][-1]]
            assert produced.type == "chat/delta" and produced.origin["kind"] == "agent"
            # transition -> frame: selecting the delta lists the chunk that produced it
            inspector.selected_seq = produced.seq
            assert [f["frame"] for f in inspector.detail["acpFrames"]] == [chunk["frame"]]
            # a frame's detail carries the JSON-RPC message
            inspector.selected_frame = chunk["frame"]
            assert inspector.frame_detail["label"] == "session/update agent_message_chunk"
            assert "agent_message_chunk" in str(inspector.frame_detail["message"])
            # the notebook's own action links to the ACP request it caused
            started = transitions(lab, "chat/turnStarted")[-1]
            inspector.selected_seq = started.seq
            assert [f["label"] for f in inspector.detail["acpFrames"]] == ["session/prompt"]
            inspector.close()

    arun(go())
