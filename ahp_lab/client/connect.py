"""Connecting to any AHP host over WebSocket: ``client = await ahp_lab.connect(url, token=...)``.

The client id is persisted per host (``<state dir>/client-ids.json``, keyed by the URL without
its query), so a restarted notebook or script keeps its identity; the state dir is
``$AHP_LAB_STATE_DIR`` or ``~/.local/state/ahp_lab``. A dropped socket is resumed by the
:class:`Reconnector`: exponential backoff with full jitter, ``reconnect`` replaying from the last
seen server seq, falling back to snapshots or to ``initialize``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from ..transport import RpcError
from ..transport.websocket import HandshakeRefused, connect_websocket, redact_url

if TYPE_CHECKING:
    from .client import AhpClient

__all__ = ["connect", "Reconnector", "persisted_client_id", "state_dir"]

log = logging.getLogger("ahp_lab.client")


def state_dir() -> Path:
    """Where the client keeps what survives a restart (``$AHP_LAB_STATE_DIR`` or ``~/.local/state/ahp_lab``)."""
    configured = os.environ.get("AHP_LAB_STATE_DIR")
    return Path(configured) if configured else Path.home() / ".local" / "state" / "ahp_lab"


def _host_key(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path or "/", "", ""))


def persisted_client_id(url: str, directory: Path | None = None) -> str:
    """This machine's client id for the host at ``url``: read from the state dir, created once."""
    path = (directory or state_dir()) / "client-ids.json"
    key = _host_key(url)
    try:
        known = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(known, dict):
            known = {}
    except (OSError, ValueError):
        known = {}
    found = known.get(key)
    if isinstance(found, str) and found:
        return found
    client_id = f"client-{uuid.uuid4().hex[:8]}"
    known[key] = client_id
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(known, indent=1, sort_keys=True), encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:  # read-only home: the id lives as long as the process
        log.warning("could not persist the client id in %s: %s", path, exc)
    return client_id


