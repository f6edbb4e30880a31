from ahp_lab.protocol.text import Text
from ahp_lab.widgets.sanitize import BLOCK_LIMIT, clean_text, json_preview, one_line, safe_url, text_block


def test_clean_text_strips_terminal_escapes_and_controls():
    s = "\x1b[31mred\x1b[0m \x1b]0;title\x07ok \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x9b2J\x07\x00\x08end"
    assert clean_text(s) == "red ok link end"
    assert clean_text("a\tb\nc\r\nd\re") == "a\tb\nc\nd\ne"
    assert clean_text("\u202eevil\u202c") == "evil"
    assert clean_text("unterminated \x1b]52;c;ZXZpbA==") == "unterminated "
    assert clean_text("lone \x1b") == "lone "


def test_clean_text_accepts_anything():
    assert clean_text(None) == ""
    assert clean_text(Text(("ab", "c"))) == "abc"
    assert clean_text({"markdown": "**x**"}) == "**x**"
    assert clean_text(12) == "12"
    assert clean_text(object()) == ""


def test_text_block_caps_and_reports_length():
    big = "y" * (5 * 1024 * 1024)
    b = text_block(big, "r")
    assert len(b["text"]) == BLOCK_LIMIT and b["truncated"] and b["length"] == len(big)
    b = text_block(big, "r", {"r": 4 * BLOCK_LIMIT})
    assert len(b["text"]) == 4 * BLOCK_LIMIT
    small = text_block({"markdown": "hi"}, "m")
    assert small == {"text": "hi", "length": 2, "truncated": False, "ref": "m", "markdown": True}
    assert text_block(None, "n")["text"] == ""


def test_text_block_cleans_only_a_bounded_prefix():
    big = "\x1b[1m" + "z" * (3 * 1024 * 1024)
    b = text_block(big, "r")
    assert b["text"].startswith("zzz") and len(b["text"]) == BLOCK_LIMIT


def test_safe_url():
    assert safe_url("https://example.org/a?b") == "https://example.org/a?b"
    assert safe_url("mailto:a@b.c") == "mailto:a@b.c"
    for bad in [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        " javascript:x",
        "java\tscript:x",
        "jav\x00ascript:x",
        "data:text/html,<script>",
        "data:image/png;base64,AAAA",
        "vbscript:msgbox",
        "file:///etc/passwd",
        "/relative",
        "",
        None,
        5,
        {"u": 1},
    ]:
        assert safe_url(bad) is None, bad


def test_one_line_and_json_preview():
    assert one_line("a\n\n b\x1b[2m  c", 50) == "a b c"
    assert one_line("x" * 300, 10) == "x" * 9 + "…"
    p = json_preview({"a": "\x1b[31m", "t": Text(("q",))}, "j")
    assert "\\u001b[31m" in p["text"] and '"q"' in p["text"]
    circular: dict = {}
    circular["self"] = circular
    assert "unserializable" in json_preview(circular, "c")["text"]


def test_json_preview_shows_a_long_state_list_as_a_list():
    """Reducers turn long collections into Vectors; a preview still shows the plain JSON array."""
    from ahp_lab.protocol.vector import Vector

    turns = Vector.of([{"id": f"t{i}"} for i in range(40)])
    text = json_preview({"turns": turns}, "v", indent=None)["text"]
    assert text.startswith('{"turns": [{"id": "t0"}') and '"t39"' in text


def test_a_lone_surrogate_a_remote_host_sent_becomes_a_replacement_character():
    """A host's lone half went to the browser as it was, and the kernel could not encode the
    message (ipykernel's packer refuses lone surrogates): the view stopped updating."""
    import json

    shown = clean_text("a\ud800b \ud83d\ude00")
    assert shown == "a\ufffdb \U0001f600"
    json.dumps(shown, ensure_ascii=False).encode("utf-8")  # what the kernel sends: no error


def test_an_unterminated_string_sequence_hides_at_most_a_kilobyte():
    """An ``ESC P`` (or ``ESC ]``, ``ESC _``) without its end hid everything after it: an agent's
    error message after a stray one in its stderr tail."""
    for start in ("\x1bP", "\x1b]", "\x1b_", "\x9d"):
        shown = clean_text(start + "q" * 2000 + " the real error")
        assert shown.endswith("the real error") and len(shown) < 1100
