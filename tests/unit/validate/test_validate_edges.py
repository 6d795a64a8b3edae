"""Node validation's verdicts at their edges: the whole result each check returns (what the fact cache and the report
show), every reason word for word, the second branch of each decision and the boundaries of the numbers compared."""

import json
from pathlib import Path

import pytest
import yaml
from ansible_collections.gpufleet.stack.plugins.module_utils._node import validate as va

FLOORS = yaml.safe_load((Path(__file__).resolve().parents[3] / "data" / "nccl_floors.yml").read_text())["floors"]
TWO_GPUS = ["nvidia.com/gpu=0", "nvidia.com/gpu=1", "nvidia.com/gpu=all"]


# Container runtime wiring.


def test_every_wiring_fault_is_named_in_one_reason():
    verdict = va.runtime_check(["io.containerd.runc.v2", "runc"], [], 2, {"legacy": 2, "cdi": 2})
    assert verdict == {
        "check": "runtime",
        "status": "failed",
        "reason": "Docker has no nvidia runtime (runtimes: io.containerd.runc.v2, runc); the CDI spec has no "
        "nvidia.com/gpu=all (nvidia-ctk cdi generate has not run with a driver)",
        "runtimes": ["io.containerd.runc.v2", "runc"],
        "cdi_devices": [],
    }


def test_a_docker_without_runtimes_says_none():
    verdict = va.runtime_check([], ["nvidia.com/gpu=all"], 0, "no image given")
    assert verdict["reason"] == "Docker has no nvidia runtime (runtimes: none)"


def test_real_gpus_without_a_loaded_driver_fail_with_the_reason_no_container_ran():
    verdict = va.runtime_check(["nvidia"], [], 8, "no /dev/nvidiactl", driver_loaded=False)
    assert verdict == {
        "check": "runtime",
        "status": "failed",
        "reason": "NVML sees 8 GPUs but no container can use them: no /dev/nvidiactl",
        "runtimes": ["nvidia"],
        "cdi_devices": [],
    }


def test_wiring_in_place_without_a_container_run_is_refused():
    verdict = va.runtime_check(["nvidia", "runc"], TWO_GPUS, 2, "no image given (gpu_validation_image)")
    assert verdict == {
        "check": "runtime",
        "status": "refused",
        "reason": "wiring in place; no container ran: no image given (gpu_validation_image)",
        "runtimes": ["nvidia", "runc"],
        "cdi_devices": TWO_GPUS,
    }


def test_each_container_that_misses_gpus_is_named():
    smoke = {"legacy": 1, "cdi": "docker: Error response from daemon: unresolvable CDI devices"}
    verdict = va.runtime_check(["nvidia"], TWO_GPUS, 2, smoke)
    assert verdict == {
        "check": "runtime",
        "status": "failed",
        "reason": "legacy container's nvidia-smi lists 1 GPUs, NVML sees 2; "
        "cdi container failed: docker: Error response from daemon: unresolvable CDI devices",
        "smoke": smoke,
        "runtimes": ["nvidia"],
        "cdi_devices": TWO_GPUS,
    }


def test_a_spec_with_uuids_and_mig_devices_counts_whole_gpus_by_index():
    devices = ["nvidia.com/gpu=0", "nvidia.com/gpu=0:1", "nvidia.com/gpu=GPU-8f3c", "nvidia.com/gpu=all"]
    verdict = va.runtime_check(["nvidia"], [*devices, "nvidia.com/mig=0:1"], 1, {"legacy": 1, "cdi": 1})
    assert verdict == {
        "check": "runtime",
        "status": "passed",
        "reason": "legacy and CDI containers see 1 GPUs",
        "smoke": {"legacy": 1, "cdi": 1},
        "runtimes": ["nvidia"],
        "cdi_devices": devices,
    }


# gpufleet-allreduce's JSON and nccl-tests' table.


def test_the_result_line_is_found_under_later_lines():
    out = 'NCCL INFO Bootstrap\n{"ok": true, "gpus": 2}\n["ok"]\n3\n{"progress": 1}\nNCCL INFO comm destroyed\n'
    assert va.parse_allreduce(out) == {"ok": True, "gpus": 2}
    assert va.parse_allreduce("") is None


ONE_GPU_RUN = """# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20
#  Rank  0 Group  0 Pid   4242 on      node1 device  0 [0x01] NVIDIA L4
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
     1048576        262144     float     sum      -1    30.10   34.84    0.00      2    29.95   35.01    0.00    N/A
     2097152        524288     float     sum      -1    55.20   37.99    0.00      0    55.01   38.12    0.00      1
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0
"""


