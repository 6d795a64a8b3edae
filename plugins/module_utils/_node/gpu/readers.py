# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The commands the GPU modules read the host with (kernel log, modinfo), through AnsibleModule.run_command, as
functions gather.gather takes; shared by gpu_facts and upgrade_gate."""

from __future__ import annotations


def kernel_log_reader(module):
    """Return a function reading the kernel log read-only: dmesg first, then the journal of this boot."""

    def read():
        notes = []
        for argv in (["dmesg"], ["journalctl", "-k", "-b", "-q", "--no-pager", "-o", "short-monotonic"]):
            binary = module.get_bin_path(argv[0])
            if not binary:
                notes.append(f"{argv[0]} not found")
                continue
            rc, out, err = module.run_command([binary, *argv[1:]])
            if rc == 0:
                return out.splitlines(), argv[0], None
            notes.append(f"{argv[0]} exited {rc}: {(err or out).strip()[:200]}")
        return None, None, "kernel log unreadable, Xid lines not checked: " + "; ".join(notes)

    return read


def modinfo_reader(module):
    """modinfo -F version PATH, or None: what version a kernel module file is (compressed ones too)."""
    binary = module.get_bin_path("modinfo", opt_dirs=["/usr/sbin", "/sbin"])

    def read(path):
        if not binary:
            return None
        rc, out, _err = module.run_command([binary, "-F", "version", path])
        return (out.strip() or None) if rc == 0 else None

    return read
