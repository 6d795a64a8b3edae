#!/usr/bin/python
# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: dataset_cache
short_description: Local dataset caches on tmpfs or a local disk, mounted by systemd mount units
version_added: "0.3.0"
description:
  - >-
    Mounts each cache of O(mounts) with a systemd mount unit (C(/etc/systemd/system/<escaped path>.mount), enabled
    for C(local-fs.target)), either a C(tmpfs) of a given size or a local disk (NVMe) with an ext4 or XFS filesystem
    named by its UUID, so the mount survives device renames between boots. Then sets the owner and mode of its root.
  - A device is formatted only when C(blkid -p) finds no signature on it at all, and the filesystem's UUID is recorded
    in O(state_file). A device that holds anything else (a filesystem this module did not make, a partition table,
    a RAID or LUKS header) is refused, naming what it holds, before any device or file is changed.
  - A changed tmpfs size or option is applied with a remount (C(systemctl reload)), so the cache's contents stay.
    An entry with C(state=absent) is unmounted and its unit removed; its filesystem is left as it is.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  mounts:
    description:
      - The caches. Each has C(path) (the mount point), C(type) (C(tmpfs) or C(device)), C(owner), C(group) and
        C(mode) of the mounted root (default root, root, C(0755)), C(options) (extra mount options), C(state)
        (C(present) or C(absent)); a tmpfs has C(size) (C(64g), C(25%)); a device has C(device) (C(/dev/nvme1n1),
        better a C(/dev/disk/by-id/) path) and C(fstype) (C(ext4) or C(xfs), default ext4).
    type: list
    elements: raw
    required: true
  state_file:
    description: Where the UUIDs of the filesystems this module made are recorded.
    type: path
    default: /var/lib/gpufleet/dataset-cache.json
extends_documentation_fragment:
  - gpufleet.stack.attributes
attributes:
  check_mode:
    support: full
    details: Probes the devices and reports what it would format, write, mount or refuse; changes nothing.
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - name: systemd.mount(5)
    description: Mount units, What=UUID= and the reload that remounts.
    link: https://www.freedesktop.org/software/systemd/man/latest/systemd.mount.html
"""

EXAMPLES = r"""
- name: A 64 GiB tmpfs for small datasets and the second NVMe disk for the rest
  gpufleet.stack.dataset_cache:
    mounts:
      - {path: /scratch/ram, type: tmpfs, size: 64g, mode: "1777"}
      - {path: /scratch/nvme, type: device, device: /dev/disk/by-id/nvme-SAMSUNG_MZQL23T8HCLS-00A07_S64HNE0T123456,
         fstype: xfs, owner: slurm, group: slurm, mode: "0775"}
"""

RETURN = r"""
mounts:
  description: Each present cache with its unit, what was done, and the device's filesystem UUID.
  returned: always
  type: list
  elements: dict
  sample: [{"path": "/scratch/nvme", "unit": "scratch-nvme.mount", "actions": ["formatted", "unit written",
            "mounted"], "uuid": "b31f2300-689b-4c7b-b8e0-0208385da34b"}]
formatted:
  description: The devices formatted in this run (or that would be, in check mode).
  returned: always
  type: list
  elements: str
