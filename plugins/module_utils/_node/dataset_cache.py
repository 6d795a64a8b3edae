# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Local dataset caches (role dataset_cache): mount specs, systemd mount units, and whether a device may be
formatted. Pure functions; the module gpufleet.stack.dataset_cache runs the commands.

A device is formatted only when blkid's low-level probe finds no signature on it at all (no filesystem, partition
table, RAID member or LUKS header), and used afterwards only when its filesystem's UUID is one this collection
recorded when it made it: a disk that holds anything else may hold someone's data and is refused with what it holds.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.stack.plugins.module_utils._common import schema

FSTYPES = ("ext4", "xfs")
TYPES = ("tmpfs", "device")
# XFS labels are at most 12 characters (mkfs.xfs refuses "gpufleet-cache"), so one short label for both.
LABEL = "gpufleet-dc"
# mkfs per filesystem: no reserved blocks on ext4 (a cache needs no root reserve), lazy init off so the first
# training run does not pay for it in the background.
MKFS = {
    "ext4": ["mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0", "-L", LABEL],
    "xfs": ["mkfs.xfs", "-q", "-L", LABEL],
}
DEFAULT_DEVICE_OPTIONS = ("noatime",)
TMPFS_OPTIONS = ("nosuid", "nodev")
_SIZE = re.compile(r"[1-9][0-9]*[kKmMgG]?|[1-9][0-9]?%|100%")
_OPTION = re.compile(r"[A-Za-z0-9_.=:/-]+")
_MODE = re.compile(r"0?[0-7]{3,4}")
_SAFE = re.compile(r"[A-Za-z0-9:_.]")


class SpecError(ValueError):
    """A mount spec that cannot be right: the message names the entry, the value and the fix."""


def unit_name(path):
    """systemd-escape --path --suffix=mount: "/srv/datasets" -> "srv-datasets.mount" (systemd.unit(5))."""
    parts = [part for part in path.split("/") if part]
    if not parts:
        return "-.mount"
    escaped = []
    for number, part in enumerate(parts):
        chars = []
        for index, char in enumerate(part):
            # Only the name's very first character may not be "." (a hidden unit file); later components keep theirs.
            if _SAFE.fullmatch(char) and not (number == 0 and index == 0 and char == "."):
                chars.append(char)
            else:
                chars.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8"))
        escaped.append("".join(chars))
    return "-".join(escaped) + ".mount"


def _check_access(where, out):
    """mode (a quoted octal string), owner, group, options of one entry, normalised in place."""
    mode = out.get("mode", "0755")
    # A string only: YAML reads an unquoted 0644 as the number 420, which would pass as the mode 0420.
    if not isinstance(mode, str) or not _MODE.fullmatch(mode):
        raise SpecError(f'{where}.mode is {out.get("mode")!r}: quote an octal mode, e.g. "0755" or "1777"')
    out["mode"] = mode if len(mode) == 4 else "0" + mode
    unsafe = schema.unsafe_dir_mode(mode)
    if unsafe:
        raise SpecError(f"{where}.mode is {mode!r}: {unsafe[0]}; {unsafe[1]}")
    for key in ("owner", "group"):
        value = out.get(key, "root")
        if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", value):
            raise SpecError(f"{where}.{key} is {value!r}: give a user or group name, e.g. root")
        out[key] = value
    options = out.get("options", [])
    if isinstance(options, str):
        options = [o for o in options.split(",") if o]
    if not isinstance(options, list) or not all(isinstance(o, str) and _OPTION.fullmatch(o) for o in options):
        raise SpecError(f"{where}.options is {out.get('options')!r}: give mount options as a list, e.g. [noatime]")
    out["options"] = options


