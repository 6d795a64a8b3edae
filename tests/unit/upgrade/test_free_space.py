"""Room for an install, per filesystem (module_utils/_node/disk.py and the module gpufleet.stack.free_space)."""

import os

from ansible_collections.gpufleet.stack.plugins.module_utils._node import disk

MIB = 1024 * 1024
# A node with /boot on a partition of its own and everything else on /.
FILESYSTEMS = {"/": (1, 8000 * MIB), "/boot": (2, 150 * MIB)}


def statvfs(path):
    device, free = FILESYSTEMS["/boot" if path.startswith("/boot") else "/"]
    return {"device": device, "free": free}


def test_needs_are_summed_per_filesystem_and_a_short_one_is_named_with_figures():
    problems, figures = disk.shortfalls(disk.DEFAULT_NEEDS, statvfs, lambda path: True)
    assert problems == ["150 MiB free for /boot (the initramfs of each kernel, 200 MiB): 200 MiB needed"]
    assert figures[1] == (
        "8000 MiB free for /usr (the packages' files, 4096 MiB); /var/cache/apt/archives (apt's downloaded packages, "
        "1024 MiB); /var/lib/dkms (DKMS' module builds, 512 MiB): 5632 MiB needed"
    )
    assert len(problems) == 1 and len(figures) == 2


def test_enough_everywhere_is_no_problem():
    needs = {"/usr": (100, "x"), "/boot": (150, "initramfs")}
    assert disk.shortfalls(needs, statvfs, lambda path: True)[0] == []


def test_a_directory_not_made_yet_counts_on_its_nearest_parent():
    made = {"/", "/var", "/var/lib"}
    assert disk.existing("/var/lib/dkms", made.__contains__) == "/var/lib"
    assert disk.existing("/srv/new/dir", made.__contains__) == "/"


def test_the_module_refuses_what_the_filesystem_cannot_hold(run_module):
    st = os.statvfs("/dev/shm")
    free_mib = st.f_bavail * st.f_frsize // MIB
    rc, result = run_module("gpufleet.stack.free_space", {"needs": {"/dev/shm/gpufleet-test": free_mib + 64}})
    assert rc != 0 and "not enough free space for the install, nothing was changed" in result["msg"]
    assert f"MiB free for /dev/shm/gpufleet-test (the install, {free_mib + 64} MiB)" in result["msg"]
    rc, result = run_module("gpufleet.stack.free_space", {"needs": {"/dev/shm": 1}})
    assert rc == 0 and result["filesystems"][0].endswith(": 1 MiB needed")


def test_the_module_takes_ascii_digits_only(run_module):
    rc, result = run_module("gpufleet.stack.free_space", {"needs": {"/dev/shm": "\u0661\u0662"}})
    assert rc != 0 and "is not an absolute directory and a whole number of MiB" in result["msg"]