class Reconnector:
    """Resumes a client whose transport dropped: backoff ``base_s * 2**attempt`` capped at
    ``max_s``, with full jitter; gives up on a refused token (HTTP 401/403), on a host that refuses
    both ``reconnect`` and ``initialize`` or answers them with what the client cannot apply, or
    after ``attempts``. Whatever ends it is kept in :attr:`error`.

    A resumed connection that drops within :attr:`STABLE_S` seconds does not start the count
    again: the attempts go on from where that resume ended, so a host that takes the client back
    and drops it at once is retried at growing delays, not in a loop that fetches every snapshot
    again as fast as the host sends them."""

    STABLE_S = 10.0

    def __init__(
        self,
        client: AhpClient,
        factory: Callable[[], Awaitable[Any]],
        *,
        base_s: float = 0.05,
        max_s: float = 5.0,
        attempts: int | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.factory = factory
        self.base_s = base_s
        self.max_s = max_s
        self.attempts = attempts
        self.rng = rng or random.Random()
        self.task: asyncio.Task | None = None
        self.history: list[dict] = []  # one entry per resume: mode, attempts, lastSeenServerSeq
        self.error: BaseException | None = None
        self._resumed: tuple[float, int] | None = None  # (when, attempts so far) of the last resume

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt ``attempt`` (0 = the first retry, right away)."""
        if attempt == 0:
            return 0.0
        return self.rng.uniform(0, min(self.max_s, self.base_s * 2**attempt))

    def start(self) -> None:
        """Begin resuming (once; a drop during a resume is handled by the same loop)."""
        if self.task is None or self.task.done():
            try:
                self.task = asyncio.ensure_future(self._run())
            except RuntimeError:  # no event loop any more: nothing can be resumed
                self.client._closing = True
                self.client._closed()

    def stop(self) -> None:
        """Stop trying (the client is being closed)."""
        if self.task is not None and not self.task.done():
            self.task.cancel()

    async def _run(self) -> None:
        client = self.client
        clock = asyncio.get_running_loop().time
        resumed = self._resumed
        # attempts made before this drop: those of the last resume, when it held less than STABLE_S
        before = resumed[1] if resumed is not None and clock() - resumed[0] < self.STABLE_S else 0
        attempt = 0
        since = client.last_seen_seq
        while not client._closing:
            await asyncio.sleep(self.delay(before + attempt))
            attempt += 1
            try:
                transport = await self.factory()
            except HandshakeRefused as exc:
                if exc.status in (401, 403) or (
                    self.attempts is not None and before + attempt >= self.attempts
                ):
                    self.give_up(exc)  # a refused token or origin: trying again cannot help
                    return
                log.warning("resuming %s: %s; retrying", client.url or client.client_id, exc)
                continue
            except (TimeoutError, OSError) as exc:
                if self.attempts is not None and before + attempt >= self.attempts:
                    self.give_up(exc)
                    return
                continue
            try:
                mode = await client.resume(transport)
            except RpcError as exc:  # the host answers, but will not take this client back
                with contextlib.suppress(Exception):
                    transport.close()
                self.give_up(exc)
                return
            except (TimeoutError, ConnectionError) as exc:
                log.warning(
                    "resuming %s failed: %s; retrying",
                    client.url or client.client_id,
                    exc or type(exc).__name__,
                )
                with contextlib.suppress(Exception):
                    transport.close()
                continue
            except Exception as exc:  # an answer the client cannot apply: trying again would loop
                with contextlib.suppress(Exception):
                    transport.close()
                self.give_up(exc)
                return
            self._resumed = (clock(), before + attempt)
            self.history.append({"mode": mode, "attempts": attempt, "lastSeenServerSeq": since})
            client._notify("ahp-root://", {"type": "$reconnected", "mode": mode, "attempts": attempt})
            return

    def give_up(self, exc: BaseException) -> None:
        """Stop for good: the client is closed, with ``exc`` as the reason (:attr:`error`)."""
        self.error = exc
        log.warning("giving up reconnecting: %s", exc)
        self.client._closing = True
        self.client._closed()
        self.client._notify("ahp-root://", {"type": "$closed", "reason": str(exc)})


#: The most values and keys a message from a host elsewhere may hold (a chat of 100,000 turns is
#: some 3.6 million): one frame of 100 MB of ``[],[],…`` took an attached kernel to 3 GB and held
#: its loop over 20 s. Such a message is refused unread.
HOST_MAX_ITEMS = 5_000_000


async def connect(
    url: str,
    token: str | None = None,
    *,
    client_id: str | None = None,
    display_name: str | None = None,
    subscriptions: list[str] | None = None,
    reconnect: bool = True,
    trusted_host: bool = False,
    tap: Any = None,
    request_timeout: float = 30.0,
    **transport_options: Any,
) -> AhpClient:
    """Connect to an AHP host over WebSocket and ``initialize``; returns the :class:`AhpClient`.

    ``token`` travels as ``Authorization: Bearer`` (a URL with ``?tkn=`` works without it).
    ``client_id`` defaults to the id persisted for this host. ``subscriptions`` are the
    ``initialSubscriptions`` (default: the root channel). With ``reconnect`` a dropped socket is
    resumed automatically. ``trusted_host=False`` (the default for a remote host) makes client
    tools ask this client's person before running unless they are read-only. ``tap`` (a
    :class:`~ahp_lab.transport.tap.FrameLog`) records every frame of every socket the client opens.
    ``request_timeout``: seconds each command waits for the host's answer (``createSession``,
    which may start an agent first, ten times as long).
    """
    from .client import AhpClient

    async def open_transport() -> Any:
        transport = await connect_websocket(url, token, **transport_options)
        return tap.wrap(transport) if tap is not None else transport

    transport = await open_transport()
    client = AhpClient(
        transport,
        client_id=client_id or persisted_client_id(url),
        display_name=display_name,
        trusted_host=trusted_host,
        reconnect=open_transport if reconnect else None,
        request_timeout=request_timeout,
        max_items=HOST_MAX_ITEMS,
    )
    client.url = redact_url(url)
    try:
        await client.initialize(subscriptions)
    except BaseException:
        client.close()
        raise
    return client