def _check_tmpfs(where, out):
    size = str(out.get("size", ""))
    if not _SIZE.fullmatch(size):
        raise SpecError(
            f"{where}.size is {out.get('size')!r}: a tmpfs needs a size, bytes with k/m/g or a share of RAM, "
            'e.g. "64g" or "25%"'
        )
    out["size"] = size
    for key in ("device", "fstype"):
        if key in out:
            raise SpecError(f"{where}.{key} is set but type is tmpfs: remove it, or use type: device")


def _check_device(where, out):
    device = out.get("device")
    if not isinstance(device, str) or not re.fullmatch(r"/dev/[A-Za-z0-9/_.:-]+", device):
        raise SpecError(
            f"{where}.device is {device!r}: give the block device, e.g. /dev/nvme1n1 or "
            "/dev/disk/by-id/nvme-... (stable across reboots)"
        )
    out["fstype"] = out.get("fstype", "ext4")
    if out["fstype"] not in FSTYPES:
        raise SpecError(f"{where}.fstype is {out['fstype']!r}: use ext4 or xfs")
    if "size" in out:
        raise SpecError(f"{where}.size is set but type is device: the filesystem takes the whole device")


def check_spec(index, spec):
    """A normalised copy of one dataset_cache_mounts entry, or SpecError naming dataset_cache_mounts[index]."""
    where = f"dataset_cache_mounts[{index}]"
    if not isinstance(spec, dict):
        raise SpecError(f"{where} is {spec!r}: give a mapping such as {{path: /scratch, type: tmpfs, size: 64G}}")
    out = dict(spec)
    path = out.get("path")
    if not isinstance(path, str) or not path.startswith("/") or path.rstrip("/") in ("", "/") or "//" in path:
        raise SpecError(f"{where}.path is {path!r}: give an absolute directory other than /, e.g. /scratch/datasets")
    if re.search(r"(^|/)\.\.?(/|$)", path) or re.search(r"[\x00-\x1f\x7f\s]", path):
        raise SpecError(f"{where}.path is {path!r}: no '.', '..', spaces or control characters in a mount point")
    out["path"] = path.rstrip("/")
    why = schema.harm(out["path"], "mount")
    if why:
        raise SpecError(f"{where}.path is {path!r}: {why}; mount the cache on a directory of its own, e.g. /scratch")
    out["type"] = out.get("type", "tmpfs")
    if out["type"] not in TYPES:
        raise SpecError(f"{where}.type is {out['type']!r}: use tmpfs (RAM) or device (a local disk, e.g. NVMe)")
    out.setdefault("state", "present")
    if out["state"] not in ("present", "absent"):
        raise SpecError(f"{where}.state is {out['state']!r}: use present or absent")
    _check_access(where, out)
    (_check_tmpfs if out["type"] == "tmpfs" else _check_device)(where, out)
    return out


def check_specs(specs):
    """Every entry checked; two entries on one path or one device are refused."""
    if not isinstance(specs, list):
        raise SpecError(f"dataset_cache_mounts is {specs!r}: give a list of mounts")
    checked = [check_spec(i, spec) for i, spec in enumerate(specs)]
    for key in ("path", "device"):
        seen = {}
        for index, spec in enumerate(checked):
            value = spec.get(key)
            if value is None:
                continue
            if value in seen:
                raise SpecError(
                    f"dataset_cache_mounts[{index}].{key} {value} is also dataset_cache_mounts[{seen[value]}]'s: "
                    "one cache per mount point and per device"
                )
            seen[value] = index
    return checked