def test_a_one_gpu_run_is_read_with_the_wrong_values_of_both_columns():
    assert va.parse_nccl_tests(ONE_GPU_RUN) == {
        "gpus": 1,
        "gpu_name": "NVIDIA L4",
        "results": [
            {"bytes": 1048576, "busbw_gbs": 0.0, "wrong": 2},
            {"bytes": 2097152, "busbw_gbs": 0.0, "wrong": 1},
        ],
        "avg_busbw_gbs": 0.0,
        "wrong": 3,
    }


def test_output_without_a_table_reads_as_nothing_and_fails_the_count():
    found = va.parse_nccl_tests("")
    assert found == {"gpus": 0, "gpu_name": "", "results": [], "avg_busbw_gbs": None, "wrong": 0}
    assert va.nccl_check(found, FLOORS, 8) == {
        "check": "nccl",
        "status": "failed",
        "reason": "the test ran on 0 GPUs, the node has 8",
        "gpus": 0,
        "gpu_name": "",
        "peak_busbw_gbs": 0.0,
        "nccl_version": None,
    }


# Floors and the measured verdict.


def test_a_catch_all_floor_applies_to_named_gpus_of_any_count_only():
    floors = [{"name": "any GPU", "match": ".+", "busbw_gbs": 10, "source": "site policy"}]
    assert va.floor_for(floors, "NVIDIA L4", 3) == floors[0]
    assert va.floor_for(floors, "", 8) is None
    assert va.floor_for(floors, None, 8) is None


def test_a_result_that_names_no_gpu_model_is_measured_not_judged():
    floors = [{"name": "any GPU", "match": ".+", "gpus": 8, "busbw_gbs": 100, "source": "site policy"}]
    found = {"ok": True, "gpus": 8, "results": [{"busbw_gbs": 50.0}], "wrong": 0}
    assert va.nccl_check(found, floors, 8) == {
        "check": "nccl",
        "status": "passed",
        "reason": "50.0 GB/s bus bandwidth; no floor for 8x ",
        "gpus": 8,
        "gpu_name": "",
        "peak_busbw_gbs": 50.0,
        "nccl_version": None,
    }


def test_no_floor_reports_the_peak_of_all_sizes():
    found = {
        "ok": True,
        "gpus": 2,
        "gpu_name": "NVIDIA L40S",
        "nccl_version": 22703,
        "results": [{"busbw_gbs": 21.46}, {"busbw_gbs": 20.0}],
        "wrong": 0,
    }
    assert va.nccl_check(found, FLOORS, 2) == {
        "check": "nccl",
        "status": "passed",
        "reason": "21.5 GB/s bus bandwidth; no floor for 2x NVIDIA L40S",
        "gpus": 2,
        "gpu_name": "NVIDIA L40S",
        "peak_busbw_gbs": 21.46,
        "nccl_version": 22703,
    }


H100_X8 = {"ok": True, "gpus": 8, "gpu_name": "NVIDIA H100 80GB HBM3", "nccl_version": 22703, "wrong": 0}


def test_wrong_values_fail_even_above_the_floor():
    verdict = va.nccl_check(dict(H100_X8, wrong=3, results=[{"busbw_gbs": 350.0}]), FLOORS, 8)
    assert verdict == {
        "check": "nccl",
        "status": "failed",
        "reason": "3 wrong values in the all-reduce results",
        "gpus": 8,
        "gpu_name": "NVIDIA H100 80GB HBM3",
        "peak_busbw_gbs": 350.0,
        "nccl_version": 22703,
        "floor_gbs": 315,
    }


def test_a_run_on_other_gpus_than_the_node_has_fails_with_its_figures():
    verdict = va.nccl_check(dict(H100_X8, results=[{"busbw_gbs": 350.0}]), FLOORS, 4)
    assert verdict == {
        "check": "nccl",
        "status": "failed",
        "reason": "the test ran on 8 GPUs, the node has 4",
        "gpus": 8,
        "gpu_name": "NVIDIA H100 80GB HBM3",
        "peak_busbw_gbs": 350.0,
        "nccl_version": 22703,
        "floor_gbs": 315,
    }


def test_a_peak_exactly_at_the_floor_passes():
    verdict = va.nccl_check(dict(H100_X8, results=[{"busbw_gbs": 315.0}]), FLOORS, 8)
    assert (verdict["status"], verdict["reason"]) == ("passed", "peak bus bandwidth 315.0 GB/s, floor 315 GB/s")


def test_a_run_that_measured_nothing_fails_with_or_without_a_floor():
    """A table this parser cannot read, or no message size between min and max bytes: no evidence the links work."""
    for name in ("NVIDIA H100 80GB HBM3", "NVIDIA L40S"):
        verdict = va.nccl_check(dict(H100_X8, gpu_name=name, results=[]), FLOORS, 8)
        assert (verdict["status"], verdict["peak_busbw_gbs"]) == ("failed", 0.0)
        assert verdict["reason"] == "the all-reduce reported no measurement: no result rows in its output"


