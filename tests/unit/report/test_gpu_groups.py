"""The groups a host's cached GPU facts put it in (_controller/gpu_groups, the gpu_groups inventory plugin)."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._controller.gpu_groups import groups_for


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


@pytest.mark.parametrize(
    ("fabric", "groups"),
    [
        ({"summary": "ib", "peermem": True}, ["fabric_ib", "gpudirect_rdma"]),
        ({"summary": "roce", "peermem": False}, ["fabric_roce"]),
        ({"summary": "down", "peermem": False}, ["fabric_down"]),
        ({"summary": "none", "peermem": False}, []),  # no RDMA device: in no fabric group
        ({"summary": "ib", "peermem": "yes"}, ["fabric_ib"]),  # only a real true says peermem is loaded
    ],
)
def test_the_fabric_groups(fabric, groups):
    assert groups_for({"gpufleet_gpu": {"fabric": fabric}}) == groups


def test_nvlink_5_and_multi_node_nvlink_groups():
    """An HGX B200 needs NVLSM beside Fabric Manager; a GB200 tray needs IMEX, and its domain names a group (the
    domain as NVIDIA's DRA driver writes it, <cluster uuid>.<clique id>, from a real GB200: leptonai/gpud#1106)."""
    b200 = {"fabricmanager_required": True, "nvlsm_required": True, "imex_required": False, "nvlink_domain": None}
    assert groups_for({"gpufleet_gpu": b200}) == ["fabricmanager_required", "nvlsm_required"]
    gb200 = {"imex_required": True, "nvlink_domain": "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"}
    assert groups_for({"gpufleet_gpu": gb200}) == [
        "imex_required", "nvlink_domain_9c6f5af3_53bf_49b5_a436_b66766c413c3_4026"]  # fmt: skip
    assert groups_for({"gpufleet_gpu": {"imex_required": "yes", "nvlink_domain": ""}}) == []


def test_no_gpu_facts_no_groups():
    assert groups_for({"ansible_hostname": "x"}) == [] and groups_for(None) == []


def interposed_memory_cache():
    """The fact cache as ansible-core 2.19 hands it out: a cache plugin behind its payload interposer."""
    from ansible._internal._plugins._cache import PluginInterposer
    from ansible.plugins.cache.memory import CacheModule

    return PluginInterposer(CacheModule())


def test_cached_facts_decode_as_the_cache_does():
    from ansible_collections.gpufleet.stack.plugins.inventory.gpu_groups import cached_facts

    cache = interposed_memory_cache()
    facts = {"gpufleet_gpu": {"driver_version": "570.133.20", "gpus": [{"name": "NVIDIA A100-SXM4-40GB"}] * 8,
                              "kernel_log": ["NVRM: Xid (PCI:0000:07:00): 79 \u00e9"], "memory": None}}  # fmt: skip
    cache.set("gpu-1", facts)
    assert cached_facts(cache, "gpu-1") == cache.get("gpu-1") == facts


def test_a_tagged_value_goes_through_the_cache_itself():
    import datetime

    from ansible_collections.gpufleet.stack.plugins.inventory.gpu_groups import TAGGED, cached_facts

    cache = interposed_memory_cache()
    cache.set("gpu-1", {"gathered": datetime.datetime(2026, 12, 2, 9, 0)})
    assert TAGGED in cache.__wrapped__.get(cache._get_key("gpu-1"))["__payload__"]
    assert cached_facts(cache, "gpu-1") == {"gathered": datetime.datetime(2026, 12, 2, 9, 0)}


def test_a_cache_without_the_interposer_is_read_with_its_get():
    from ansible_collections.gpufleet.stack.plugins.inventory.gpu_groups import cached_facts

    class PlainCache:
        def get(self, key):
            return {"host": key}

    assert cached_facts(PlainCache(), "gpu-1") == {"host": "gpu-1"}
