"""The health loop's decisions on real `scontrol show node` output (Slurm 22.05, tests/unit/slurm/fixtures)."""

from pathlib import Path

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.findings import finding
from ansible_collections.gpufleet.stack.plugins.module_utils._node.health import loop
from ansible_collections.gpufleet.stack.plugins.module_utils._node.slurm.scontrol import parse_node

SLURM = Path(__file__).resolve().parents[1] / "slurm" / "fixtures"
HOT = finding("critical", 3, "temperature at or over the card's slowdown threshold", 95, 89)
ECC = finding("critical", 1, "uncorrectable ECC errors since boot", 2, 0)
WARM = finding("warning", 0, "temperature at or over threshold", 86, 85)
NEXT_KERNEL = finding(
    "critical", None, "the kernel that boots next (6.1.0-31-amd64, grub) has no nvidia module", "x", "y"
)


def node(fixture="idle.txt", state=None, reason=None):
    text = (SLURM / fixture).read_text()
    parsed = parse_node(text)
    if state:
        base, *flags = state.split("+")
        parsed.update(state=state, base=base, flags=flags)
    if reason is not None:
        parsed["reason"] = reason
    return parsed


def test_a_critical_finding_drains_an_idle_node_with_the_finding_as_reason():
    decision = loop.decide(node(), [HOT, WARM])
    assert decision["action"] == "drain"
    assert decision["reason"] == (
        "gpufleet-health: GPU 3: temperature at or over the card's slowdown threshold (limit 89)"
    )
    argv = loop.scontrol_argv("gpu-1", decision)
    assert argv == ["scontrol", "update", "NodeName=gpu-1", "State=DRAIN", f"Reason={decision['reason']}"]


def test_several_findings_name_the_first_and_count_the_rest():
    assert loop.decide(node(), [HOT, ECC])["reason"].endswith("(limit 89); +1 more")


def test_a_new_reading_of_the_same_finding_does_not_renew_the_drain():
    """Renewing resets Slurm's record of when the node was drained: only a change of finding does."""
    drained = node(state="IDLE+DRAIN", reason=loop.reason_for([HOT]))
    hotter = finding("critical", 3, "temperature at or over the card's slowdown threshold", 97, 89)
    assert loop.decide(drained, [hotter])["action"] == "none"


@pytest.mark.parametrize(
    ("state", "reason"),
    [("DOWN", "replacing GPU 3"), ("DOWN", ""), ("IDLE", "admin: watch this node"), ("IDLE+FAIL", "bad PSU")],
)
def test_a_node_someone_else_took_out_or_annotated_is_left_alone(state, reason):
    """An admin's DOWN node with a critical finding is not drained over, nor later resumed by the loop."""
    down = node(state=state, reason=reason)
    assert loop.decide(down, [HOT])["action"] == "keep"
    assert loop.scontrol_argv("gpu-1", loop.decide(down, [HOT])) is None
    assert loop.decide(down, [])["action"] == "none"


def test_warnings_alone_do_not_drain():
    assert loop.decide(node(), [WARM])["action"] == "none"


def test_the_next_boot_kernel_finding_does_not_drain_a_running_node():
    assert loop.decide(node(), [NEXT_KERNEL])["action"] == "none"


def test_a_users_ignore_text_keeps_a_finding_from_draining():
    assert loop.decide(node(), [ECC], ignore=["uncorrectable ECC"])["action"] == "none"


def test_the_decision_says_whether_the_node_is_out_by_our_drain():
    assert loop.decide(node(), [HOT])["drained_by_us"] is True
    assert loop.decide(node(state="IDLE+DRAIN", reason=loop.reason_for([HOT])), [HOT])["drained_by_us"] is True
    assert loop.decide(node(state="IDLE+DRAIN", reason="admin: x"), [HOT])["drained_by_us"] is False
    assert loop.decide(node(state="IDLE+DRAIN", reason=loop.reason_for([HOT])), [])["drained_by_us"] is False


def test_our_drain_is_resumed_once_clean():
    drained = node(state="IDLE+DRAIN", reason="gpufleet-health: GPU 3: temperature at or over ...")
    decision = loop.decide(drained, [WARM])
    assert decision["action"] == "resume"
    assert loop.scontrol_argv("gpu-1", decision) == ["scontrol", "update", "NodeName=gpu-1", "State=RESUME"]


def test_our_drain_with_the_same_findings_is_left_alone_and_renewed_when_they_change():
    reason = loop.reason_for([HOT])
    drained = node(state="IDLE+DRAIN", reason=reason)
    assert loop.decide(drained, [HOT])["action"] == "none"
    assert loop.decide(drained, [ECC])["action"] == "renew"


