"""Attacker round 17: what a stranger's text costs the redactor, and where its secrets went.

- The query-parameter rule of the redaction went back over every way to split a name into words:
  a title of ``?key_key_…key =`` (80 KB) held the host's loop 21 s before the action was accepted,
  and every connection waited. The name is now matched as one run and its words looked up after.
"""

from __future__ import annotations

import time

from .conftest import arun, open_lab


def test_a_title_of_nested_query_names_does_not_hold_the_hosts_loop(connect_stranger):
    """80 KB of ``?key_key_…`` with no value: 21 s of the loop before (a megabyte: hours)."""

    async def main():
        async with open_lab() as lab:
            mallory = await connect_stranger(lab, "mallory")
            await mallory.initialize("mallory")
            await mallory.call("subscribe", {"channel": lab.session})
            title = "?" + "key_" * 20_000 + " ="
            started = time.monotonic()
            mallory.dispatch(lab.session, 1, {"type": "session/titleChanged", "title": title})
            echo = await mallory.echo(1, timeout=60)
            # the loop is held while the title is redacted, so no timeout can fire meanwhile: the
            # time it took is the check (21 s before, milliseconds now)
            assert time.monotonic() - started < 5
            assert "rejectionReason" not in echo
            assert lab.session_state["title"] == title  # nothing in it is a secret: kept as sent

    arun(main())
