"""_node/kernels: installed kernels, the next boot, and the nvidia module each has, on fixture trees laid out
as Debian lays them out (/boot/vmlinuz-*, /vmlinuz -> boot/vmlinuz-*, /lib/modules/*/updates/dkms, DKMS' tree)."""

import os

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node import kernels as k

OLD, NEW = "6.1.0-28-amd64", "6.1.0-9-amd64"  # 9 < 28: a string sort would get this wrong


def kernel(root, release, *, module=None, dkms=None, name="nvidia.ko", link=False):
    (root / "boot").mkdir(exist_ok=True)
    (root / "boot" / f"vmlinuz-{release}").write_text("image")
    mods = root / "lib/modules" / release / "kernel/drivers/net"
    mods.mkdir(parents=True, exist_ok=True)
    (mods / "e1000.ko").write_text("")
    if module:
        (root / "lib/modules" / release / "updates/dkms").mkdir(parents=True, exist_ok=True)
        (root / "lib/modules" / release / "updates/dkms" / name).write_text("module")
    if dkms:
        (root / "var/lib/dkms" / name.split(".ko")[0] / dkms / release / "x86_64/module").mkdir(parents=True)
    if link:
        target = root / "vmlinuz"
        if target.is_symlink():
            target.unlink()
        os.symlink(f"boot/vmlinuz-{release}", target)


def test_kernel_versions_sort_as_numbers():
    assert sorted([OLD, NEW, "6.12.0-1-amd64", "6.1.0-28-cloud-amd64"], key=k.version_key) == [
        NEW, OLD, "6.1.0-28-cloud-amd64", "6.12.0-1-amd64"]  # fmt: skip


def test_next_boot_follows_the_vmlinuz_link_else_the_newest(tmp_path):
    kernel(tmp_path, NEW)
    kernel(tmp_path, OLD)
    assert k.next_boot_kernel(str(tmp_path)) == (OLD, "the newest installed kernel image")
    kernel(tmp_path, NEW, link=True)
    assert k.next_boot_kernel(str(tmp_path)) == (NEW, "/vmlinuz points to it")


def test_next_boot_follows_a_link_in_boot_and_ignores_a_dangling_one(tmp_path):
    """linux-update-symlinks with link_in_boot=yes writes /boot/vmlinuz -> vmlinuz-<release>; a link left at a removed
    kernel says nothing, and the newest image is taken."""
    kernel(tmp_path, NEW)
    kernel(tmp_path, OLD)
    os.symlink(f"vmlinuz-{NEW}", tmp_path / "boot" / "vmlinuz")
    assert k.next_boot_kernel(str(tmp_path)) == (NEW, "/boot/vmlinuz points to it")
    os.symlink("boot/vmlinuz-6.1.0-1-amd64", tmp_path / "vmlinuz")  # removed long ago; /boot's link still decides
    assert k.next_boot_kernel(str(tmp_path)) == (NEW, "/boot/vmlinuz points to it")
    (tmp_path / "boot" / "vmlinuz").unlink()
    assert k.next_boot_kernel(str(tmp_path)) == (OLD, "the newest installed kernel image")


def test_no_kernel_image_is_unknown_not_a_problem(tmp_path):
    (tmp_path / "lib/modules/6.18.44-fc").mkdir(parents=True)  # a container: modules of the host, no image
    report = k.kernel_report(str(tmp_path), "6.18.44-fc", "570.172.08")
    assert report["next_boot"] is None and report["kernels"] == []
    assert k.next_boot_problem(report, "570.172.08") is None


def test_a_new_kernel_without_headers_has_no_module_and_is_named(tmp_path):
    kernel(tmp_path, OLD, module=True, dkms="570.172.08")
    kernel(tmp_path, "6.1.0-30-amd64")  # unattended-upgrades brought it; no headers, so DKMS built nothing
    report = k.kernel_report(str(tmp_path), OLD, "570.172.08")
    rows = {r["release"]: r for r in report["kernels"]}
    assert rows[OLD] == {"release": OLD, "running": True, "next_boot": False, "present": True,
                         "versions": ["570.172.08"], "matches": True, "detail": "nvidia module 570.172.08"}  # fmt: skip
    assert rows["6.1.0-30-amd64"]["present"] is False and rows["6.1.0-30-amd64"]["next_boot"] is True
    problem = k.next_boot_problem(report, "570.172.08")
    assert problem.startswith("the kernel that boots next (6.1.0-30-amd64, the newest installed kernel image) has no "
                              "nvidia module in /lib/modules/6.1.0-30-amd64: after a reboot driver 570.172.08 would "
                              "not load")  # fmt: skip
    assert "linux-headers-6.1.0-30-amd64" in problem


