"""Browser-test harness: a real JupyterLab driven by Debian's Chromium through Playwright for Python.

Recipe: /work/shared/TESTING-IN-A-BROWSER.md. Never a downloaded browser (`playwright install` is
forbidden); /usr/bin/chromium comes from Debian's `chromium` package, which scripts/test.sh installs.

Fixtures: `jupyter_server` (session), `browser` (module), `page` (per test).
Helpers (import with `from .conftest import ...`): write_notebook, open_cells, run_all, wait_idle,
run_cell, cell_output_text, screenshot.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

CHROMIUM = Path("/usr/bin/chromium")
REPO_ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS_DIR = REPO_ROOT / "artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1400, "height": 900}
SERVER_START_TIMEOUT_S = 90
UI_TIMEOUT_MS = 60_000

# JupyterLab settings that keep the UI quiet, offline and deterministic for screenshots.
LAB_OVERRIDES = {
    # no "get notified about official Jupyter news?" toast, no news / update checks
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    # the extension manager would query PyPI
    "@jupyterlab/extensionmanager-extension:plugin": {"enabled": False},
    # attach every cell to the DOM, so locators and screenshots see off-screen cells too
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    return report


_REPORTS = pytest.StashKey[dict]()


# --------------------------------------------------------------------------------------------
# JupyterLab server
# --------------------------------------------------------------------------------------------


@dataclass
class JupyterServer:
    url: str  # http://127.0.0.1:<port>, no trailing slash
    token: str
    root_dir: Path  # the server's root: write notebooks here
    log_path: Path
    proc: subprocess.Popen = field(repr=False)

    def open_notebook(self, page, name: str, timeout_ms: int = UI_TIMEOUT_MS) -> None:
        """Open `name` (relative to root_dir) in a fresh workspace; wait until its kernel is idle."""
        page.goto(f"{self.url}/lab/tree/{name}?reset&token={self.token}")
        # Not just `.jp-Notebook-ExecutionIndicator[data-status='idle']`: that reads "idle" while
        # the status bar still says "No Kernel | Initializing", and a Run All then does nothing.
        page.wait_for_function(_KERNEL_IDLE_JS, timeout=timeout_ms)

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError as exc:
            return f"<no server log: {exc}>"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status_ok(url: str, token: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as resp:
            return resp.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def _die_with_parent() -> None:
    """preexec_fn: SIGTERM the server if pytest dies without teardown (killed, timed out).

    On SIGTERM the server also shuts its kernels down (they run in sessions of their own).
    """
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def _stop(proc: subprocess.Popen, url: str, token: str) -> None:
    if proc.poll() is not None:
        return
    # Graceful first: /api/shutdown also shuts the kernels down (they run in their own sessions).
    try:
        req = urllib.request.Request(f"{url}/api/shutdown?token={token}", method="POST")
        urllib.request.urlopen(req, timeout=5).close()
        proc.wait(timeout=15)
        return
    except (urllib.error.URLError, ConnectionError, TimeoutError, subprocess.TimeoutExpired):
        pass
    for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)  # the group we created with start_new_session=True
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="session")
def jupyter_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    base = tmp_path_factory.mktemp("jupyterlab")
    root_dir = base / "root"
    app_settings = base / "app-settings"
    for d in (root_dir, app_settings, base / "user-settings", base / "workspaces", base / "config"):
        d.mkdir()
    (app_settings / "overrides.json").write_text(json.dumps(LAB_OVERRIDES, indent=2))

    port = _free_port()
    token = secrets.token_hex(16)
    url = f"http://127.0.0.1:{port}"
    # A person (this test, through the browser) is at these notebooks: they must not answer from
    # code what they leave for a click (nbval's AHP_LAB_UNATTENDED=1, see notebooks/README.md).
    attended = {k: v for k, v in os.environ.items() if k != "AHP_LAB_UNATTENDED"}
    env = dict(
        attended,
        JUPYTERLAB_SETTINGS_DIR=str(base / "user-settings"),  # no user settings from ~/.jupyter
        JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"),
        JUPYTER_CONFIG_DIR=str(base / "config"),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
    )
    cmd = [
        sys.executable, "-m", "jupyterlab",
        "--no-browser", "--ip", "127.0.0.1", "--port", str(port),
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root_dir}",
        f"--LabApp.app_settings_dir={app_settings}",
        "--ServerApp.port_retries=0",
        # A kernel's ZMQ ports are picked free and bound a moment later: on a busy machine another
        # process can take one in between. Cached ports would make every restart retry the taken
        # port until the kernel is declared dead; uncached, a restart picks new ones.
        "--KernelManager.cache_ports=False",
        "--allow-root",
    ]  # fmt: skip
    log_path = base / "jupyterlab.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=root_dir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
    server = JupyterServer(url=url, token=token, root_dir=root_dir, log_path=log_path, proc=proc)
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while not _status_ok(url, token):
            if proc.poll() is not None:
                pytest.fail(
                    f"JupyterLab exited with code {proc.returncode} during start-up.\n"
                    f"command: {' '.join(cmd)}\n--- {log_path} (tail) ---\n{server.log_tail()}",
                    pytrace=False,
                )
            if time.monotonic() > deadline:
                pytest.fail(
                    f"JupyterLab did not answer {url}/api/status within {SERVER_START_TIMEOUT_S} s.\n"
                    f"command: {' '.join(cmd)}\n--- {log_path} (tail) ---\n{server.log_tail()}",
                    pytrace=False,
                )
            time.sleep(0.1)  # poll interval
        yield server
    finally:
        _stop(proc, url, token)


# --------------------------------------------------------------------------------------------
# Browser
# --------------------------------------------------------------------------------------------


# Module scope, not session: while Playwright's sync API is alive, its event loop counts as running
# in this thread, so any later `asyncio.run()` (in other test modules) would raise "cannot be called
# from a running event loop". Closing it after each browser-test module keeps other tests unaffected.
@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: browser tests need Debian's `chromium` package. "
            "Run `bash scripts/test.sh` (it installs it), or `apt-get install -y chromium`. "
            "Never run `playwright install`.",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser, request: pytest.FixtureRequest):
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(UI_TIMEOUT_MS)
    pg = context.new_page()
    console: list[str] = []
    pg.on("console", lambda msg: console.append(f"[{msg.type}] {msg.text}"))
    pg.on("pageerror", lambda exc: console.append(f"[pageerror] {exc}"))
    try:
        yield pg
    finally:
        call = request.node.stash.get(_REPORTS, {}).get("call")
        if call is not None and call.failed:
            try:
                name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid.split("::")[-1])
                print(f"screenshot of the failure: {screenshot(pg, 'FAILED-' + name)}")
                print("--- browser console (tail) ---\n" + "\n".join(console[-40:]))
                if "jupyter_server" in request.fixturenames:  # the kernel's side of the story
                    print(
                        "--- server log (tail) ---\n" + request.getfixturevalue("jupyter_server").log_tail()
                    )
            except Exception as exc:  # a failing screenshot must not hide the test's own failure
                print(f"could not take a failure screenshot: {exc}")
        context.close()


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def write_notebook(root_dir: Path, name: str, cells: list[str]) -> Path:
    """Write an nbformat v4 notebook of code cells, with a python3 kernelspec (no kernel dialog)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    path = Path(root_dir) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


