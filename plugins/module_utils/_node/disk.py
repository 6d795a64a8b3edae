# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Free space for an install, per filesystem: the directories an upgrade writes, grouped by the filesystem they are
on (a /boot of its own, or everything on /), each filesystem's needs summed and compared with what it has free for
root. Pure functions; the module gpufleet.stack.free_space reads statvfs.

The defaults are round figures meant to exceed one driver, CUDA and DKMS upgrade (apt keeps the downloaded .debs,
dpkg unpacks next to the old files before removing them, DKMS builds per kernel, update-initramfs writes the new
image beside the old one); a site sets its own with gpufleet_upgrade_free_mib.
"""

from __future__ import annotations

MIB = 1024 * 1024

# directory -> (MiB it needs free, what writes there)
DEFAULT_NEEDS = {
    "/var/cache/apt/archives": (1024, "apt's downloaded packages"),
    "/usr": (4096, "the packages' files"),
    "/var/lib/dkms": (512, "DKMS' module builds"),
    "/boot": (200, "the initramfs of each kernel"),
}


def existing(path, exists):
    """The nearest directory of path that exists (the one whose filesystem the install will write to)."""
    while path != "/" and not exists(path):
        path = path.rsplit("/", 1)[0] or "/"
    return path


def shortfalls(needs, statvfs, exists):
    """([problem], [figure]) for needs {directory: (MiB, what)}: one figure per filesystem, and a problem for each
    filesystem with less free (for root) than the sum of what its directories need."""
    by_fs = {}
    for directory, (mib, what) in sorted(needs.items()):
        where = existing(directory, exists)
        st = statvfs(where)
        entry = by_fs.setdefault(st["device"], {"free": st["free"], "need": 0, "dirs": []})
        entry["need"] += mib
        entry["dirs"].append(f"{directory} ({what}, {mib} MiB)")
    problems, figures = [], []
    for entry in by_fs.values():
        free = entry["free"] // MIB
        figure = f"{free} MiB free for {'; '.join(entry['dirs'])}: {entry['need']} MiB needed"
        figures.append(figure)
        if free < entry["need"]:
            problems.append(figure)
    return problems, figures
