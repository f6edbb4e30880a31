"""Publishing plugins from the notebook's client: virtual plugins, folders, nonces, removal."""

from __future__ import annotations

import asyncio

from ahp_lab import Lab

from .conftest import DEMO_PLUGIN

SKILL = "---\ndescription: Say hello\n---\nSay hello to the user.\n"


def test_publish_virtual_plugin_then_same_content_is_not_fetched_again_then_unpublish():
    async def main():
        lab = await Lab.open()
        entry = lab.client.publish_plugin("snippets", {"skills/hello/SKILL.md": SKILL})
        assert entry["uri"] == "virtual://notebook/snippets" and len(entry["nonce"]) == 16

        def loaded(state):
            return next(
                (
                    c
                    for c in state.get("customizations") or ()
                    if c.get("clientId") == "notebook" and (c.get("load") or {}).get("kind") == "loaded"
                ),
                None,
            )

        container = await lab.wait_for(lab.session, loaded, timeout=10)
        assert [(c["type"], c["name"], c["description"]) for c in container["children"]] == [
            ("skill", "snippets:hello", "Say hello")
        ]
        fetches = lab.customizations.stats["client_fetches"]
        again = lab.client.publish_plugin("snippets", {"skills/hello/SKILL.md": SKILL})
        assert again["nonce"] == entry["nonce"]
        await lab.adispatch({"type": "session/titleChanged", "title": "sync point"})
        assert lab.customizations.stats["client_fetches"] == fetches  # same nonce: not re-read
        lab.client.publish_plugin("snippets", {"skills/hello/SKILL.md": SKILL.replace("hello", "hi")})
        await lab.wait_for(
            lab.session,
            lambda s: (
                any(
                    ch.get("description") == "Say hi"
                    for c in s.get("customizations") or ()
                    for ch in c.get("children") or ()
                )
                or None
            ),
            timeout=10,
        )
        assert lab.customizations.stats["client_fetches"] == fetches + 1
        lab.client.unpublish_plugin("snippets")
        await lab.wait_for(
            lab.session,
            lambda s: not any(c.get("clientId") == "notebook" for c in s.get("customizations") or ()),
            timeout=10,
        )

    asyncio.run(main())


def test_publish_a_plugin_folder_from_the_client():
    lab = Lab()
    container = lab.publish_plugin("demo", folder=DEMO_PLUGIN)
    assert container["clientId"] == "notebook" and container["load"]["kind"] in ("loaded", "degraded")
    kinds = sorted({c["type"] for c in container["children"]})
    assert {"skill", "agent", "prompt", "rule"} <= set(kinds)
    assert all(c["uri"].startswith("virtual://notebook/demo/") for c in container["children"])