# Runs that did not measure.


def test_no_result_at_all_fails():
    assert va.nccl_check(None, FLOORS, 8) == {
        "check": "nccl",
        "status": "failed",
        "reason": "the all-reduce test printed no result",
    }


def test_a_node_without_gpus_or_driver_is_refused_naming_both():
    found = {
        "ok": False,
        "stage": "cuda",
        "code": "cudaErrorNoDevice",
        "error": "no CUDA-capable device is detected",
        "nccl_version": 22703,
        "cuda_runtime": 12080,
        "cuda_driver": 0,
    }
    assert va.nccl_check(found, FLOORS, 0) == {
        "check": "nccl",
        "status": "refused",
        "reason": "no CUDA driver answers on this node (cudaErrorNoDevice: no CUDA-capable device is detected): no "
        "libcuda.so.1, or no GPU and driver loaded; run this on a GPU node; NVML sees no GPU on this node",
        "nccl_version": 22703,
    }


@pytest.mark.parametrize(
    ("code", "driver", "runtime", "why"),
    [
        # The driver is as new as the toolkit: CUDA's own error is the reason.
        ("cudaErrorSystemNotReady", 12080, 12080, "cudaErrorSystemNotReady: system not yet initialized"),
        # CUDA says the driver is too old: the two versions are the reason.
        (
            "cudaErrorUnsupportedPtxVersion",
            12020,
            12080,
            "the driver supports CUDA 12.2 but the toolkit built for CUDA 12.8: upgrade the driver or build with an "
            "older toolkit",
        ),
        # An older driver of the same major runs the toolkit (minor version compatibility): CUDA's own error is the
        # reason, not the versions (Fabric Manager down on a 12.2 driver with a 12.8 toolkit).
        ("cudaErrorSystemNotReady", 12020, 12080, "cudaErrorSystemNotReady: system not yet initialized"),
        # Across majors the toolkit cannot run whatever the code says.
        (
            "cudaErrorSystemNotReady",
            12080,
            13000,
            "the driver supports CUDA 12.8 but the toolkit built for CUDA 13.0: upgrade the driver or build with an "
            "older toolkit",
        ),
    ],
)
def test_cuda_that_cannot_start_on_real_gpus_fails_with_the_reason(code, driver, runtime, why):
    found = {
        "ok": False,
        "stage": "cuda",
        "code": code,
        "error": "system not yet initialized",
        "cuda_runtime": runtime,
        "cuda_driver": driver,
    }
    assert va.nccl_check(found, FLOORS, 8) == {
        "check": "nccl",
        "status": "failed",
        "reason": f"CUDA cannot start on this node's GPUs: {why}",
        "nccl_version": None,
    }


def test_an_nccl_failure_names_ncclss_code_and_message():
    found = {"ok": False, "stage": "nccl", "code": "ncclCommInitAll", "error": "unhandled system error"}
    assert va.nccl_check(found, FLOORS, 8) == {
        "check": "nccl",
        "status": "failed",
        "reason": "NCCL failed: ncclCommInitAll: unhandled system error",
    }


def test_skipped_checks_do_not_hide_a_pass():
    assert va.overall([va.result("a", "passed", ""), va.result("b", "skipped", "")]) == "passed"
    assert va.overall([]) == "skipped"


# dcgmi diag.


def diag(*tests, **root):
    """A DCGM 4 report of these tests (each {"name", "results", "test_summary"?}), with root keys such as
    runtime_error."""
    return json.dumps(
        {"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": list(tests)}], **root}}
    )


def test_no_host_engine_is_known_by_the_exit_status_alone():
    assert va.dcgm_check(235, "", "", 1) == {
        "check": "dcgm",
        "status": "failed",
        "reason": "dcgmi diag -r 1: no nv-hostengine answers (exit 235): start DCGM with systemctl enable --now "
        "nvidia-dcgm",
    }


def test_no_host_engine_is_known_by_dcgmis_message_alone():
    out = "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n"
    assert va.dcgm_check(1, out, "", 2)["reason"] == (
        "dcgmi diag -r 2: no nv-hostengine answers (exit 1): start DCGM with systemctl enable --now nvidia-dcgm"
    )


@pytest.mark.parametrize(
    ("out", "err", "tail"),
    [
        ("Error: {not json", "", "Error: {not json"),
        ("partial output", "dcgmi: invalid option\n", "dcgmi: invalid option\npartial output"),
        ("x" * 100 + "y" * 300, "", "y" * 300),  # the last 300 characters, where the error is
    ],
)
def test_output_that_is_not_a_diagnostic_is_quoted(out, err, tail):
    assert va.dcgm_check(1, out, err, 3) == {
        "check": "dcgm",
        "status": "failed",
        "reason": f"dcgmi diag -r 3 exited 1 without a diagnostic: {tail}",
    }


