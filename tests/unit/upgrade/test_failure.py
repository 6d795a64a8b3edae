"""What a failed step of one host's upgrade records (_controller/upgrade, the upgrade_failure filter): the outcome,
the message, whether the node is marked failed (kept drained with the reason) and what the run says about it."""

from ansible_collections.gpufleet.stack.plugins.module_utils._controller.upgrade import failure, outcome

DRAINED = {"drained": True, "blocked": "", "timed_out": False}


def test_a_gate_names_itself():
    f = failure("Check the node is ready", {"msg": "failed/gpus: 7 of 8 GPUs", "failed_gate": "gpus"}, "gate",
                drain=DRAINED)  # fmt: skip
    assert (f["outcome"], f["message"], f["mark_failed"]) == ("failed/gpus", "failed/gpus: 7 of 8 GPUs", True)
    assert f["drain_failure"] == "upgrade failed at gpus: failed/gpus: 7 of 8 GPUs"
    assert f["node_state"] == "the node stays drained"


def test_an_install_failure_names_its_task():
    f = failure("Install, pin and hold", {"msg": "E: Sub-process /usr/bin/dpkg returned an error code (1)"}, "install",
                drain=DRAINED)  # fmt: skip
    assert f["outcome"] == "failed/install"
    assert f["message"] == "Install, pin and hold: E: Sub-process /usr/bin/dpkg returned an error code (1)"


def test_strays_are_blocked_and_node_drain_already_kept_the_node():
    strays = {"drained": True, "blocked": "GPU processes that no Slurm job owns: pid 7", "timed_out": False}
    f = failure("Refuse a node", {"msg": "node_drain: gpu-3 has GPU processes ..."}, "drain", drain=strays)
    assert (f["outcome"], f["mark_failed"], f["node_state"]) == ("blocked/drain", False, "the node stays drained")


def test_a_drain_timeout_is_skipped_and_the_node_was_given_back():
    skip = {"status": "skipped", "message": "drain timeout: gpu-2 still runs job 9 ..."}
    f = failure("Stop the rollout", {"msg": skip["message"]}, "drain", skip=skip, drain={"drained": False})
    assert (f["outcome"], f["message"], f["mark_failed"]) == ("skipped/drain", skip["message"], False)
    assert f["node_state"].startswith("the node is back in its scheduler")


def test_a_reboot_the_run_may_not_do():
    f = failure("Say what to do", {"msg": "reboot required: driver 570.172.08 is installed ..."}, "reboot",
                status="reboot-required", drain=DRAINED)  # fmt: skip
    assert (f["outcome"], f["mark_failed"]) == ("reboot-required/reboot", True)
    assert f["drain_failure"] == "reboot required: driver 570.172.08 is installed ..."


def test_a_drain_that_never_happened_is_not_marked():
    """scontrol failed: this run drained nothing, so it must not drain the node now with a failure reason."""
    f = failure("Drain the node in Slurm", {"msg": "scontrol: error: Unable to contact slurm controller"}, "drain")
    assert (f["outcome"], f["mark_failed"], f["node_state"]) == ("failed/drain", False, "the node was not drained")
    # The same failure after our drain (the record could not be written) keeps the node drained with the reason.
    assert failure("Write the drain record", {"msg": "disk full"}, "drain", drain=DRAINED)["mark_failed"] is True


def test_outcome_words():
    assert [outcome("done", "done"), outcome("running", "drain"), outcome("failed", "cdi")] == [
        "done", "running", "failed/cdi"]  # fmt: skip


SLURM_DRAINED = dict(DRAINED, backend="slurm")


def test_a_host_that_stopped_answering_mid_install_is_unreachable_at_that_step():
    """The rescue's ping found the host gone: whatever the failed task said (here the driver role's own message about
    the lost module), the outcome is unreachable/<step>; the node is marked failed in Slurm from another host of the
    run, since scontrol cannot run on the node any more."""
    result = {"msg": "Module result deserialization failed: No start of json char found", "rc": 137}
    f = failure("Install, pin and hold", result, "install", drain=SLURM_DRAINED, lost=True, others=["gpu-2", "gpu-4"])
    assert (f["outcome"], f["lost"], f["mark_failed"], f["slurm_host"]) == ("unreachable/install", True, True, "gpu-2")
    assert f["message"] == "Install, pin and hold: Module result deserialization failed: No start of json char found"
    assert f["drain_failure"].startswith("upgrade lost the node at install: Install, pin and hold: ")
    assert f["node_state"] == "the node stopped answering and stays drained in slurm"


def test_the_rollout_strategy_mark_alone_means_lost():
    result = {"msg": "the host stopped answering: ssh: connect to host 10.0.0.7 port 22: Connection refused",
              "gpufleet_unreachable": True}  # fmt: skip
    f = failure("Check the node is ready", result, "gate", drain=SLURM_DRAINED)
    assert (f["status"], f["step"], f["lost"]) == ("unreachable", "gate", True)


def test_a_lost_host_is_neither_skipped_nor_blocked_whatever_the_drain_decided():
    strays = {"drained": True, "blocked": "GPU processes that no Slurm job owns: pid 7", "backend": "slurm"}
    f = failure("Refuse a node", {"msg": "gone"}, "drain", drain=strays, skip={"status": "skipped", "message": "x"},
                lost=True, delegate="slurmctl")  # fmt: skip
    assert (f["outcome"], f["mark_failed"], f["slurm_host"]) == ("unreachable/drain", True, "slurmctl")


def test_a_lost_host_without_a_scheduler_is_not_marked():
    """Without a scheduler the only mark is the record on the host, which cannot be written."""
    f = failure("Install", {"msg": "gone"}, "install", drain=dict(DRAINED, backend="none"), lost=True)
    assert (f["mark_failed"], f["node_state"]) == (False, "the node stopped answering")
    f = failure("Drain", {"msg": "gone"}, "drain", drain=None, lost=True)
    assert (f["outcome"], f["mark_failed"]) == ("unreachable/drain", False)


def test_slurm_commands_for_a_lost_node_run_on_the_delegate_first_then_another_host_else_nowhere():
    f = failure("Install", {"msg": "gone"}, "install", drain=SLURM_DRAINED, lost=True, delegate="ctl", others=["gpu-2"])
    assert (f["mark_failed"], f["slurm_host"]) == (True, "ctl")
    f = failure("Install", {"msg": "gone"}, "install", drain=SLURM_DRAINED, lost=True)
    assert (f["mark_failed"], f["slurm_host"]) == (False, "")
    assert f["node_state"] == (
        "the node stopped answering and stays drained in slurm with the reason its drain gave (no host of this run "
        "answers to run scontrol on for it: set node_drain_slurm_delegate_to to the slurmctld host)"
    )


def test_a_host_that_answers_runs_slurm_commands_where_it_always_does():
    """Another host is only for a lost node: a failure on a node that answers keeps node_drain's own choice."""
    f = failure("Install", {"msg": "E: broken"}, "install", drain=SLURM_DRAINED, others=["gpu-2"])
    assert (f["mark_failed"], f["slurm_host"], f["lost"]) == (True, "", False)
    f = failure("Install", {"msg": "E: broken"}, "install", drain=SLURM_DRAINED, delegate="ctl")
    assert f["slurm_host"] == "ctl"


def test_kubernetes_marks_a_lost_node_from_the_controller():
    f = failure("Install", {"msg": "gone"}, "install", drain=dict(DRAINED, backend="kubernetes"), lost=True)
    assert (f["mark_failed"], f["node_state"]) == (True, "the node stopped answering and stays drained in kubernetes")