def test_a_module_for_the_old_driver_is_not_enough(tmp_path):
    kernel(tmp_path, OLD, module=True, dkms="570.133.20", link=True)
    report = k.kernel_report(str(tmp_path), OLD, "570.172.08")
    assert report["kernels"][0]["matches"] is False
    assert "nvidia module 570.133.20, not the installed driver 570.172.08" in k.next_boot_problem(report, "570.172.08")


@pytest.mark.parametrize("name", ["nvidia.ko.xz", "nvidia.ko.zst", "nvidia-current.ko"])
def test_compressed_and_debian_named_modules_count(tmp_path, name):
    kernel(tmp_path, OLD, module=True, name=name)
    versions = {}
    report = k.kernel_report(str(tmp_path), OLD, "550.163.01", modinfo=lambda p: versions.setdefault(p, "550.163.01"))
    assert report["kernels"][0]["present"] and report["kernels"][0]["matches"]
    assert [os.path.basename(p) for p in versions] == [name]  # no DKMS tree: modinfo tells the version


def test_a_module_whose_version_is_unknown_still_counts(tmp_path):
    kernel(tmp_path, OLD, module=True, link=True)
    report = k.kernel_report(str(tmp_path), OLD, "570.172.08")  # no DKMS tree, no modinfo
    assert report["kernels"][0]["matches"] is True
    assert k.next_boot_problem(report, "570.172.08") is None


def test_two_driver_versions_built_for_one_kernel(tmp_path):
    """DKMS' tree keeps every version it built for a kernel; the module file's own version (modinfo) decides, and
    without modinfo all of them are reported rather than one picked by directory order."""
    kernel(tmp_path, OLD, module=True, dkms="570.133.20", link=True)
    (tmp_path / "var/lib/dkms/nvidia/570.172.08" / OLD / "x86_64/module").mkdir(parents=True)
    assert k.kernel_report(str(tmp_path), OLD, "570.172.08")["kernels"][0]["versions"] == ["570.133.20", "570.172.08"]
    report = k.kernel_report(str(tmp_path), OLD, "570.172.08", modinfo=lambda path: "570.133.20")
    assert report["kernels"][0]["versions"] == ["570.133.20"]
    assert "not the installed driver 570.172.08" in k.next_boot_problem(report, "570.172.08")


# --- what DKMS builds for, and what that takes (driver_state's kernel_packages, the dkms_modules module) ------------


@pytest.mark.parametrize(
    ("release", "flavour"),
    [
        ("6.1.0-28-amd64", "amd64"),
        ("6.1.0-28-cloud-amd64", "cloud-amd64"),
        ("6.12.9+bpo-amd64", "amd64"),  # a backports kernel has no ABI number
        ("6.12.9+bpo-rt-arm64", "rt-arm64"),
        ("6.18.44-fc-v1252", "fc-v1252"),  # a container host's kernel: no Debian flavour
        ("", ""),
    ],
)
def test_flavour(release, flavour):
    assert k.flavour(release) == flavour


def test_targets_are_the_running_kernel_and_the_next_boot(tmp_path):
    kernel(tmp_path, OLD)
    kernel(tmp_path, NEW, link=True)
    assert k.kernel_targets(str(tmp_path), OLD) == [OLD, NEW]
    assert k.kernel_targets(str(tmp_path), NEW) == [NEW]
    # A container: its running kernel is the host's; only its own next boot counts.
    assert k.kernel_targets(str(tmp_path), None) == [NEW]
    assert k.kernel_targets(str(tmp_path / "empty"), None) == []


def test_kernel_packages():
    assert k.kernel_packages([OLD, NEW]) == [
        "dkms",
        f"linux-headers-{OLD}",
        f"linux-headers-{NEW}",
        "linux-headers-amd64",
    ]
    # The metapackage follows the next boot's flavour; a custom kernel has none unless named.
    assert k.kernel_packages(["6.8.12-4-pve"]) == ["dkms", "linux-headers-6.8.12-4-pve"]
    assert (
        k.kernel_packages(["6.8.12-4-pve"], headers_package="proxmox-default-headers")[-1] == "proxmox-default-headers"
    )
    assert k.kernel_packages(["5.14.0-503.el9.x86_64"], "kernel-devel-{}") == [
        "dkms",
        "kernel-devel-5.14.0-503.el9.x86_64",
    ]
    assert k.kernel_packages([]) == []