def parse_blkid(out):
    """`blkid -p -o export DEVICE` -> {TYPE, UUID, LABEL, PTTYPE, USAGE, ...}; {} when nothing was found."""
    found = {}
    for line in (out or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            found[key.strip()] = value.strip()
    return found


def describe(probe):
    parts = []
    if probe.get("PTTYPE"):
        parts.append(f"a {probe['PTTYPE']} partition table")
    if probe.get("TYPE"):
        what = f"a {probe['TYPE']} " + (
            "filesystem" if probe.get("USAGE", "filesystem") == "filesystem" else "signature"
        )
        extra = [f"{key} {probe[key]}" for key in ("LABEL", "UUID") if probe.get(key)]
        parts.append(what + (f" ({', '.join(extra)})" if extra else ""))
    return " and ".join(parts) or "an unknown signature"


def device_action(spec, probe, probe_rc, owned_uuids, *, probe_err="", doubt=""):
    """What to do with a device mount: ("format", why) | ("use", uuid) | ("refuse", message).

    probe_rc: blkid -p's exit status. 2 means "found nothing", but blkid also exits 2, silently or not, when it could
    not open or read the device (util-linux lowprobe_device), so a blank verdict also needs an empty probe_err and no
    doubt from a second look (wipefs' own probe, partitions or holders in sysfs): anything else is refused."""
    device = spec["device"]
    if probe_rc == 2 and not probe:
        if probe_err or doubt:
            return (
                "refuse",
                f"{device} looks blank to blkid, but {doubt or probe_err}: not formatting what may hold data",
            )
        return "format", f"{device} holds no filesystem, partition table or other signature"
    if probe_rc != 0:
        return "refuse", f"blkid -p {device} exited {probe_rc}: cannot tell whether it holds data; check the device"
    return _owned_action(spec, probe, owned_uuids)


def _owned_action(spec, probe, owned_uuids):
    """A device with a signature: ours for this path (use), or refused with what it holds."""
    device = spec["device"]
    uuid = probe.get("UUID")
    made = owned_uuids.get(uuid) if uuid else None
    made_for = made.get("path") if isinstance(made, dict) else None
    if made_for and made_for != spec["path"]:
        return "refuse", (
            f"{device} holds the filesystem dataset_cache made for {made_for}, not {spec['path']}: device names can "
            "move between boots; name the device by /dev/disk/by-id/ in both entries"
        )
    if probe.get("TYPE") == spec["fstype"] and not probe.get("PTTYPE") and made is not None:
        return "use", uuid
    if uuid and uuid in owned_uuids:
        return "refuse", (
            f"{device} holds {describe(probe)}, which dataset_cache made as {owned_uuids[uuid]}, but the mount asks "
            f"for {spec['fstype']}: change fstype back, or wipe the device yourself (wipefs -a {device}) to remake it"
        )
    return "refuse", (
        f"{device} holds {describe(probe)} that dataset_cache did not create; it may hold data. Choose another "
        f"device, or, if its contents may go, wipe it yourself first (wipefs -a {device})"
    )


def mount_options(spec, uid=None, gid=None):
    if spec["type"] == "tmpfs":
        options = [f"size={spec['size']}", f"mode={spec['mode']}"]
        options += [f"uid={uid}"] if uid is not None else []
        options += [f"gid={gid}"] if gid is not None else []
        options += list(TMPFS_OPTIONS)
    else:
        options = list(DEFAULT_DEVICE_OPTIONS)
    return options + [o for o in spec["options"] if o not in options]


def unit_text(spec, uuid=None, uid=None, gid=None, header="Ansible managed: gpufleet.stack.dataset_cache"):
    """The mount unit for one cache. A device is named by filesystem UUID (What=UUID=..., which systemd turns into a
    dependency on /dev/disk/by-uuid/...): NVMe names can change between boots, the filesystem's UUID does not."""
    what = "tmpfs" if spec["type"] == "tmpfs" else f"UUID={uuid}"
    fstype = "tmpfs" if spec["type"] == "tmpfs" else spec["fstype"]
    source = "RAM" if spec["type"] == "tmpfs" else spec["device"]
    return (
        f"# {header}\n"
        f"[Unit]\nDescription=gpufleet dataset cache {spec['path']} ({source})\n\n"
        f"[Mount]\nWhat={what}\nWhere={spec['path']}\nType={fstype}\n"
        f"Options={','.join(mount_options(spec, uid, gid))}\n\n"
        "[Install]\nWantedBy=local-fs.target\n"
    )
