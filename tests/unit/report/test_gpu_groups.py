"""The groups a host's cached GPU facts put it in (module_utils/_gpu_groups, the gpu_groups inventory plugin)."""

from ansible_collections.gpufleet.stack.plugins.module_utils._gpu_groups import groups_for


def test_an_hgx_node():
    facts = {"gpufleet_gpu": {"fabricmanager_required": True, "driver_state": "loaded", "driver_version": "570.133.20",
                              "health_status": "critical",
                              "gpus": [{"name": "NVIDIA A100-SXM4-40GB"}] * 8}}  # fmt: skip
    assert groups_for(facts) == [
        "fabricmanager_required", "gpu_model_a100_sxm4_40gb", "driver_branch_570", "gpu_health_critical"]  # fmt: skip


def test_a_node_whose_driver_is_not_loaded_and_mixed_models():
    facts = {"gpufleet_gpu": {"driver_state": "mismatch", "driver_version": None, "health_status": "warning",
                              "gpus": [{"name": "NVIDIA H100 80GB HBM3"}, {"name": "Tesla T4"}]}}  # fmt: skip
    assert groups_for(facts, {"health": "health"}) == [
        "gpu_driver_not_loaded", "gpu_model_h100_80gb_hbm3", "gpu_model_tesla_t4", "health_warning"]  # fmt: skip


def test_no_gpu_facts_no_groups():
    assert groups_for({"ansible_hostname": "x"}) == [] and groups_for(None) == []
