"""What a failed step of one host's upgrade records (module_utils/_upgrade, the upgrade_failure filter): the outcome,
the message, whether the node is marked failed (kept drained with the reason) and what the run says about it."""

from ansible_collections.gpufleet.stack.plugins.module_utils._upgrade import failure, outcome

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
