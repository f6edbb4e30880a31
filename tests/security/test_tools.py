"""Requirement 8: a tool cannot end the process (the kernel), whatever it raises."""

from __future__ import annotations

import argparse
import os

import pytest

from ahp_lab.agents.scripted import call, say

from .conftest import arun, open_lab


def _argparse_main(args: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="deploy")
    parser.add_argument("--env", required=True)
    parser.parse_args(args)  # bad arguments: SystemExit(2), as a CLI would


@pytest.mark.parametrize("where", ["client", "server"])
def test_system_exit_and_keyboard_interrupt_fail_the_call_not_the_kernel(where):
    pid = os.getpid()

    async def main():
        async with open_lab() as lab:
            register = lab.tool if where == "client" else lab.server_tool

            @register
            def deploy(flags: str) -> str:
                """A sync tool wrapping a CLI (runs in a worker thread)."""
                _argparse_main(flags.split())
                return "deployed"

            @register
            async def interrupted() -> str:
                raise KeyboardInterrupt

            @register
            async def quitter() -> str:
                raise SystemExit("bye")

            script = [
                call("deploy", {"flags": "--bogus"}),
                call("interrupted"),
                call("quitter"),
                say("still here"),
            ]
            turn = await lab.send("go", script=script)
            results = [tc.result_text for tc in turn.tool_calls]
            assert "raised SystemExit: 2" in results[0]
            assert "raised KeyboardInterrupt" in results[1]
            assert "raised SystemExit: bye" in results[2]
            assert all(not tc.state.get("success") for tc in turn.tool_calls)
            assert turn.text.endswith("still here")
            again = await lab.send("and again", script=[call("deploy", {"flags": "--env prod"})])
            assert again.tool_calls[0].result_text == "deployed"
            assert os.getpid() == pid

    arun(main())
