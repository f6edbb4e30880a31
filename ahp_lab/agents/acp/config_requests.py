"""Config changes sent to an ACP agent, and the values it reports back, for :class:`~.bridge.Bridge`.

A client's ``session/configChanged`` reaches the agent as ``session/set_mode`` (the ``mode``
property) or ``session/set_config_option`` (any other), one request per property; the agent's
answers and its own ``current_mode_update``/``config_option_update`` come back as
``session/configChanged`` of agent origin (``docs/acp.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp import RequestError

from . import mapping
from .config import offered_values, values_from_options
from .context import _CAUSE, _FRAME, AgentFailure


class ConfigRequests:
    """The config half of the bridge (a mixin: the bridge holds the state it reads)."""

    async def set_configs(self, changes: dict) -> None:
        """Send config properties to the agent, one request each, in order."""
        keys = list(changes)
        for n, key in enumerate(keys):
            try:
                await self.set_config(key, changes[key], pending=keys[n + 1 :])
            except (AgentFailure, RequestError) as exc:
                exc.applied = keys[:n]  # the agent took these before it refused
                raise

    async def set_config(self, key: str, value: Any, pending: Sequence[str] = ()) -> None:
        """Send one config property to the agent (``session/set_mode`` or ``set_config_option``).

        The agent answers an option with the current values of all its options: those it changed
        on its own become an agent change (``key`` too: its own update of it may have come before
        the answer), but not the ``pending`` keys of the same change, which it has not been sent
        yet, nor a key the agent reported after the answer (newer). A mode's answer carries
        nothing: when the agent reported another mode while the request was open, the mode it was
        sent is what it runs once it answered.
        """
        route = self.routes.get(key)
        if route is None:
            return
        token = _CAUSE.set(self._seq(self.ctx.session, "session/configChanged"))
        try:
            if route[0] == "mode":
                await self.until(
                    self.conn.set_session_mode(session_id=self.session_id, mode_id=str(value)),
                    self.agent.initialize_timeout,
                    "session/set_mode",
                )
                if self._stale_report(key):
                    self._agent_config({key: str(value)})
            else:
                value = bool(value) if route[2] == "boolean" else str(value)
                response = await self.until(
                    self.conn.set_config_option(config_id=route[1], session_id=self.session_id, value=value),
                    self.agent.initialize_timeout,
                    "session/set_config_option",
                )
                options = mapping.as_json(response.config_options) if response else []
                values = values_from_options(options, self.routes)
                for sent in pending:
                    values.pop(sent, None)
                for reported in [
                    k for k in values if self._reported_at.get(k, (-1,))[0] > self._config_answered
                ]:
                    del values[reported]  # the agent reported it since: newer than the answer
                if key not in values and self._stale_report(key):
                    values[key] = value  # an answer that omits it: it runs what it was sent
                if values:
                    self._agent_config(values, offered_values(options, self.routes))
        finally:
            _CAUSE.reset(token)

    def _stale_report(self, key: str) -> bool:
        """Whether the agent's last report of ``key`` came while the config request was open (older
        than its answer) and is still what the session shows (no client changed it since)."""
        at, reported = self._reported_at.get(key, (-1, None))
        return (
            self._config_sent[1] < at < self._config_answered
            and self.ctx.config_values().get(key) == reported
        )

    def _reported(self, values: dict) -> None:
        """The agent reported these config values in the frame being handled."""
        frame = _FRAME.get()
        for key, value in values.items():
            self._reported_at[key] = (frame.index if frame is not None else -1, value)

    def _agent_config(self, values: dict, offered: dict | None = None) -> int | None:
        """Apply the config values the agent reports (``session/configChanged``, agent origin);
        a value that neither the schema it offered nor ``offered`` (what the same report offers)
        allows is a violation. Returns the seq."""
        try:
            return self.ctx.update_config(values, offered)
        except ValueError as exc:
            self.fail(f"the agent reported {exc}")
            return None
