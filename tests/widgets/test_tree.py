import json

import pytest

from ahp_lab.widgets.tree import effective_customizations, mcp_state_view, tree_view_model

from .conftest import WEIRD


def _plugin(enabled=True, children=None, **kw):
    d = {"type": "plugin", "id": "p", "uri": "u", "name": "P", "enabled": enabled, **kw}
    if children is not None:
        d["children"] = children
    return d


def test_effective_enablement_rules():
    recs = effective_customizations(
        [
            _plugin(
                False,
                [
                    {"type": "skill", "id": "s1", "uri": "u", "name": "a"},
                    {"type": "skill", "id": "s2", "uri": "u", "name": "b", "enabled": True},
                ],
            ),
            _plugin(
                True,
                [
                    {"type": "skill", "id": "s3", "uri": "u", "name": "c"},
                    {"type": "rule", "id": "s4", "uri": "u", "name": "d", "enabled": False},
                ],
                id="p2",
            ),
            {
                "type": "mcpServer",
                "id": "m",
                "uri": "u",
                "name": "m",
                "enabled": False,
                "state": {"kind": "stopped"},
                "children": [{"id": "ignored"}],
            },
        ]
    )
    assert [r["effective"] for r in recs] == [False, True, False]
    assert [(c["id"], c["enabled"], c["effective"]) for c in recs[0]["children"]] == [
        ("s1", True, False),
        ("s2", True, False),
    ]
    assert [(c["id"], c["effective"]) for c in recs[1]["children"]] == [("s3", True), ("s4", False)]
    assert (
        recs[2]["isContainer"] is False and recs[2]["children"] is None
    )  # mcpServer children never searched


def test_view_model_uses_effective_flags_and_groups(demo):
    vm = tree_view_model(demo.state(demo.session))
    by_id = {c["id"]: c for c in vm["containers"]}
    review = by_id["p-review"]
    assert [g["type"] for g in review["groups"]] == ["agent", "skill", "prompt", "rule", "hook", "mcpServer"]
    skills = {c["id"]: c for g in review["groups"] for c in g["children"]}
    assert skills["s-lint"]["enabled"] is False and skills["s-lint"]["effective"] is False
    assert skills["m-db"]["mcp"]["busy"] is True and skills["m-github"]["mcp"]["canStop"]
    client = by_id["p-client"]
    assert client["clientId"] == "vscode-1" and client["load"] == {
        "kind": "degraded",
        "message": "2 snippets failed to parse",
        "busy": False,
    }
    assert all(c["greyed"] and not c["effective"] for g in client["groups"] for c in g["children"])
    assert by_id["d-skills"]["load"]["busy"] and by_id["d-skills"]["parsed"] is False
    jira = by_id["m-jira"]
    assert jira["mcp"]["auth"]["resource"] == "https://mcp.example/jira" and jira["mcp"]["auth"][
        "scopes"
    ] == ["read:issues"]
    assert vm["authRequired"] == [{"id": "m-jira", "name": "jira"}]
    assert vm["total"] == 6 + 8 + 2


def test_filters(demo):
    st = demo.state(demo.session)
    vm = tree_view_model(st, type_filter="skill")
    assert {c["id"] for c in vm["containers"]} == {"p-review", "p-client"}
    assert {k["type"] for c in vm["containers"] for g in c["groups"] for k in g["children"]} == {"skill"}
    vm = tree_view_model(st, text_filter="GITHUB")
    assert [(c["id"], [k["id"] for g in c["groups"] for k in g["children"]]) for c in vm["containers"]] == [
        ("p-review", ["m-github"])
    ]
    vm = tree_view_model(st, type_filter="mcpServer")
    assert {c["id"] for c in vm["containers"]} == {"p-review", "m-jira", "m-files"}
    vm = tree_view_model(st, text_filter="snippets")  # container match keeps its children
    assert [c["id"] for c in vm["containers"]] == ["p-client"] and len(vm["containers"][0]["groups"]) == 2
    assert tree_view_model(st, text_filter="no such thing")["containers"] == []


def test_empty_and_large():
    assert tree_view_model({})["containers"] == [] and tree_view_model({})["hasCustomizations"] is False
    assert tree_view_model(None)["total"] == 0
    big = [
        _plugin(
            True,
            [{"type": "skill", "id": f"s{i}-{j}", "uri": "u", "name": f"n{j}"} for j in range(100)],
            id=f"p{i}",
        )
        for i in range(100)
    ]
    vm = tree_view_model({"customizations": big})
    assert vm["shown"] <= 2000 and vm["truncated"] > 0
    assert len(json.dumps(vm)) < 600_000


@pytest.mark.parametrize("weird", WEIRD)
def test_malformed_never_raises(weird):
    states = [
        {"customizations": weird},
        {"customizations": [weird]},
        {"customizations": [_plugin(weird, weird)]},
        {
            "customizations": [
                _plugin(True, [weird, {"type": weird, "id": weird, "name": weird, "enabled": weird}])
            ]
        },
        {
            "customizations": [
                {"type": "mcpServer", "id": "m", "state": weird},
                {"type": "plugin", "id": "x", "load": weird, "children": []},
            ]
        },
        {
            "customizations": [
                {"type": "futureThing", "id": "f", "children": [{"type": "futureChild", "id": "fc"}]}
            ]
        },
    ]
    for st in states:
        vm = tree_view_model(st, type_filter="skill" if weird else "", text_filter="a")
        json.dumps(vm)
        json.dumps(tree_view_model(st))
    json.dumps(mcp_state_view(weird))


def test_unknown_types_are_listed():
    vm = tree_view_model(
        {
            "customizations": [
                {
                    "type": "futureThing",
                    "id": "f",
                    "name": "F",
                    "children": [{"type": "futureChild", "id": "fc", "name": "c"}],
                }
            ]
        }
    )
    c = vm["containers"][0]
    assert (
        c["unknownType"]
        and c["groups"][0]["type"] == "futureChild"
        and c["groups"][0]["children"][0]["unknownType"]
    )


def test_hostile_names_are_plain_cleaned_text():
    vm = tree_view_model(
        {"customizations": [_plugin(True, [], name="<img src=x onerror=alert(1)>\x1b[31mred\x1b[0m")]}
    )
    assert vm["containers"][0]["name"] == "<img src=x onerror=alert(1)>red"