def test_headers_no_repository_has_are_not_asked_for():
    """A kernel whose headers the archive no longer has (an old ABI, a custom build): asking apt for them would fail
    the whole install; the metapackage still follows the next kernel's flavour, and the guard refuses that boot."""
    archive = {"dkms", f"linux-headers-{OLD}", "linux-headers-amd64"}
    missing = k.unavailable_headers([OLD, NEW], "linux-headers-{}", archive.__contains__)
    assert missing == [NEW]
    assert k.kernel_packages([OLD, NEW], unavailable=missing) == ["dkms", f"linux-headers-{OLD}", "linux-headers-amd64"]
    assert k.unavailable_headers([OLD], "linux-headers-{}", archive.__contains__) == []


# dkms 3.0.10 (bookworm) as it prints: one line per module, version, kernel and architecture.
DKMS_STATUS = """nvidia/570.133.20, 6.1.0-28-amd64, x86_64: installed
nvidia/570.133.20, 6.1.0-9-amd64, x86_64: built
nvidia/570.86.15: added
nvidia-current/535.261.03, 6.1.0-28-amd64, x86_64: installed (WARNING! Diff between built and installed module!)
"""


def test_dkms_status_and_plan(tmp_path):
    status = k.parse_dkms_status(DKMS_STATUS)
    assert status[("nvidia", "570.133.20", OLD)] == "installed"
    assert status[("nvidia", "570.133.20", NEW)] == "built"
    assert status[("nvidia-current", "535.261.03", OLD)] == "installed"
    assert len(status) == 3  # "added" names no kernel
    kernels = [NEW, OLD, "6.12.9+bpo-amd64"]
    plan = k.dkms_plan(kernels, "nvidia", "570.133.20", status, lambda kern: kern != "6.12.9+bpo-amd64")
    # Built but not installed is installed by `dkms install`; without headers nothing can be done.
    assert plan == [(NEW, "install"), (OLD, "installed"), ("6.12.9+bpo-amd64", "no headers")]
    assert k.dkms_plan([OLD], "nvidia", "580.95.05", status, lambda _k: True) == [(OLD, "install")]
    (tmp_path / f"lib/modules/{OLD}/build/include").mkdir(parents=True)
    (tmp_path / f"lib/modules/{NEW}/build").mkdir(parents=True)  # a dangling build tree without include/
    assert (k.headers_present(str(tmp_path), OLD), k.headers_present(str(tmp_path), NEW)) == (True, False)


def test_log_tail_is_bounded_and_decoded():
    text = b"".join(f"line {i}\n".encode() for i in range(100)) + b"\xff bad byte " + b"x" * 1000 + b"\n\n"
    tail = k.log_tail(text, lines=3, width=40).splitlines()
    assert tail[:2] == ["line 98", "line 99"]
    assert tail[2].startswith("\ufffd bad byte") and len(tail[2]) == 40


# Boundaries and second branches (make mutation).
def test_versions_sort_numbers_before_words_and_split_on_every_separator():
    releases = ["6.1.0-rc1-amd64", "6.1.0-28-amd64", "6.1.0-9-amd64", "6.12.9+bpo-amd64", "6.1.0~1-amd64"]
    assert sorted(releases, key=k.version_key) == [
        "6.1.0~1-amd64",
        "6.1.0-9-amd64",
        "6.1.0-28-amd64",
        "6.1.0-rc1-amd64",
        "6.12.9+bpo-amd64",
    ]
    assert k.version_key("6.1") == [(0, 6, ""), (0, 1, "")]
    assert k.version_key("rc") == [(1, 0, "rc")]


