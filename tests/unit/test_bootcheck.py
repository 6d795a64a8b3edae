"""sandbox/bootcheck's verdict on what a booted node said (its serial console), on consoles shaped like real boots:
the stand-in module and Debian's nvidia-current under qemu without a GPU, with and without enforced signatures."""

import json

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


REJECTED = console(
    "kernel 6.1.0-50-amd64",
    "module nvidia-current 535.261.03 signer DKMS module signing key",
    "modprobe nvidia-current rc 1 modprobe: ERROR: could not insert 'nvidia_current': Key was rejected by service",
    "dmesg [   10.1] Loading of module with unavailable key is rejected",
    "nouveau not-loaded",
    "nouveau-udev refused by the blacklist",
)


@pytest.fixture
def boots(bootcheck, monkeypatch, tmp_path):
    """main() with the node's image and qemu replaced: each boot answers the console queued for it."""
    made, booted, consoles = [], [], []

    def prepare(node, kernel, work):
        made.append(node)
        return tmp_path / "root.img", 12.5

    def boot(kernel, work, image, sig_enforce, timeout):
        booted.append((image, sig_enforce))
        return consoles.pop(0), 40.0

    monkeypatch.setattr(bootcheck.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(bootcheck, "prepare", prepare)
    monkeypatch.setattr(bootcheck, "boot", boot)
    return made, booted, consoles


def test_a_second_boot_enforcing_signatures_reuses_the_image(bootcheck, boots, capsys):
    made, booted, consoles = boots
    consoles.extend([NO_GPU, REJECTED])
    argv = ["kern-nvidia", "--kernel", "6.1.0-50-amd64", "--json", "--then-enforced", "key-rejected"]
    assert bootcheck.main(argv) == 0
    found = json.loads(capsys.readouterr().out)
    assert made == ["kern-nvidia"]
    assert [enforced for _image, enforced in booted] == [False, True]
    assert booted[0][0] == booted[1][0]
    assert (found["outcome"], found["sig_enforce"], found["image_seconds"]) == ("no-gpu", False, 12.5)
    assert (found["enforced"]["outcome"], found["enforced"]["sig_enforce"]) == ("key-rejected", True)


@pytest.mark.parametrize(
    ("second", "status"),
    [
        # The module loads as far as a GPU-less machine lets it although signatures are enforced: not what was expected.
        (NO_GPU, 1),
        # The second boot never finished: the boot itself failed.
        (console("kernel 6.1.0-50-amd64", done=False), 2),
    ],
)
def test_the_enforced_boot_decides_the_exit_status_too(bootcheck, boots, capsys, second, status):
    consoles = boots[2]
    consoles.extend([NO_GPU, second])
    assert bootcheck.main(["kern-nvidia", "--kernel", "6.1.0-50-amd64", "--then-enforced", "key-rejected"]) == status
    found = json.loads(capsys.readouterr().out)
    assert found["as_expected"] and not found["enforced"]["as_expected"]


def test_one_boot_when_no_second_is_asked_for(bootcheck, boots, capsys):
    _made, booted, consoles = boots
    consoles.append(REJECTED)
    assert (
        bootcheck.main(["kern-nvidia", "--kernel", "6.1.0-50-amd64", "--sig-enforce", "--expect", "key-rejected"]) == 0
    )
    assert [enforced for _image, enforced in booted] == [True]
    assert "enforced" not in json.loads(capsys.readouterr().out)
