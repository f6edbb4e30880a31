"""A message typed in the chat reaches an ACP agent while the kernel is idle (the first-hour user,
round 54): JupyterLab sends a widget's messages to a kernel subshell (ipykernel 7), and the view
ran the turn on that thread's own event loop, while the agent's pipes live on the notebook's. The
chat read "working…" until some cell ran, even ``1 + 1``."""

from __future__ import annotations

import sys

from .conftest import REPO_ROOT, open_cells, run_cell

SETUP = f"""\
import sys, tempfile
from ahp_lab import Lab
from ahp_lab.agents.acp import AcpAgent
agent = AcpAgent([{sys.executable!r}, {str(REPO_ROOT / "examples" / "acp_agent.py")!r}], cwd=tempfile.mkdtemp())
lab = await Lab.open(agent=agent)
lab.show()
"""
CLOSE = "await agent.aclose()"


def test_a_message_typed_in_the_chat_is_answered_by_an_acp_agent_while_the_kernel_idles(jupyter_server, page):
    errors = open_cells(jupyter_server, page, "chat_acp_idle.ipynb", [SETUP, CLOSE])
    run_cell(page, 0)
    chat = page.locator(".ahp-workbench .ahp-chat")
    prompt = chat.locator("textarea.ahp-prompt-input")
    prompt.wait_for()
    prompt.fill("hello there")
    prompt.press("Enter")
    # no cell runs from here on: the answer comes while the kernel is idle
    chat.get_by_text("Hello from the offline ACP agent").first.wait_for(timeout=30_000)
    page.wait_for_function(
        "e => !e.innerText.includes('working…')", arg=chat.element_handle(), timeout=30_000
    )
    run_cell(page, 1)
    assert errors == []
