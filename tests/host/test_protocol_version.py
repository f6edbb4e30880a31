"""Which protocol this is, on the wire: later versions are refused with ours; serverInfo says which snapshot."""

from __future__ import annotations

import asyncio
import json

import pytest

from ahp_lab.host import Host
from ahp_lab.protocol import SUPPORTED_VERSIONS
from ahp_lab.protocol.jsonrpc import ErrorCode


async def _initialize(versions: list[str]) -> dict:
    """``initialize`` from a bare JSON-RPC peer, answered by a real host."""
    host = Host()
    transport = host.connect("later-client")
    answered: asyncio.Future = asyncio.get_running_loop().create_future()
    transport.set_receiver(
        lambda text: answered.done() or answered.set_result(json.loads(text)), lambda: None
    )
    transport.send(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"channel": "ahp-root://", "protocolVersions": versions, "clientId": "later"},
            }
        )
    )
    return await asyncio.wait_for(answered, 10)


@pytest.mark.parametrize("versions", [["1.0.0"], ["0.9.0"], ["1.0.0", "0.9.0"]])
def test_a_client_offering_only_later_versions_gets_the_unsupported_version_error_with_ours(versions):
    reply = asyncio.run(_initialize(versions))
    error = reply["error"]
    assert error["code"] == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION == -32005
    assert error["data"]["supportedVersions"] == list(SUPPORTED_VERSIONS)
    assert all(v in error["message"] for v in versions)


def test_server_info_names_the_pre_release_snapshot():
    reply = asyncio.run(_initialize(["1.0.0", "0.8.0"]))
    result = reply["result"]
    assert result["protocolVersion"] == "0.8.0"
    title = result["serverInfo"]["title"]
    assert "pre-release" in title and "2026-08-04" in title and "eb31098" in title


@pytest.mark.parametrize("version", ["0.5.0", "0.4.9", "0.8.0-rc.1", "0.8.1", "0.5.3"])
def test_a_patch_we_do_not_implement_is_refused(version):
    # 0.5.0 lacks actions 0.5.1 introduced (session/inputNeededSet, chat/turnsLoaded), which the
    # host would send it; 0.8.1 may have changed what the 0.8.0 snapshot does: neither is honoured
    error = asyncio.run(_initialize([version]))["error"]
    assert error["code"] == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION
    assert error["data"]["supportedVersions"] == list(SUPPORTED_VERSIONS)


def test_the_most_preferred_version_we_implement_is_chosen():
    assert asyncio.run(_initialize(["0.8.1", "0.7.0", "0.8.0"]))["result"]["protocolVersion"] == "0.7.0"
