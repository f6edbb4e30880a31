"""A remote client's MCP server waits for the person at the kernel: "Allow" in the tree starts it.

Another client (an untrusted connection, as an editor would be) publishes a plugin whose
``.mcp.json`` runs the demo MCP server. The host shows the server as not started, with the
reason, and an "Allow" button; a click is the local decision that lets it run, and the server
reaches ``ready``. Screenshots: ``artifacts/allow-mcp-*.png``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from .conftest import cell_output_text, run_cell, wait_idle, write_notebook
from .test_workbench_lab import _shot

DEMO = Path(__file__).resolve().parents[2] / "examples" / "mcp_server.py"
CONFIG = {"mcpServers": {"demo": {"command": sys.executable, "args": [str(DEMO)]}}}

SETUP = f"""\
import json
from ahp_lab import Lab
lab = Lab()
ide = await lab.add_client("ide", "An editor")  # another connection: a stranger to the host
ide.publish_plugin("tools", {{".mcp.json": json.dumps({CONFIG!r})}})
await lab.wait_for(
    lab.session,
    lambda s: any(ch.get("state", {{}}).get("error", {{}}).get("errorType") == "McpServerNotAllowed"
                  for c in s.get("customizations") or () for ch in c.get("children") or ()),
)
lab.show()
"""
CHECK = """\
[server] = [ch for c in lab.session_state["customizations"] for ch in c.get("children") or ()]
print("STATE=" + json.dumps({"kind": server["state"]["kind"], "decisions": [d["clientId"] for d in lab.mcp.decisions]}))
await lab.aclose()
"""


def test_allow_starts_a_remote_clients_mcp_server(jupyter_server, page):
    write_notebook(jupyter_server.root_dir, "allow_mcp.ipynb", [SETUP, CHECK])
    jupyter_server.open_notebook(page, "allow_mcp.ipynb")
    run_cell(page, 0)
    server = page.locator(".ahp-tree [data-type='mcpServer']").first
    server.wait_for()
    page.wait_for_selector(".ahp-tree [data-mcp-state='error']")
    assert "remote client ide" in server.inner_text()
    allow = page.get_by_role("button", name="Allow tools:demo", exact=True)
    assert allow.is_visible()
    assert page.get_by_role("button", name="Start tools:demo", exact=True).count() == 0
    _shot(page, ".ahp-tree", "allow-mcp-waiting")
    allow.click()
    page.wait_for_selector(".ahp-tree [data-mcp-state='ready']", timeout=60_000)
    assert page.get_by_role("button", name="Allow tools:demo", exact=True).count() == 0
    _shot(page, ".ahp-tree", "allow-mcp-ready")
    run_cell(page, 1)
    wait_idle(page)
    got = json.loads(re.search(r"^STATE=(.*)$", cell_output_text(page, 1), re.M).group(1))
    assert got == {"kind": "ready", "decisions": ["ide"]}, got
