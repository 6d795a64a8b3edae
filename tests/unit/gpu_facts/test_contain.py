"""What a node reports, made safe to keep and show (module_utils/_node/contain.py): decoded, cleaned and bounded."""

from ansible_collections.gpufleet.stack.plugins.module_utils._node import contain


def test_bytes_that_are_not_utf8_are_decoded_with_replacement():
    assert contain.text(b"Tesla T4 \xed\xb3\xbf") == "Tesla T4 \ufffd\ufffd\ufffd"
    assert contain.text(b"NVIDIA H100 80GB HBM3") == "NVIDIA H100 80GB HBM3"


def test_control_characters_are_replaced_but_tabs_and_newlines_kept():
    assert contain.text("\x1b[31mred\x07\x00") == "\ufffd[31mred\ufffd\ufffd"
    assert contain.text("a\tb\nc") == "a\tb\nc"
    assert contain.text("\x85x\u2028y") == "\ufffdx\ufffdy"
    # A lone surrogate (from a decoder's surrogateescape) cannot reach a JSON or YAML writer.
    assert contain.text("x\udcffy") == "x?y"


def test_long_strings_are_cut_at_the_limit_and_say_so():
    cut = contain.text("A" * 1_000_000)
    assert cut.startswith("A" * 4096) and cut.endswith("... [995904 more characters cut]")
    assert contain.text("B" * 4096) == "B" * 4096
    assert contain.text("B" * 4097) == "B" * 4096 + "... [1 more characters cut]"


def test_whole_results_are_walked_and_other_values_kept():
    facts = {"gpus": [{"name": b"\xff", "index": 0, "ok": True, "temp": None}], "ke\x07y": ("a", 1.5)}
    assert contain.contained(facts) == {
        "gpus": [{"name": "\ufffd", "index": 0, "ok": True, "temp": None}],
        "ke\ufffdy": ["a", 1.5],
    }