"""

import grp
import json
import os
import pwd
import stat
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node import dataset_cache as dc
from ansible_collections.gpufleet.stack.plugins.module_utils._node.atomic import read, write

UNIT_DIR = "/etc/systemd/system"


def load_owned(path):
    data, _mode = read(path)
    try:
        owned = json.loads(data) if data else {}
    except ValueError:
        owned = {}
    return owned if isinstance(owned, dict) else {}


def ids(module, spec):
    try:
        return pwd.getpwnam(spec["owner"]).pw_uid, grp.getgrnam(spec["group"]).gr_gid
    except KeyError:
        module.fail_json(
            msg=f"dataset_cache: owner {spec['owner']!r} or group {spec['group']!r} of {spec['path']} does not exist "
            "on this host; create them first (the cache's root gets them)"
        )


def second_look(module, device, rdev):
    """Why a device blkid found blank may not be (wipefs' probe lists a signature or fails; sysfs shows partitions
    or holders such as a RAID or LVM device), or ""."""
    wipefs = module.get_bin_path("wipefs", opt_dirs=["/usr/sbin", "/sbin"])
    if wipefs:
        rc, out, err = module.run_command([wipefs, "--no-act", "--noheadings", device])
        if rc != 0 or out.strip():
            return f"wipefs --no-act says: {(out or err).strip()[:200] or f'exit {rc}'}"
    block = f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}"
    if os.path.isdir(os.path.join(block, "holders")) and os.listdir(os.path.join(block, "holders")):
        return f"it is held by {', '.join(os.listdir(os.path.join(block, 'holders')))} (RAID, LVM or dm)"
    if os.path.isdir(block) and any(os.path.exists(os.path.join(block, e, "partition")) for e in os.listdir(block)):
        return "it has partitions"
    return ""


def probe_devices(module, specs, owned):
    """{device: (action, detail)} for every present device mount; fails listing every refusal at once."""
    plans, refusals, seen = {}, [], {}
    blkid = module.get_bin_path("blkid", required=True)
    for spec in specs:
        if spec["type"] != "device" or spec["state"] != "present":
            continue
        device = spec["device"]
        try:
            info = os.stat(device)
        except OSError as exc:
            refusals.append(f"{device} ({spec['path']}) cannot be used: {exc.strerror}")
            continue
        if not stat.S_ISBLK(info.st_mode):
            refusals.append(f"{device} ({spec['path']}) is not a block device")
            continue
        if info.st_rdev in seen:
            refusals.append(f"{device} ({spec['path']}) is the same disk as {seen[info.st_rdev]}: one cache per disk")
            continue
        seen[info.st_rdev] = f"{device} ({spec['path']})"
        rc, out, err = module.run_command([blkid, "-p", "-o", "export", device])
        probe = dc.parse_blkid(out) if rc == 0 else {}
        doubt = second_look(module, device, info.st_rdev) if rc == 2 and not probe else ""
        action, detail = dc.device_action(spec, probe, rc, owned, probe_err=(err or "").strip(), doubt=doubt)
        if action == "refuse":
            refusals.append(detail)
        plans[device] = (action, detail)
    refusals += mounted_elsewhere(specs)
    if refusals:
        module.fail_json(msg="dataset_cache: nothing was changed: " + "; ".join(refusals))
    return plans


def mounted_elsewhere(specs):
    """A path already mounted by something else (fstab, NFS, by hand): a unit of ours would replace that mount."""
    out = []
    for spec in specs:
        ours = os.path.exists(os.path.join(UNIT_DIR, dc.unit_name(spec["path"])))
        if spec["state"] == "present" and not ours and os.path.ismount(spec["path"]):
            out.append(
                f"{spec['path']} is already a mount point that dataset_cache did not make (fstab, NFS or by hand): "
                "choose another path or unmount it first"
            )
    return out


def format_device(module, spec, owned, state_file):
    argv = list(dc.MKFS[spec["fstype"]])
    argv[0] = module.get_bin_path(argv[0], required=True, opt_dirs=["/usr/sbin", "/sbin"])
    module.run_command([*argv, spec["device"]], check_rc=True)
    blkid = module.get_bin_path("blkid", required=True)
    _rc, out, _err = module.run_command([blkid, "-p", "-o", "export", spec["device"]], check_rc=True)
    uuid = dc.parse_blkid(out).get("UUID")
    if not uuid:
        module.fail_json(msg=f"dataset_cache: {spec['device']} has no filesystem UUID after mkfs: {out!r}")
    owned[uuid] = {"device": spec["device"], "path": spec["path"], "fstype": spec["fstype"], "made": int(time.time())}
    write(module, state_file, (json.dumps(owned, indent=1, sort_keys=True) + "\n").encode(), 0o644)
    return uuid


def systemctl(module, *args):
    return module.run_command([module.get_bin_path("systemctl", required=True), *args])


def unit_field(text, key):
    for line in (text or "").splitlines():
        if line.startswith(f"{key}="):
            return line.split("=", 1)[1]
    return None


def apply_unit(module, unit, text, actions):
    """Write the unit when it differs. -> (whether it changed, the old text)."""
    path = os.path.join(UNIT_DIR, unit)
    current, _mode = read(path)
    old = current.decode(errors="replace") if current else None
    changed = old != text
    if changed and not module.check_mode:
        write(module, path, text.encode(), 0o644)
    if changed:
        actions.append("unit written")
    return changed, old


def ensure_mounted(module, item):
    """Start the unit, or remount it when its file changed (restart when its device or type changed); enable it."""
    spec, unit, old, actions = item["spec"], item["unit"], item["old"], item["actions"]
    active = systemctl(module, "is-active", "--quiet", unit)[0] == 0
    enabled = systemctl(module, "is-enabled", "--quiet", unit)[0] == 0
    verb = None
    if not active:
        verb = "start"
    elif item["changed"]:
        moved = any(unit_field(old, key) != unit_field(item["text"], key) for key in ("What", "Type"))
        verb = "restart" if moved else "reload"
    if verb:
        actions.append({"start": "mounted", "restart": "remounted (device changed)", "reload": "remounted"}[verb])
        if not module.check_mode:
            os.makedirs(spec["path"], exist_ok=True)
            rc, out, err = systemctl(module, verb, unit)
            if rc != 0:
                _rc, status, _e = systemctl(module, "status", "--no-pager", "--lines=5", unit)
                module.fail_json(msg=f"dataset_cache: systemctl {verb} {unit} failed ({rc}): {err or out} {status}")
    if not enabled:
        actions.append("enabled")
        if not module.check_mode:
            systemctl(module, "enable", unit)


def set_root(module, spec, uid, gid, actions):
    """Owner and mode of the mounted root (a tmpfs takes them from its options too, at each mount)."""
    if module.check_mode and not os.path.ismount(spec["path"]):
        return
    info = os.stat(spec["path"])
    mode = int(spec["mode"], 8)
    if (info.st_uid, info.st_gid) != (uid, gid) or stat.S_IMODE(info.st_mode) != mode:
        actions.append(f"root set to {spec['owner']}:{spec['group']} {spec['mode']}")
        if not module.check_mode:
            os.chown(spec["path"], uid, gid)
            os.chmod(spec["path"], mode)


def remove(module, spec, results):
    unit = dc.unit_name(spec["path"])
    path = os.path.join(UNIT_DIR, unit)
    if not os.path.exists(path):
        return False
    if not module.check_mode:
        rc, out, err = systemctl(module, "disable", "--now", unit)
        if rc != 0 or os.path.ismount(spec["path"]):
            why = (err or out).strip() or "still mounted"
            module.fail_json(
                msg=f"dataset_cache: could not unmount {spec['path']} ({unit}): {why}; stop what uses it "
                f"(fuser -vm {spec['path']}) and run again"
            )
        os.remove(path)
    results.append({"path": spec["path"], "unit": unit, "actions": ["unmounted", "unit removed"]})
    return True


def main():
    module = AnsibleModule(
        argument_spec={
            "mounts": {"type": "list", "elements": "raw", "required": True},
            "state_file": {"type": "path", "default": "/var/lib/gpufleet/dataset-cache.json"},
        },
        supports_check_mode=True,
    )
    try:
        specs = dc.check_specs(module.params["mounts"])
    except dc.SpecError as err:
        module.fail_json(msg=f"dataset_cache: {err}")
    owned = load_owned(module.params["state_file"])
    plans = probe_devices(module, specs, owned)
    owners = {spec["path"]: ids(module, spec) for spec in specs if spec["state"] == "present"}
    results, formatted, reload_needed = [], [], False
    for spec in specs:
        if spec["state"] == "absent":
            reload_needed |= remove(module, spec, results)
    written = []
    for spec in specs:
        if spec["state"] != "present":
            continue
        actions, uuid = [], None
        uid, gid = owners[spec["path"]]
        if spec["type"] == "device":
            action, detail = plans[spec["device"]]
            if action == "format":
                formatted.append(spec["device"])
                actions.append("formatted")
                uuid = "(new)" if module.check_mode else format_device(module, spec, owned, module.params["state_file"])
            else:
                uuid = detail
        item = {"spec": spec, "unit": dc.unit_name(spec["path"]), "text": dc.unit_text(spec, uuid, uid, gid)}
        item["changed"], item["old"] = apply_unit(module, item["unit"], item["text"], actions)
        item.update(actions=actions, uid=uid, gid=gid, uuid=uuid)
        reload_needed |= item["changed"]
        written.append(item)
    if reload_needed and not module.check_mode:
        systemctl(module, "daemon-reload")
    for item in written:
        ensure_mounted(module, item)
        set_root(module, item["spec"], item["uid"], item["gid"], item["actions"])
        results.append(dict({key: item[key] for key in ("unit", "actions", "uuid")}, path=item["spec"]["path"]))
    module.exit_json(changed=any(r["actions"] for r in results), mounts=results, formatted=formatted)


if __name__ == "__main__":
    main()
