# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""/dev/char/MAJOR:MINOR links to the NVIDIA device nodes.

runc looks a container's device nodes up through /dev/char; NVIDIA's nodes have no such links (udev does not make
them), so on a `systemctl daemon-reload` systemd rewrites the containers' device cgroups without them and running
containers lose their GPUs (NVIDIA/nvidia-container-toolkit#48). NVIDIA's fix is `nvidia-ctk system
create-dev-char-symlinks --create-all` from a udev rule at boot; this makes the same links now, without the toolkit,
before any daemon-reload the collection causes.
"""

from __future__ import annotations

import os
import stat

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