# The status bar's kernel item reads "<kernel display name> | <status>"; "No Kernel | ..." before
# the session has a kernel. Idle there means the kernel is connected and has answered kernel_info.
_KERNEL_IDLE_JS = """() => {
  const ind = document.querySelector('.jp-Notebook-ExecutionIndicator');
  if (!ind || ind.dataset.status !== 'idle') return false;
  return [...document.querySelectorAll('.jp-StatusBar-TextItem')].some(
    e => /^(?!No Kernel).+ \\| Idle$/.test(e.textContent.trim()));
}"""
_ALL_DONE_JS = f"""() => ({_KERNEL_IDLE_JS})() &&
  ![...document.querySelectorAll('.jp-InputPrompt')].some(p => p.textContent.includes('*'))"""


def wait_idle(page, timeout_ms: int = UI_TIMEOUT_MS) -> None:
    """Wait until the kernel is idle and no cell is queued or running (no `[*]` prompt)."""
    page.wait_for_function(_ALL_DONE_JS, timeout=timeout_ms)


def run_all(page, wait: bool = True, timeout_ms: int = UI_TIMEOUT_MS) -> None:
    """Run → Run All Cells through the menu bar; by default wait until every cell has run."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    if wait:
        wait_idle(page, timeout_ms)


def run_cell(page, index: int, wait: bool = True, timeout_ms: int = UI_TIMEOUT_MS) -> None:
    """Run the code cell at `index` (0-based) with Shift+Enter."""
    page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    if wait:
        wait_idle(page, timeout_ms)


def cell_output_text(page, index: int) -> str:
    """The visible text of the outputs of the cell at `index` (0-based)."""
    return page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea").inner_text()


def open_cells(server: JupyterServer, page, name: str, cells: list[str]) -> list[str]:
    """Write a notebook of ``cells``, open it, and collect the page's script errors: the returned
    list fills as errors happen (a test ends with ``assert errors == []``)."""
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    write_notebook(server.root_dir, name, cells)
    server.open_notebook(page, name)
    return errors


def screenshot(page, name: str) -> Path:
    """Save a full-viewport screenshot to artifacts/<name>.png at the repo root; return its path."""
    ARTIFACTS_DIR.mkdir(exist_ok=True)
    path = ARTIFACTS_DIR / f"{name}.png"
    page.screenshot(path=str(path))
    return path