@pytest.mark.parametrize(
    "reason",
    ["admin: bad DIMM in slot B2", "gpufleet: upgrade to driver 570.172.08", "NHC: check_hw_eth failed"],
)
def test_someone_elses_drain_is_never_resumed_nor_renamed(reason):
    drained = node(state="IDLE+DRAIN", reason=reason)
    assert loop.decide(drained, [])["action"] == "none"
    critical = loop.decide(drained, [HOT])
    assert critical["action"] == "keep"
    assert loop.scontrol_argv("gpu-1", critical) is None


def test_the_upgrades_real_drain_is_not_ours():
    """draining.txt is the upgrade's own drain recorded from the sandbox cluster (reason "gpufleet: upgrade ...")."""
    drained = node("draining.txt")
    assert drained["reason"].startswith("gpufleet: upgrade")
    assert loop.decide(drained, [])["action"] == "none"


def test_a_long_reason_stays_one_slurm_line():
    long = finding("critical", None, "x" * 400)
    reason = loop.decide(node(), [long])["reason"]
    assert len(reason) <= 240 and reason.endswith("...")


# Every decision whole, including the reason and why it gives, and the second branches (make mutation).
OURS = "gpufleet-health: GPU 3: temperature at or over the card's slowdown threshold (limit 89)"


@pytest.mark.parametrize(
    ("state", "reason", "findings", "expected"),
    [
        ("IDLE", "", [HOT], ("drain", OURS, "critical finding on a node Slurm has not drained", True)),
        (
            "IDLE+DRAIN",
            OURS,
            [HOT],
            ("none", OURS, "still critical; already drained by the health loop for this reason", True),
        ),
        (
            "IDLE+DRAIN",
            "gpufleet-health: GPU 1: uncorrectable ECC errors since boot (limit 0)",
            [HOT],
            ("renew", OURS, "still critical; our drain's reason updated to the findings of this run", True),
        ),
        (
            "IDLE+DRAIN",
            "disk swap",
            [HOT],
            ("keep", OURS, "critical, but it carries someone else's reason (disk swap): left alone", False),
        ),
        (
            "DOWN",
            "Not responding",
            [HOT],
            ("keep", OURS, "critical, but Slurm has it DOWN (Not responding): left alone", False),
        ),
        ("IDLE+FAIL", "", [HOT], ("keep", OURS, "critical, but Slurm has it IDLE+FAIL: left alone", False)),
        ("IDLE+DRAIN", OURS, [], ("resume", OURS, "no critical finding: resuming our own drain", False)),
        # Resuming a node Slurm has DOWN is not ours to do, even with our reason on it.
        ("DOWN+DRAIN", OURS, [], ("none", OURS, "healthy, but drained by someone else: left drained", False)),
        (
            "IDLE+DRAIN",
            "disk swap",
            [],
            ("none", "disk swap", "healthy, but drained by someone else: left drained", False),
        ),
        ("IDLE", "", [WARM], ("none", "", "healthy and not drained", False)),
        ("MIXED", "", [NEXT_KERNEL], ("none", "", "healthy and not drained", False)),
    ],
)
def test_each_decision_whole(state, reason, findings, expected):
    decision = loop.decide(node(state=state, reason=reason), findings)
    assert (decision["action"], decision["reason"], decision["why"], decision["drained_by_us"]) == expected


def test_a_reason_names_the_node_or_the_gpu_and_a_numeric_limit_only():
    host = finding("critical", None, "NVML sees 7 of 8 GPUs on the PCI bus", 7, 8)
    assert loop.reason_for([host]) == "gpufleet-health: node: NVML sees 7 of 8 GPUs on the PCI bus (limit 8)"
    remap = finding("critical", 0, "row remapping failed: the GPU needs service", True, False)
    assert loop.reason_for([remap]) == "gpufleet-health: GPU 0: row remapping failed: the GPU needs service"
    flagged = finding("critical", 0, "x", 1.5, 2.5)
    assert loop.reason_for([flagged, HOT, ECC]) == "gpufleet-health: GPU 0: x (limit 2.5); +2 more"
    gone = finding("critical", 1, "gpu not accessible through NVML", "Unknown Error")
    assert loop.reason_for([gone]) == "gpufleet-health: GPU 1: gpu not accessible through NVML"


@pytest.mark.parametrize(
    ("action", "argv"),
    [
        ("drain", ["scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=r"]),
        ("renew", ["scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=r"]),
        ("resume", ["scontrol", "update", "NodeName=n1", "State=RESUME"]),
        ("keep", None),
        ("none", None),
    ],
)
def test_only_drain_renew_and_resume_call_scontrol(action, argv):
    assert loop.scontrol_argv("n1", {"action": action, "reason": "r"}) == argv
