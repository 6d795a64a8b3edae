"""sandbox/bootcheck's verdict on what a booted node said (its serial console), on consoles shaped like real boots:
the stand-in module and Debian's nvidia-current under qemu without a GPU, with and without enforced signatures."""

import pytest


def console(*lines, done=True):
    noise = ["[    0.000000] Linux version 6.1.0-50-amd64", "Loading, please wait...", "Begin: Mounting root"]
    marked = [f"GPUFLEET-BOOTCHECK {line}" for line in (*lines, *(["done"] if done else []))]
    return "\n".join(noise + marked + ["[   12.0] reboot: Power down"])


NO_GPU = console(
    "kernel 6.1.0-50-amd64",
    "module nvidia-current 535.261.03 signer DKMS module signing key",
    "modprobe nvidia-current rc 1 modprobe: ERROR: could not insert 'nvidia_current': No such device",
    "dmesg [   10.1] nvidia: module verification failed: signature and/or required key missing - tainting kernel",
    "dmesg [   10.2] NVRM: No NVIDIA GPU found.",
    "nouveau not-loaded",
    "nouveau-udev refused by the blacklist",
)


def test_a_boot_without_a_gpu_is_the_good_outcome(bootcheck):
    found = bootcheck.parse(NO_GPU)
    assert found["outcome"] == "no-gpu"
    assert (found["kernel"], found["module"], found["version"]) == ("6.1.0-50-amd64", "nvidia-current", "535.261.03")
    assert found["signer"] == "DKMS module signing key"
    assert (found["nouveau_loaded"], found["nouveau_udev"]) == (False, "refused by the blacklist")


@pytest.mark.parametrize(
    ("modprobe", "dmesg", "outcome"),
    [
        ("rc 1 modprobe: ERROR: could not insert 'nvidia': Key was rejected by service", "", "key-rejected"),
        ("rc 1 modprobe: FATAL: Module nvidia not found in directory /lib/modules/6.1.0-50-amd64", "", "no-module"),
        (
            "rc 1 modprobe: ERROR: could not insert 'nvidia': Unknown symbol in module",
            "nvidia: Unknown symbol x",
            "broken",
        ),
        ("rc 1 modprobe: ERROR: could not insert 'nvidia': Exec format error", "", "broken"),
        # "No such device" next to an unknown symbol is still a broken module.
        ("rc 1 modprobe: ERROR: could not insert 'nvidia': No such device", "nvidia: Unknown symbol y", "broken"),
        # Loaded where no GPU exists: not what the real module does.
        ("rc 0", "", "broken"),
    ],
)
def test_failures_a_real_node_would_hit(bootcheck, modprobe, dmesg, outcome):
    lines = ["kernel 6.1.0-50-amd64", f"modprobe nvidia {modprobe}"] + ([f"dmesg {dmesg}"] if dmesg else [])
    assert bootcheck.parse(console(*lines, "nouveau not-loaded"))["outcome"] == outcome


def test_a_boot_that_never_finished_is_incomplete(bootcheck):
    assert bootcheck.parse(console("kernel 6.1.0-50-amd64", done=False))["outcome"] == "incomplete"
    assert bootcheck.parse("Kernel panic - not syncing: VFS: Unable to mount root fs")["outcome"] == "incomplete"
