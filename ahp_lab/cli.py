"""``ahp-lab``: command-line entry points.

``ahp-lab serve [--port N] [--host 127.0.0.1] [--agent scripted]`` runs a standalone AHP host
process (the same host a notebook runs in its kernel) and prints its URL, token included, once.
Stop it with Ctrl-C (or SIGTERM).

Once it listens, the process runs one full garbage collection and then ``gc.freeze()``: what
exists at that point (the imported modules, the host and its server) lives as long as the
process, so CPython's later full collections skip it and only visit what the run creates (a
collection of the start-up heap alone took ~50-80 ms on a 2-core machine, a stall for every
connection). Frozen objects are still freed by reference counting; only a reference cycle among
them that became garbage would stay, which start-up state does not do. A notebook kernel's
collector is left as it is: ``Lab`` never freezes the user's heap.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import signal
import sys

__all__ = ["main"]

AGENTS = ("scripted",)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ahp-lab", description="ahp_lab's command line: an AHP host outside Jupyter."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{serve}")
    serve = commands.add_parser(
        "serve",
        help="run an AHP host over WebSocket and print its URL",
        description="Run a standalone AHP host (the one a notebook runs in its kernel) over WebSocket, "
        "print its URL with its token once, and serve until Ctrl-C or SIGTERM.",
    )
    serve.add_argument("--port", type=int, default=0, help="TCP port (default: any free port)")
    serve.add_argument(
        "--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1; others warn without TLS)"
    )
    serve.add_argument("--agent", choices=AGENTS, default="scripted", help="the agent behind the host")
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=None,
        metavar="ORIGIN",
        help="an Origin browser pages may connect from (repeatable; default: this machine's pages)",
    )
    return parser


async def serve(port: int, host: str, agent: str, allowed_origins: list[str] | None) -> int:
    """Serve until interrupted; returns the exit status."""
    from .agents.scripted import ScriptedAgent
    from .host import Host
    from .lab.live import _attach_customizations
    from .lab.remote import serve_host

    the_host = Host({"scripted": ScriptedAgent}[agent]())
    _attach_customizations(the_host, (), (), None)
    server, _frames = serve_host(the_host, host=host, port=port, allowed_origins=allowed_origins)
    try:
        url = await server.start()
    except OSError as exc:
        print(f"ahp-lab serve: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    gc.collect()
    gc.freeze()  # the start-up heap is permanent: later full collections skip it (module docstring)
    print(url, flush=True)  # the one place the token is shown
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.stop()
        for ext in list(the_host.extensions):
            close = getattr(ext, "aclose", None)
            if close is not None:
                await close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the ``ahp-lab`` command."""
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return asyncio.run(serve(args.port, args.host, args.agent, args.allow_origin))
    return 2


if __name__ == "__main__":
    sys.exit(main())
