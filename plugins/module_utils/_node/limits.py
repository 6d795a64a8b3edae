# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Resource limits an RDMA node needs (locked memory, open files): pure functions. PRIVATE to the collection.

RDMA registers memory with the NIC and pins it: verbs, NCCL's IB transport and MPI fail ("Cannot allocate memory",
"ibv_reg_mr failed") when a process's RLIMIT_MEMLOCK is below what they pin, and NVIDIA's and SchedMD's guides set it
unlimited. Two ways a process gets it: a login through PAM (limits.conf(5), in KiB) and a service through systemd
(systemd.exec(5) LimitMEMLOCK=, in bytes or "infinity"); Slurm's jobs inherit slurmd's. systemd sets the closest
value it may when a limit is above the hard limit it holds and it lacks CAP_SYS_RESOURCE (a container): the wanted
limit is then silently lower, which only the running daemon's /proc/PID/limits shows.
"""

from __future__ import annotations

import re

UNLIMITED = "unlimited"
# fs.nr_open's default: the most open files a process may have.
NR_OPEN = 1048576
_CAP_SYS_RESOURCE = 24


def parse_kib(value, name):
    """A memlock setting as the role takes it: "unlimited" (None) or KiB as a positive integer. ValueError names
    the variable and the fix."""
    text = str(value).strip().lower()
    if text in (UNLIMITED, "infinity", "-1"):
        return None
    if re.fullmatch(r"[1-9][0-9]{0,12}", text):
        return int(text)
    raise ValueError(f"{name} is {value!r}: write unlimited, or the limit in KiB as a whole number such as 65536")


def parse_count(value, name):
    """A nofile setting: a whole number from 1024 to fs.nr_open's default (1048576)."""
    text = str(value).strip()
    if re.fullmatch(r"[0-9]{1,8}", text) and 1024 <= int(text) <= NR_OPEN:
        return int(text)
    raise ValueError(f"{name} is {value!r}: write a whole number from 1024 to {NR_OPEN} (open files)")


def limits_conf(memlock_kib, nofile, header=""):
    """limits.d text: soft and hard memlock and nofile for every user (limits.conf(5): KiB, "unlimited")."""
    memlock = UNLIMITED if memlock_kib is None else str(memlock_kib)
    lines = [header.rstrip("\n")] if header else []
    for kind in ("soft", "hard"):
        lines.append(f"*    {kind}    memlock    {memlock}")
    for kind in ("soft", "hard"):
        lines.append(f"*    {kind}    nofile     {nofile}")
    return "\n".join(lines) + "\n"


def systemd_dropin(memlock_kib, nofile, header=""):
    """A [Service] drop-in with the same limits (systemd.exec(5): bytes or "infinity")."""
    memlock = "infinity" if memlock_kib is None else str(memlock_kib * 1024)
    body = f"[Service]\nLimitMEMLOCK={memlock}\nLimitNOFILE={nofile}\n"
    return (header.rstrip("\n") + "\n" if header else "") + body


def parse_proc_limits(text):
    """{"memlock": (soft, hard), "nofile": (soft, hard)} from /proc/PID/limits, in bytes and files; None is
    unlimited. A limit not listed is absent."""
    names = {"Max locked memory": "memlock", "Max open files": "nofile"}
    found = {}
    for line in (text or "").splitlines():
        for label, key in names.items():
            if line.startswith(label):
                fields = line[len(label) :].split()
                if len(fields) >= 2:
                    found[key] = tuple(None if f == UNLIMITED else int(f) for f in fields[:2])
    return found


def has_cap_sys_resource(status_text):
    """True when /proc/PID/status' CapEff holds CAP_SYS_RESOURCE (it may raise its hard limits)."""
    found = re.search(r"^CapEff:\s*([0-9a-fA-F]+)\s*$", status_text or "", re.MULTILINE)
    return bool(found) and bool(int(found.group(1), 16) >> _CAP_SYS_RESOURCE & 1)


def shortfalls(limits, memlock_kib, nofile):
    """What a running process holds below the wanted limits, one line each ([] when it holds them)."""
    wanted = {"memlock": None if memlock_kib is None else memlock_kib * 1024, "nofile": nofile}
    problems = []
    for key, want in wanted.items():
        soft = limits.get(key, (0, 0))[0]
        if want is None and soft is not None:
            problems.append(f"{key} is {soft} (wanted unlimited)")
        elif want is not None and soft is not None and soft < want:
            problems.append(f"{key} is {soft} (wanted {want})")
    return problems
