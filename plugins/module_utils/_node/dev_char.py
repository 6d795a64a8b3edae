# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""/dev/char/MAJOR:MINOR links to the NVIDIA device nodes, and the device nodes no udev rule makes (IMEX's channel,
GDRCopy's /dev/gdrdrv) from the major their driver registered in /proc/devices.

runc looks a container's device nodes up through /dev/char; NVIDIA's nodes have no such links (udev does not make
them), so on a `systemctl daemon-reload` systemd rewrites the containers' device cgroups without them and running
containers lose their GPUs (NVIDIA/nvidia-container-toolkit#48). NVIDIA's fix is `nvidia-ctk system
create-dev-char-symlinks --create-all` from a udev rule at boot; this makes the same links now, without the toolkit,
before any daemon-reload the collection causes.
"""

from __future__ import annotations

import os
import re
import stat

_MAJOR = re.compile(r"^\s*(\d+)\s+(\S+)\s*$")

# NVIDIA's udev rule (nvidia-container-toolkit#48), run when the nvidia PCI driver binds at boot.
UDEV_RULE = (
    "# This will create /dev/char symlinks to all device nodes\n"
    'ACTION=="add", DEVPATH=="/bus/pci/drivers/nvidia", '
    'RUN+="/usr/bin/nvidia-ctk system create-dev-char-symlinks --create-all"\n'
)
UDEV_RULE_PATH = "/lib/udev/rules.d/71-nvidia-dev-char.rules"


def nvidia_char_devices(dev="/dev"):
    """[(path, major, minor)] of the NVIDIA character devices: nvidia*, nvidia-caps/*."""
    found = []
    for sub in ("", "nvidia-caps"):
        base = os.path.join(dev, sub)
        try:
            names = sorted(os.listdir(base))
        except OSError:
            continue
        for name in names:
            path = os.path.join(base, name)
            if not (sub or name.startswith("nvidia")):
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue
            if stat.S_ISCHR(st.st_mode):
                found.append((path, os.major(st.st_rdev), os.minor(st.st_rdev)))
    return found


def missing_links(devices, char_dir="/dev/char"):
    """[(link, target)] the devices lack: /dev/char/195:0 -> ../nvidia0 (a link elsewhere is replaced)."""
    todo = []
    for path, major, minor in devices:
        link = os.path.join(char_dir, f"{major}:{minor}")
        target = os.path.relpath(path, char_dir)
        if not (os.path.islink(link) and os.readlink(link) == target):
            todo.append((link, target))
    return todo


def ensure_links(dev="/dev", char_dir="/dev/char", check_mode=False):
    """Make the missing links; returns the links made (or, in check mode, that would be)."""
    todo = missing_links(nvidia_char_devices(dev), char_dir)
    if check_mode or not todo:
        return [link for link, _target in todo]
    os.makedirs(char_dir, exist_ok=True)
    for link, target in todo:
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(target, link)
    return [link for link, _target in todo]


def char_major(proc_devices, name):
    """The major number a driver registered `name` under (/proc/devices' character devices), else None."""
    for line in (proc_devices or "").splitlines():
        if line.strip().startswith("Block devices"):
            break
        found = _MAJOR.match(line)
        if found and found.group(2) == name:
            return int(found.group(1))
    return None


def make_node(path, major, minor=0, mode=0o666):
    """A character device node at path (its directory made), with mode past the umask, as the drivers' own
    scripts make theirs (IMEX guide: mknod ... channel0 c <major> 0; gdrcopy's init script: mknod -m 666)."""
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    os.mknod(path, mode | stat.S_IFCHR, os.makedev(major, minor))
    os.chmod(path, mode)
