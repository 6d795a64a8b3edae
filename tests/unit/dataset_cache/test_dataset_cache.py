"""Dataset cache specs, mount units and the format-or-refuse decision, on real blkid output (fixtures: blkid -p -o
export of a loop device after mkfs.ext4, mkfs.xfs and sfdisk's gpt label, util-linux 2.38)."""

import shutil
import subprocess
from pathlib import Path

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node import dataset_cache as dc

FIXTURES = Path(__file__).parent / "fixtures"
# systemd-escape --path --suffix=mount (systemd 252, Debian 12), recorded.
ESCAPED = {
    "/scratch/ram": "scratch-ram.mount",
    "/data/my cache/": "data-my\\x20cache.mount",
    "/a-b/.hidden": "a\\x2db-.hidden.mount",
    "/x/ü": "x-\\xc3\\xbc.mount",
    "/srv//datasets": "srv-datasets.mount",
    "/.x/y.z:w_v": "\\x2ex-y.z:w_v.mount",
}
TMPFS = {"path": "/scratch/ram", "type": "tmpfs", "size": "64g", "mode": "1777"}
NVME = {"path": "/scratch/nvme", "type": "device", "device": "/dev/vdb", "fstype": "ext4", "owner": "root"}


def probe(name):
    return dc.parse_blkid((FIXTURES / name).read_text())


@pytest.mark.parametrize("path", sorted(ESCAPED))
def test_unit_names_are_systemd_escape_s(path):
    assert dc.unit_name(path) == ESCAPED[path]


@pytest.mark.skipif(not shutil.which("systemd-escape"), reason="no systemd-escape: the recorded names above still ran")
def test_unit_names_match_this_hosts_systemd_escape():
    for path in ESCAPED:
        real = subprocess.run(
            ["systemd-escape", "--path", "--suffix=mount", path], capture_output=True, text=True, check=True
        ).stdout.strip()
        assert dc.unit_name(path) == real


def test_a_blank_device_is_formatted():
    assert dc.device_action(dc.check_spec(0, NVME), {}, 2, {})[0] == "format"


def test_our_filesystem_is_used():
    found = probe("blkid-ext4.txt")
    owned = {found["UUID"]: {"device": "/dev/vdb", "path": "/scratch/nvme"}}
    assert dc.device_action(dc.check_spec(0, NVME), found, 0, owned) == ("use", found["UUID"])


def test_our_filesystem_made_for_another_cache_is_refused():
    """NVMe names that swapped at boot: the filesystem we made for /scratch/other now answers as /dev/vdb."""
    found = probe("blkid-ext4.txt")
    action, message = dc.device_action(dc.check_spec(0, NVME), found, 0, {found["UUID"]: {"path": "/scratch/other"}})
    assert action == "refuse" and "made for /scratch/other, not /scratch/nvme" in message


@pytest.mark.parametrize(
    ("err", "doubt"),
    [
        ("blkid: error: /dev/vdb: Input/output error", ""),
        ("", "wipefs --no-act says: /dev/vdb 0x438 ext4"),
        ("", "it has partitions"),
    ],
)
def test_a_device_blkid_could_not_read_is_not_blank(err, doubt):
    """blkid -p also exits 2 when it cannot read the device; only a clean probe and a clean second look format."""
    action, message = dc.device_action(dc.check_spec(0, NVME), {}, 2, {}, probe_err=err, doubt=doubt)
    assert action == "refuse" and "not formatting what may hold data" in message


def test_someone_elses_filesystem_is_refused_naming_what_it_holds():
    found = probe("blkid-xfs.txt")
    action, message = dc.device_action(dc.check_spec(0, NVME), found, 0, {})
    assert action == "refuse"
    assert message == (
        f"/dev/vdb holds a xfs filesystem (LABEL gpufleet-dc, UUID {found['UUID']}) that dataset_cache did not "
        "create; it may hold data. Choose another device, or, if its contents may go, wipe it yourself first "
        "(wipefs -a /dev/vdb)"
    )


def test_a_partition_table_is_refused():
    action, message = dc.device_action(dc.check_spec(0, NVME), probe("blkid-gpt.txt"), 0, {})
    assert action == "refuse" and "holds a gpt partition table" in message