def test_every_failure_is_named_runtime_error_first():
    report = diag(
        {
            "name": "software",
            "results": [
                {"entity_id": 0, "status": "Fail", "warnings": [{"warning": "a"}, "b"]},
                {"entity_id": 1, "status": "Pass"},
            ],
        },
        {"name": "memory", "results": [{"entity_id": 1, "status": "Fail"}]},
        {"name": "pcie", "results": [{"entity_id": 0, "status": "Fail", "warnings": [{"error_id": 98}]}]},
        runtime_error="the plugin timed out",
    )
    assert va.dcgm_check(226, report, "", 2) == {
        "check": "dcgm",
        "status": "failed",
        "reason": "dcgmi diag -r 2: runtime error: the plugin timed out; software on GPU 0: a; b; "
        "memory on GPU 1: failed; pcie on GPU 0: failed",
        "tests": {"software": "Fail", "memory": "Fail", "pcie": "Fail"},
        "exit": 226,
    }


def test_a_runtime_error_alone_fails():
    report = diag({"name": "memory", "results": [{"entity_id": 0, "status": "Pass"}]}, runtime_error="MIG mode is on")
    assert va.dcgm_check(0, report, "", 1)["reason"] == "dcgmi diag -r 1: runtime error: MIG mode is on"


def test_a_pass_names_its_warnings_and_each_skipped_test_with_why():
    report = diag(
        {
            "name": "software",
            "results": [
                {"entity_id": 0, "status": "Pass", "warnings": [{"warning": "w1"}, {"warning": "w2"}]},
                {"entity_id": 1, "status": "Warn", "warnings": ["w3"]},
            ],
        },
        # DCGM's summary is the test's verdict, whatever its results say.
        {"name": "pcie", "results": [{"entity_id": 0, "status": "Pass"}], "test_summary": {"status": "Warn"}},
        {"name": "memory", "results": [{"entity_id": 0, "status": "Skip", "info": ["MIG mode is enabled"]}]},
        {"name": "targeted_power", "results": [{"entity_id": 0, "status": "Skip", "info": "not supported here"}]},
        {"name": "targeted_stress", "results": [{"entity_id": 1, "status": "Skip"}]},
        {"name": "eud", "results": [{"entity_id": 1, "status": "Skip", "info": []}]},
        {"name": "nvbandwidth", "results": []},
    )
    assert va.dcgm_check(0, report, "", 3) == {
        "check": "dcgm",
        "status": "passed",
        "reason": "dcgmi diag -r 3: 2 tests passed on 2 GPUs (software, pcie); "
        "warnings: software on GPU 0: w1; w2; software on GPU 1: w3; "
        "skipped: memory, targeted_power, targeted_stress, eud (MIG mode is enabled; not supported here; skipped)",
        "tests": {
            "software": "Warn",
            "pcie": "Warn",
            "memory": "Skip",
            "targeted_power": "Skip",
            "targeted_stress": "Skip",
            "eud": "Skip",
            "nvbandwidth": "Skip",
        },
        "exit": 0,
    }


@pytest.mark.parametrize("word", ["Skip", "SKIPPED", "Not Run", "NotRun", "not_run"])
def test_each_of_dcgms_words_for_a_test_that_did_not_run_is_a_skip(word):
    found = va.parse_dcgm_diag(diag({"name": "memory", "results": [{"entity_id": 0, "status": word}]}))
    assert found["tests"] == {"memory": "Skip"}
    assert found["skipped"] == {"memory": "skipped"}


def test_a_report_of_dcgm_2_counts_gpus_named_as_gpu_ids():
    report = {
        "DCGM GPU Diagnostic": {"test_categories": [{"tests": [{"results": [{"gpu_ids": "0", "status": "PASS"}]}]}]}
    }
    assert va.parse_dcgm_diag(json.dumps(report)) == {
        "tests": {"?": "Pass"},
        "failures": [],
        "warnings": [],
        "skipped": {},
        "gpus": 1,
        "runtime_error": "",
    }


@pytest.mark.parametrize(
    ("results", "verdict"),
    [
        ([{"status": "Pass"}], "Pass"),  # a pass on no GPU
        ([{"entity_id": 0, "status": "Skip"}, {"entity_id": 1, "status": "Skip"}], "Skip"),  # GPUs, no test ran
    ],
)
def test_a_report_without_a_test_run_on_a_gpu_fails(results, verdict):
    assert va.dcgm_check(0, diag({"name": "memory", "results": results}), "", 1) == {
        "check": "dcgm",
        "status": "failed",
        "reason": "dcgmi diag -r 1 ran no test on any GPU: 1 test listed",
        "tests": {"memory": verdict},
        "exit": 0,
    }
