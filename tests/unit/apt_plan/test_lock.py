"""apt's words when the package manager's lock is held (module_utils/_node/apt/plan.lock_holder), as apt 2.6 prints them
(recorded in a Debian 12 node while another process held /var/lib/dpkg/lock-frontend)."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.apt import plan as ap

WAITED = (
    "Waiting for cache lock: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 7 (python3)...\n"
    "Waiting for cache lock: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 7 (python3)...\n"
    "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?\n"
)
AT_ONCE = (
    "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 812 (unattended-upgr)\n"
    "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?\n"
)


@pytest.mark.parametrize(
    ("output", "holder"),
    [
        (WAITED, "/var/lib/dpkg/lock-frontend, held by process 7 (python3)"),
        (AT_ONCE, "/var/lib/dpkg/lock-frontend, held by process 812 (unattended-upgr)"),
        (
            "E: Could not get lock /var/lib/dpkg/lock. Resource temporarily unavailable",
            "/var/lib/dpkg/lock, held by a process apt did not name",
        ),
        ("E: Sub-process /usr/bin/dpkg returned an error code (1)", None),
        ("", None),
    ],
)
def test_the_lock_and_its_holder_are_named(output, holder):
    assert ap.lock_holder(output) == holder