def test_our_filesystem_asked_for_as_another_type_is_refused():
    found = probe("blkid-ext4.txt")
    spec = dc.check_spec(0, dict(NVME, fstype="xfs"))
    action, message = dc.device_action(spec, found, 0, {found["UUID"]: "/dev/vdb"})
    assert action == "refuse" and "asks for xfs" in message


def test_a_probe_error_is_refused():
    assert dc.device_action(dc.check_spec(0, NVME), {}, 4, {})[0] == "refuse"


def test_units():
    tmpfs = dc.unit_text(dc.check_spec(0, TMPFS), uid=0, gid=0)
    assert "What=tmpfs\nWhere=/scratch/ram\nType=tmpfs\nOptions=size=64g,mode=1777,uid=0,gid=0,nosuid,nodev\n" in tmpfs
    disk = dc.unit_text(dc.check_spec(0, dict(NVME, options=["discard", "noatime"])), uuid="5e2e")
    assert "What=UUID=5e2e\nWhere=/scratch/nvme\nType=ext4\nOptions=noatime,discard\n" in disk
    assert "WantedBy=local-fs.target" in disk


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ({"path": "scratch", "size": "1g"}, "dataset_cache_mounts[0].path is 'scratch': give an absolute directory"),
        ({"path": "/", "size": "1g"}, "other than /"),
        ({"path": "/a/../b", "size": "1g"}, "no '.', '..'"),
        ({"path": "/scratch"}, "dataset_cache_mounts[0].size is None: a tmpfs needs a size"),
        ({"path": "/scratch", "size": "0"}, "a tmpfs needs a size"),
        ({"path": "/scratch", "size": "64g", "mode": 1777}, "dataset_cache_mounts[0].mode is 1777: quote"),
        ({"path": "/scratch", "size": "64g", "mode": "rwx"}, "mode is 'rwx'"),
        ({"path": "/scratch", "type": "device"}, "dataset_cache_mounts[0].device is None: give the block device"),
        ({"path": "/scratch", "type": "device", "device": "/dev/vdb", "fstype": "btrfs"}, "use ext4 or xfs"),
        ({"path": "/scratch", "type": "device", "device": "/dev/vdb", "size": "1g"}, "takes the whole device"),
        ({"path": "/scratch", "type": "nfs"}, "use tmpfs (RAM) or device"),
        ({"path": "/scratch", "size": "1g", "options": ["a b"]}, "give mount options as a list"),
        # The node refuses what the controller's schema refuses (module_utils/_common/schema.py), for a role run alone.
        ({"path": "/etc", "size": "1g"}, "/etc itself holds other programs' files"),
        ({"path": "/etc/ssl", "size": "1g"}, "a mount there would hide the system's own files"),
        ({"path": "/usr/share/data", "size": "1g"}, "the package manager's own tree"),
        ({"path": "/var/lib/", "size": "1g"}, "/var/lib itself"),
        ({"path": "/scratch", "size": "64g", "mode": "0777"}, "anyone could delete or replace anyone's files"),
        ({"path": "/scratch", "size": "64g", "mode": "4755"}, "setuid"),
    ],
)
def test_bad_specs_name_the_entry_the_value_and_the_fix(spec, says):
    with pytest.raises(dc.SpecError, match=None) as err:
        dc.check_specs([spec])
    assert says in str(err.value)


def test_two_caches_on_one_device_or_path_are_refused():
    with pytest.raises(dc.SpecError, match=r"dataset_cache_mounts\[1\].device /dev/vdb is also"):
        dc.check_specs([NVME, dict(NVME, path="/other")])
    with pytest.raises(dc.SpecError, match=r"dataset_cache_mounts\[1\].path /scratch/ram is also"):
        dc.check_specs([TMPFS, TMPFS])


def test_module_refuses_before_changing_anything(run_module, tmp_path):
    """A character device is no disk: the module says so and writes nothing (its state file stays absent)."""
    state = tmp_path / "state.json"
    args = {"mounts": [dict(NVME, device="/dev/null")], "state_file": str(state)}
    rc, result = run_module("gpufleet.stack.dataset_cache", args)
    assert rc != 0
    assert result["msg"] == "dataset_cache: nothing was changed: /dev/null (/scratch/nvme) is not a block device"
    assert not state.exists()


def test_module_refuses_a_bad_spec(run_module, tmp_path):
    rc, result = run_module("gpufleet.stack.dataset_cache", {"mounts": [{"path": "/scratch"}]})
    assert rc != 0 and "dataset_cache_mounts[0].size is None" in result["msg"]
