"""Xid lines and their severities (_common/xid.py), against NVIDIA's Xid catalog
(https://docs.nvidia.com/deploy/xid-errors/): every Xid the health check names, and the ones beside them."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._common import xid

# The catalog's meaning of each Xid the collection names.
CRITICAL = {
    48: "double-bit ECC error",
    61: "internal micro-controller breakpoint/warning",
    62: "internal micro-controller halt",
    64: "ECC page retirement or row remapper recording failure",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate",
    95: "uncontained ECC error",
    119: "GSP RPC timeout",
    120: "GSP error",
    140: "unrecovered ECC error",
}
APPLICATION = {
    13: "graphics engine exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    45: "preemptive cleanup",
}


@pytest.mark.parametrize("number", sorted(CRITICAL))
def test_hardware_and_driver_faults_are_critical(number):
    assert xid.xid_severity(number) == "critical", CRITICAL[number]


@pytest.mark.parametrize("number", sorted(APPLICATION))
def test_what_a_program_causes_is_information(number):
    assert xid.xid_severity(number) == "info", APPLICATION[number]


@pytest.mark.parametrize(
    "number", sorted({n + d for n in {**CRITICAL, **APPLICATION} for d in (-1, 1)} - {*CRITICAL, *APPLICATION})
)
def test_any_other_xid_is_a_warning(number):
    assert xid.xid_severity(number) == "warning"


@pytest.mark.parametrize(
    ("line", "parsed"),
    [
        ("NVRM: Xid (PCI:0000:07:00): 79, pid=0, GPU has fallen off the bus.", ((0, 7, 0), 79)),
        ("[ 12.5] NVRM: Xid (PCI:0001:c1:00): 48, pid='<unknown>', name=<unknown>", ((1, 0xC1, 0), 48)),
        ("NVRM: Xid (PCI:0000:3b:00.0): 13, Graphics Exception", ((0, 0x3B, 0), 13)),
        ("NVRM: Xid (PCI:0000:3b:1f): 140,", ((0, 0x3B, 0x1F), 140)),
        ("NVRM: Xid (PCI:00000000:3b:00): 31", ((0, 0x3B, 0), 31)),
        ("NVRM: Xid (PCI:0000:3b:00):", None),
        ("NVRM: Xid (PCI:0000:3b): 79", None),
        ("nvidia-modeset: Xid 79", None),
        ("", None),
    ],
)
def test_an_xid_line_is_decoded_to_its_bus_and_number(line, parsed):
    assert xid.parse_xid(line) == parsed


@pytest.mark.parametrize(
    ("bus_id", "key"),
    [
        ("00000000:3B:00.0", (0, 0x3B, 0)),
        ("0000:3b:00", (0, 0x3B, 0)),
        ("0002:c1:1f.1", (2, 0xC1, 0x1F)),
        ("0010:3b:00.0", (16, 0x3B, 0)),  # the domain is hexadecimal too
        ("3b:00.0", None),
        ("", None),
        (None, None),
    ],
)
def test_a_bus_id_keys_nvml_and_sysfs_alike(bus_id, key):
    assert xid.pci_key(bus_id) == key
