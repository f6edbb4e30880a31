"""A misbehaving ACP agent for the failure tests: plain JSON-RPC lines, one bad behaviour per run.

``python bad_agent.py MODE [MARKER]``. It answers ``initialize`` and ``session/new`` correctly
(except in ``silent``), then on ``session/prompt`` does what MODE says:

hang             never answers the prompt and sends nothing
garbage          writes a line that is not JSON to stdout
flood            writes 4 MB to stderr
unknown_session  sends a session/update for a session it never created
unknown_call     sends a tool_call_update for a tool call it never announced
second_response  answers session/new a second time
late_permission  streams a chunk, waits for session/cancel, then asks permission
crash_then_silent  crashes on the prompt; a respawn (MARKER exists) never answers initialize
silent           never answers initialize
env              answers with the names of its environment variables
future           answers initialize with a protocol version this host does not speak
big_chunks       streams 200 message chunks of 16,000 characters, then ends the turn
unknown_call_answered  unknown_call, and the prompt's answer in the same write
unknown_session_answered  unknown_session, and the prompt's answer in the same write
bad_mode         reports a mode it never offered (current_mode_update), then ends the turn
deaf_once        streams a chunk and never ends the prompt, not even after session/cancel; a
                 respawn (MARKER exists) answers prompts normally
options          well behaved, with two config options (verbosity, fast): a set_config_option
                 answer carries both current values, and a prompt is answered with them
"""

import json
import os
import sys

MODE = sys.argv[1]
MARKER = sys.argv[2] if len(sys.argv) > 2 else None


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def notification(session: str, update: dict) -> dict:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": update}}


def update(session: str, update: dict) -> None:
    send(notification(session, update))


def chunk(text: str) -> dict:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


silent = MODE == "silent" or (MODE == "crash_then_silent" and MARKER and os.path.exists(MARKER))
respawned = bool(MARKER) and os.path.exists(MARKER)
if MODE in ("crash_then_silent", "deaf_once") and MARKER and not respawned:
    open(MARKER, "w").close()
options = {"verbosity": "normal", "fast": False}


def config_options() -> list:
    levels = [{"value": v, "name": v.title()} for v in ("normal", "terse", "detailed")]
    return [
        {
            "type": "select",
            "id": "verbosity",
            "name": "Verbosity",
            "currentValue": options["verbosity"],
            "options": levels,
        },
        {"type": "boolean", "id": "fast", "name": "Fast", "currentValue": options["fast"]},
    ]


def lines(*messages: dict) -> None:
    """Several messages in one write: the host reads them together."""
    sys.stdout.write("".join(json.dumps(m) + "\n" for m in messages))
    sys.stdout.flush()


def end_turn(mid) -> dict:
    return {"jsonrpc": "2.0", "id": mid, "result": {"stopReason": "end_turn"}}


sys.stderr.write(f"bad agent starting in {MODE} mode; api_key={os.environ.get('BAD_AGENT_KEY', '')}\n")
sys.stderr.flush()

for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        if not silent:
            version = 2 if MODE == "future" else 1
            send(
                {"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": version, "agentCapabilities": {}}}
            )
    elif method == "session/new":
        modes = {
            "currentModeId": "ask",
            "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}],
        }
        result = {"sessionId": "s1", "modes": modes}
        if MODE == "options":
            result["configOptions"] = config_options()
        send({"jsonrpc": "2.0", "id": mid, "result": result})
        new_id = mid
    elif method == "session/set_config_option":
        options[msg["params"]["configId"]] = msg["params"]["value"]
        send({"jsonrpc": "2.0", "id": mid, "result": {"configOptions": config_options()}})
    elif method == "session/set_mode":
        send(
            {
                "jsonrpc": "2.0",
                "id": mid,
                "error": {"code": -32602, "message": "this agent stays in ask mode"},
            }
        )
    elif method == "session/prompt":
        update("s1", chunk("working... "))
        if MODE == "hang" or (MODE == "deaf_once" and not respawned):
            continue
        if MODE in ("options", "deaf_once"):
            update("s1", chunk(json.dumps(options, sort_keys=True)))
            send(end_turn(mid))
        elif MODE == "unknown_call_answered":
            ghost = {"sessionUpdate": "tool_call_update", "toolCallId": "ghost", "status": "completed"}
            lines(notification("s1", ghost), end_turn(mid))
        elif MODE == "unknown_session_answered":
            lines(notification("someone-else", chunk("hi")), end_turn(mid))
        elif MODE == "bad_mode":
            update("s1", {"sessionUpdate": "current_mode_update", "currentModeId": "no-such-mode"})
            send(end_turn(mid))
        elif MODE == "garbage":
            sys.stdout.write("this is not JSON at all\n")
            sys.stdout.flush()
        elif MODE == "flood":
            block = "x" * 65536 + "\n"
            for _ in range(64):
                sys.stderr.write(block)
            sys.stderr.flush()
        elif MODE == "unknown_session":
            update("someone-else", chunk("hi"))
        elif MODE == "unknown_call":
            update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "ghost", "status": "completed"})
        elif MODE == "second_response":
            send({"jsonrpc": "2.0", "id": new_id, "result": {"sessionId": "s1"}})
        elif MODE == "crash_then_silent":
            sys.stderr.write("crashing now\n")
            sys.stderr.flush()
            os._exit(5)
        elif MODE == "env":
            update("s1", chunk(json.dumps(sorted(os.environ))))
            send({"jsonrpc": "2.0", "id": mid, "result": {"stopReason": "end_turn"}})
        elif MODE == "late_permission":
            prompt_id = mid
            continue
        elif MODE == "big_chunks":
            for i in range(200):
                update("s1", chunk(f"[{i:03}]" + "y" * 16_000))
            send({"jsonrpc": "2.0", "id": mid, "result": {"stopReason": "end_turn"}})
    elif method == "session/cancel" and MODE == "late_permission":
        send(
            {
                "jsonrpc": "2.0",
                "id": 900,
                "method": "session/request_permission",
                "params": {
                    "sessionId": "s1",
                    "toolCall": {"toolCallId": "late", "title": "Late request", "kind": "edit"},
                    "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"}],
                },
            }
        )
    elif "result" in msg and mid == 900:
        sys.stderr.write(f"permission outcome: {json.dumps(msg['result'])}\n")
        sys.stderr.flush()
        send({"jsonrpc": "2.0", "id": prompt_id, "result": {"stopReason": "cancelled"}})
