"""Who holds which hosts (_controller/runlock.py): a second upgrade run against any of the same hosts refuses."""

from ansible_collections.gpufleet.stack.plugins.module_utils._controller import runlock

NOW = 1_000_000.0
RUN = {"user": "ana", "controller": "bastion-1", "pid": 4242, "started": NOW - 720, "playbook": "playbooks/upgrade.yml",
       "hosts": ["gpu-1", "gpu-2", "gpu-3"]}  # fmt: skip


def held(records, hosts, here="bastion-1", running=(4242,), max_age=86400):
    return runlock.holders(records, hosts, here=here, pid_exists=running.__contains__, now=NOW, max_age=max_age)


def test_a_live_run_holds_the_hosts_it_shares_with_this_one():
    assert held([RUN], ["gpu-3", "gpu-4"]) == [(RUN, ["gpu-3"])]
    assert held([RUN], ["gpu-4", "gpu-5"]) == []  # other hosts: both runs go on


def test_a_killed_run_on_this_controller_holds_nothing():
    assert held([RUN], ["gpu-1"], running=()) == []


def test_a_run_on_another_controller_holds_until_max_age():
    assert held([RUN], ["gpu-1"], here="bastion-2", running=()) == [(RUN, ["gpu-1"])]
    assert held([RUN], ["gpu-1"], here="bastion-2", running=(), max_age=600) == []


def test_the_holder_is_named_with_its_hosts():
    many = [f"gpu-{i}" for i in range(1, 9)]
    text = runlock.describe(dict(RUN, hosts=many), many, NOW)
    assert text == (
        "ana on bastion-1 (pid 4242, playbooks/upgrade.yml, running 12 min) holds gpu-1, gpu-2, gpu-3, gpu-4, gpu-5 "
        "and 3 more"
    )


def test_a_record_without_a_start_time_from_another_controller_holds_nothing():
    for started in ("yesterday", None, True):
        assert held([dict(RUN, started=started)], ["gpu-1"], here="bastion-2", running=()) == []
