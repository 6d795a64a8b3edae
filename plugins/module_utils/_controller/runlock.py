# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who is upgrading which hosts: one lock record per running playbooks/upgrade.yml, in a directory every operator's
controller shares, so that a second run against any of the same hosts refuses and names the run that holds them.
Pure functions; the action plugin gpufleet.stack.run_lock reads and writes the records under a file lock.

A record is {user, controller, pid, started (epoch seconds), playbook, hosts}. It is alive while its process is
(on this controller: the pid exists), or, when written by another controller (a shared directory), until it is
max_age seconds old; a run that was killed leaves a record that the next run on the same controller sees is dead.
"""

from __future__ import annotations

MAX_SHOWN_HOSTS = 5


def alive(record, here, pid_exists, now, max_age):
    """Whether a record's run may still be going."""
    if record.get("controller") == here:
        return pid_exists(record.get("pid"))
    started = record.get("started")
    # A record without a start time in seconds is no one's run (a hand-written or damaged file): it holds nothing.
    return isinstance(started, (int, float)) and not isinstance(started, bool) and now - started < max_age


def holders(records, hosts, *, here, pid_exists, now, max_age):
    """The live records whose hosts meet `hosts`, each with the hosts in common."""
    wanted = set(hosts)
    found = []
    for record in records:
        common = sorted(wanted & set(record.get("hosts") or []))
        if common and alive(record, here, pid_exists, now, max_age):
            found.append((record, common))
    return found


def describe(record, common, now):
    """ "ana on bastion-1 (pid 4242, playbooks/upgrade.yml, running 12 min) holds gpu-1, gpu-2 and 3 more" """
    started = record.get("started")
    minutes = max(0, int((now - started) // 60)) if isinstance(started, (int, float)) else 0
    shown = ", ".join(common[:MAX_SHOWN_HOSTS]) + (
        f" and {len(common) - MAX_SHOWN_HOSTS} more" if len(common) > MAX_SHOWN_HOSTS else ""
    )
    return (
        f"{record.get('user', '?')} on {record.get('controller', '?')} (pid {record.get('pid', '?')}, "
        f"{record.get('playbook', '?')}, running {minutes} min) holds {shown}"
    )
