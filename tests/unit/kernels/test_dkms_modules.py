"""gpufleet.stack.dkms_modules through the ansible CLI, with stand-ins for dkms and modinfo on PATH that behave as
dkms 3.0.10 does where the module depends on it: `status` lines, `install -k` building or failing with make.log."""

import os
import textwrap

import pytest

OLD, NEW, BARE = "6.1.0-28-amd64", "6.1.0-30-amd64", "6.12.9+bpo-amd64"
VERSION = "570.133.20"

DKMS = textwrap.dedent(
    """\
    #!/bin/sh
    # status -m M -v V | install -m M -v V -k K
    root="$FAKE_ROOT"; log="$root/dkms.calls"; echo "$*" >> "$log"
    case "$1" in
      status) cat "$root/status" 2>/dev/null; exit 0 ;;
      install)
        k="$7"
        if [ "$k" = "$FAKE_FAIL" ]; then
          mkdir -p "$root/var/lib/dkms/$3/$5/build"
          { echo "make -C /lib/modules/$k/build M=... modules"
            echo "nvidia.c:14:9: error: implicit declaration of function"; } > "$root/var/lib/dkms/$3/$5/build/make.log"
          echo "Error! Bad return status for module build on kernel: $k (x86_64)" >&2
          exit 10
        fi
        mkdir -p "$root/lib/modules/$k/updates/dkms"; echo module > "$root/lib/modules/$k/updates/dkms/$3.ko"
        echo "$3/$5, $k, x86_64: installed" >> "$root/status" ;;
    esac
    """
)
MODINFO = """#!/bin/sh
case "$2" in version) echo 570.133.20 ;; signer) echo "DKMS module signing key" ;; esac
"""


@pytest.fixture
def node(tmp_path, ansible_env):
    """A host with kernels OLD and NEW (headers) and BARE (no headers), driver VERSION registered with DKMS."""
    root = tmp_path / "root"
    for release in (OLD, NEW, BARE):
        (root / "boot").mkdir(parents=True, exist_ok=True)
        (root / f"boot/vmlinuz-{release}").write_text("")
        if release != BARE:
            (root / f"lib/modules/{release}/build/include").mkdir(parents=True)
    (root / f"var/lib/dkms/nvidia/{VERSION}/source").mkdir(parents=True)
    (root / "status").write_text(f"nvidia/{VERSION}, {OLD}, x86_64: installed\n")
    (root / f"lib/modules/{OLD}/updates/dkms").mkdir(parents=True)
    (root / f"lib/modules/{OLD}/updates/dkms/nvidia.ko").write_text("module")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("dkms", DKMS), ("modinfo", MODINFO)):
        (bin_dir / name).write_text(text)
        os.chmod(bin_dir / name, 0o755)
    ansible_env.update(PATH=f"{bin_dir}:{ansible_env['PATH']}", FAKE_ROOT=str(root), FAKE_FAIL="")
    return root


def states(result):
    return {row["release"]: row["state"] for row in result["kernels"]}


def test_builds_every_kernel_with_headers_and_reports_the_rest(run_module, node):
    args = {"driver_version": VERSION, "boot_root": str(node)}
    rc, result = run_module("gpufleet.stack.dkms_modules", args, "--check")
    assert rc == 0 and result["changed"], result
    assert states(result) == {OLD: "installed", NEW: "would build", BARE: "no headers"}
    assert "install" not in (node / "dkms.calls").read_text()  # check mode asked DKMS nothing but its status

    rc, result = run_module("gpufleet.stack.dkms_modules", args)
    assert (rc, result["changed"], result["built"], result["missing_headers"]) == (0, True, [NEW], [BARE])
    assert states(result) == {OLD: "installed", NEW: "built now", BARE: "no headers"}
    built = next(row for row in result["kernels"] if row["release"] == NEW)
    assert (built["version"], built["signer"]) == (VERSION, "DKMS module signing key")
    assert result["module"] == f"nvidia/{VERSION}"

    rc, result = run_module("gpufleet.stack.dkms_modules", args)
    assert (rc, result["changed"], result["built"]) == (0, False, [])


def test_a_failed_build_names_the_kernel_and_quotes_make_log(run_module, node, ansible_env):
    ansible_env["FAKE_FAIL"] = NEW
    rc, result = run_module("gpufleet.stack.dkms_modules", {"driver_version": VERSION, "boot_root": str(node)})
    assert rc != 0
    assert result["failed_kernel"] == NEW
    assert f"DKMS could not build nvidia/{VERSION} for kernel {NEW}" in result["msg"]
    assert "Bad return status for module build" in result["msg"]
    assert "error: implicit declaration of function" in result["msg"]
    assert states(result) == {OLD: "installed", NEW: "failed", BARE: "no headers"}
    # A report only: the log's tail, nothing built.
    rc, result = run_module(
        "gpufleet.stack.dkms_modules", {"driver_version": VERSION, "boot_root": str(node), "build": False}
    )
    assert (rc, result["changed"], states(result)[NEW]) == (0, False, "not built")
    assert "implicit declaration" in result["build_log"]


def test_an_unregistered_version_is_refused(run_module, node):
    rc, result = run_module("gpufleet.stack.dkms_modules", {"driver_version": "580.95.05", "boot_root": str(node)})
    assert rc != 0
    assert "driver_version 580.95.05: no DKMS module of that version is registered" in result["msg"]