def test_only_named_images_are_kernels(tmp_path):
    assert k.installed_kernels(str(tmp_path)) == []  # no /boot at all
    (tmp_path / "boot").mkdir()
    for name in ("vmlinuz-", "vmlinuz", "vmlinuz.old", "initrd.img-6.1.0-28-amd64", "vmlinuz-6.1.0-28-amd64"):
        (tmp_path / "boot" / name).write_text("")
    assert k.installed_kernels(str(tmp_path)) == ["6.1.0-28-amd64"]
    assert k.next_boot_kernel(str(tmp_path)) == ("6.1.0-28-amd64", "the newest installed kernel image")
    assert k.next_boot_kernel(str(tmp_path / "empty")) == (
        None,
        "no kernel image in /boot (a container, or an image without a kernel)",
    )


def test_a_boot_vmlinuz_link_names_the_next_kernel(tmp_path):
    kernel(tmp_path, "6.1.0-28-amd64")
    kernel(tmp_path, "6.1.0-30-amd64")
    os.symlink("vmlinuz-6.1.0-28-amd64", tmp_path / "boot" / "vmlinuz")
    assert k.next_boot_kernel(str(tmp_path)) == ("6.1.0-28-amd64", "/boot/vmlinuz points to it")
    assert k.kernel_targets(str(tmp_path), "6.1.0-28-amd64") == ["6.1.0-28-amd64"]  # running and next: once


@pytest.mark.parametrize("name", ["nvidia", "nvidia-current", "nvidia-current-open"])
def test_dkms_trees_of_each_packaging_are_read(tmp_path, name):
    kernel(tmp_path, "6.1.0-28-amd64", module=True, dkms="550.163.01", name=f"{name}.ko")
    assert k.dkms_versions(str(tmp_path), "6.1.0-28-amd64") == {name: ["550.163.01"]}
    # No modinfo: DKMS' tree says which versions were built, found by the module's own name.
    report = k.module_report(str(tmp_path), "6.1.0-28-amd64", "550.163.01")
    assert (report["versions"], report["matches"], report["detail"]) == (
        ["550.163.01"],
        True,
        "nvidia module 550.163.01",
    )


def test_module_details_name_what_differs(tmp_path):
    kernel(tmp_path, "6.1.0-28-amd64", module=True, name="nvidia.ko.xz")
    old = k.module_report(str(tmp_path), "6.1.0-28-amd64", "570.1", modinfo=lambda path: "550.2")
    assert (old["matches"], old["detail"]) == (False, "nvidia module 550.2, not the installed driver 570.1")
    unknown = k.module_report(str(tmp_path), "6.1.0-28-amd64", "570.1", modinfo=lambda path: None)
    assert (unknown["matches"], unknown["detail"]) == (True, "nvidia module (version unknown)")
    report = k.kernel_report(str(tmp_path), "6.1.0-28-amd64", "570.1", modinfo=lambda path: "550.2")
    assert (report["running"], report["next_boot_source"]) == ("6.1.0-28-amd64", "the newest installed kernel image")
    assert k.next_boot_problem(report, None) is None
    assert k.next_boot_problem(report, "570.1") == (
        "the kernel that boots next (6.1.0-28-amd64, the newest installed kernel image) has nvidia module 550.2, not "
        "the installed driver 570.1: after a reboot driver 570.1 would not load. Install its headers "
        "(linux-headers-6.1.0-28-amd64) so DKMS builds the module (dkms autoinstall -k 6.1.0-28-amd64), or make "
        "another kernel the default"
    )


@pytest.mark.parametrize("flavour", ["amd64", "cloud-amd64", "rt-amd64", "arm64", "rt-arm64", "cloud-arm64"])
def test_every_debian_flavour_gets_its_headers_metapackage(flavour):
    assert k.kernel_packages([f"6.1.0-28-{flavour}"]) == [
        "dkms",
        f"linux-headers-6.1.0-28-{flavour}",
        f"linux-headers-{flavour}",
    ]


def test_a_foreign_flavour_gets_no_metapackage_and_an_empty_root_is_the_filesystems():
    assert k.kernel_packages(["6.8.0-45-generic"]) == ["dkms", "linux-headers-6.8.0-45-generic"]
    assert k.flavour("") == ""
    assert k._under("", "/boot") == "/boot"
    assert k._under(None, "boot") == "/boot"


def test_log_tail_keeps_the_last_25_lines_of_300_characters():
    text = "\n".join(f"{i:03d}" + "x" * 400 for i in range(40))
    tail = k.log_tail(text).splitlines()
    assert len(tail) == 25 and tail[0].startswith("015") and {len(line) for line in tail} == {300}
