# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node validation (role gpu_validation): parse what the checks print and decide. Pure functions.

A check ends as passed, failed, refused (it cannot run here, with the reason: no GPU, no driver, no image) or
skipped (not asked for, or its tool is not installed). Only failed fails the play: a node without GPUs cannot prove a
GPU works, but it must say so rather than pass.
"""

from __future__ import annotations

import json
import re

CDI_DEVICE = re.compile(r"^([a-z0-9][a-z0-9.-]*/[a-z0-9][a-z0-9.-]*)=(\S+)$")
# nccl-tests' table rows: size count type redop root, then out-of-place and in-place time algbw busbw #wrong.
NCCL_TESTS_ROW = re.compile(
    r"^\s*(\d+)\s+(\d+)\s+\w+\s+\w+\s+-?\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)"
)
NCCL_TESTS_DEVICE = re.compile(r"^#\s+Rank\s+\d+\s.*device\s+\d+\s+\[[^\]]*\]\s+(.+?)\s*$")
NCCL_TESTS_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([\d.]+)")


def result(check, status, reason, **data):
    return {"check": check, "status": status, "reason": reason, **data}


def parse_docker_runtimes(text):
    """`docker info --format '{{json .Runtimes}}'` -> sorted runtime names; [] when unparsable."""
    try:
        runtimes = json.loads(text or "null")
    except ValueError:
        return []
    return sorted(runtimes) if isinstance(runtimes, dict) else []


def parse_cdi_list(text):
    """`nvidia-ctk cdi list` (stdout; its INFO line may be mixed in) -> fully qualified device names."""
    return [f"{m.group(1)}={m.group(2)}" for m in map(CDI_DEVICE.match, (text or "").split()) if m]


def runtime_check(runtimes, cdi_devices, gpus, smoke, *, driver_loaded=True, simulated=False):
    """The container wiring: the nvidia runtime registered with Docker, a CDI device per GPU and `all`, and the two
    smoke containers' `nvidia-smi -L` GPU counts. smoke: {"legacy": n | reason str, "cdi": n | reason str} or a str
    saying why no container ran (refused). Without a loaded driver no CDI spec can be made (nvidia-ctk asks NVML), so
    a missing spec is then part of the refusal, not a fault."""
    problems = []
    if "nvidia" not in runtimes:
        problems.append(f"Docker has no nvidia runtime (runtimes: {', '.join(runtimes) or 'none'})")
    gpu_devices = [d for d in cdi_devices if d.startswith("nvidia.com/gpu=")]
    # A spec names each whole GPU by index ("0") and by UUID, MIG devices as "0:1", and "all": count the indexes.
    indexes = [d for d in gpu_devices if d.split("=", 1)[1].isdigit()]
    if "nvidia.com/gpu=all" not in gpu_devices and driver_loaded:
        problems.append("the CDI spec has no nvidia.com/gpu=all (nvidia-ctk cdi generate has not run with a driver)")
    elif gpu_devices and gpus and len(indexes) != gpus:
        problems.append(f"the CDI spec names {len(indexes)} GPUs, NVML sees {gpus}")
    data = {"runtimes": runtimes, "cdi_devices": gpu_devices}
    if problems:
        return result("runtime", "failed", "; ".join(problems), **data)
    if isinstance(smoke, str) and not driver_loaded and not no_gpu_to_test(gpus, simulated):
        return result("runtime", "failed", f"NVML sees {gpus} GPUs but no container can use them: {smoke}", **data)
    if isinstance(smoke, str):
        return result("runtime", "refused", f"wiring in place; no container ran: {smoke}", **data)
    for path, seen in smoke.items():
        if isinstance(seen, str):
            problems.append(f"{path} container failed: {seen}")
        elif gpus and seen != gpus:
            problems.append(f"{path} container's nvidia-smi lists {seen} GPUs, NVML sees {gpus}")
    if problems:
        return result("runtime", "failed", "; ".join(problems), smoke=smoke, **data)
    return result("runtime", "passed", f"legacy and CDI containers see {gpus} GPUs", smoke=smoke, **data)


def count_smi_gpus(text):
    """`nvidia-smi -L` -> the number of "GPU n:" lines."""
    return sum(1 for line in (text or "").splitlines() if re.match(r"^GPU \d+:", line))


def parse_allreduce(text):
    """gpufleet-allreduce's JSON (its last line), or None."""
    for line in reversed((text or "").strip().splitlines()):
        try:
            found = json.loads(line)
        except ValueError:
            continue
        if isinstance(found, dict) and "ok" in found:
            return found
    return None


def parse_nccl_tests(text):
    """NVIDIA nccl-tests all_reduce_perf output -> {gpus, gpu_names, rows: [{bytes, busbw_gbs, wrong}],
    avg_busbw_gbs, wrong}; out-of-place columns (the first set), as nccl-tests' own summary reads them."""
    rows, names, avg = [], [], None
    for line in (text or "").splitlines():
        device = NCCL_TESTS_DEVICE.match(line)
        if device:
            names.append(device.group(1))
            continue
        found = NCCL_TESTS_AVG.match(line)
        if found:
            avg = float(found.group(1))
            continue
        row = NCCL_TESTS_ROW.match(line)
        if row:
            # #wrong of the out-of-place and the in-place run ("N/A" where the run did not check).
            wrong = sum(int(w) for w in (row.group(6), row.group(10)) if w.isdigit())
            rows.append({"bytes": int(row.group(1)), "busbw_gbs": float(row.group(5)), "wrong": wrong})
    return {
        "gpus": len(names),
        "gpu_name": names[0] if names else "",
        "results": rows,
        "avg_busbw_gbs": avg,
        "wrong": sum(r["wrong"] for r in rows),
    }


def floor_for(floors, gpu_name, gpus):
    """The floor row for this GPU model and count: the first whose `match` regex finds the name and whose `gpus`
    equals the count (or is absent). None when no row applies."""
    for row in floors or []:
        if re.search(row["match"], gpu_name or "", re.I) and row.get("gpus") in (None, gpus):
            return row
    return None


def _cuda_version(number):
    return f"{number // 1000}.{number % 1000 // 10}" if number else None


# CUDA runtime errors that mean the driver is older than the code needs (NVIDIA's cuda_runtime_api.h: "the installed
# NVIDIA CUDA driver is older than the CUDA runtime library", "requires a newer CUDA driver", and the PTX JIT of an
# older driver refusing a newer toolkit's PTX).
TOO_OLD_DRIVER = ("cudaErrorInsufficientDriver", "cudaErrorCallRequiresNewerDriver", "cudaErrorUnsupportedPtxVersion")


def refusal_reason(found):
    """Why gpufleet-allreduce could not use a GPU, in words an operator acts on."""
    driver, runtime = found.get("cuda_driver") or 0, found.get("cuda_runtime") or 0
    code = found.get("code", "")
    if not driver:
        return (
            f"no CUDA driver answers on this node ({code}: {found.get('error')}): no libcuda.so.1, or no GPU and "
            "driver loaded; run this on a GPU node"
        )
    # CUDA's minor version compatibility: a toolkit runs on an older driver of its own major (12.8 on 12.2), except
    # for what needs the newer driver, which CUDA says with one of these codes. Across majors it cannot run at all.
    if code in TOO_OLD_DRIVER or (driver < runtime and driver // 1000 < runtime // 1000):
        return (
            f"the driver supports CUDA {_cuda_version(driver)} but the toolkit built for CUDA "
            f"{_cuda_version(runtime)}: upgrade the driver or build with an older toolkit"
        )
    return f"{code}: {found.get('error')}"


def _measured(found, floors, expected_gpus):
    """(status, reason, data) of an all-reduce that ran."""
    gpus, name = found.get("gpus"), found.get("gpu_name", "")
    peak = max((r["busbw_gbs"] for r in found.get("results") or []), default=0.0)
    data = {"gpus": gpus, "gpu_name": name, "peak_busbw_gbs": peak, "nccl_version": found.get("nccl_version")}
    floor = floor_for(floors, name, gpus)
    if floor:
        data["floor_gbs"] = floor["busbw_gbs"]
    if found.get("wrong"):
        return "failed", f"{found['wrong']} wrong values in the all-reduce results", data
    if expected_gpus and gpus != expected_gpus:
        return "failed", f"the test ran on {gpus} GPUs, the node has {expected_gpus}", data
    if not found.get("results"):
        # Nothing measured (nccl-tests rows this parser does not know, or no message size between min and max bytes)
        # is no evidence the links work, with or without a floor to compare with.
        return "failed", "the all-reduce reported no measurement: no result rows in its output", data
    if floor is None:
        return "passed", f"{peak:.1f} GB/s bus bandwidth; no floor for {gpus}x {name}", data
    if peak < floor["busbw_gbs"]:
        why = (
            f"peak bus bandwidth {peak:.1f} GB/s is under the floor of {floor['busbw_gbs']} GB/s for {gpus}x "
            f"{floor['name']} ({floor['source']})"
        )
        return "failed", why, data
    return "passed", f"peak bus bandwidth {peak:.1f} GB/s, floor {floor['busbw_gbs']} GB/s", data


def no_gpu_to_test(gpus, simulated):
    """Why no GPU test can run on this node at all, or "": none on its bus, or only the NVML simulator's. On a node
    with real GPUs, a GPU test that cannot start is a fault of the node, never a refusal."""
    if simulated:
        return "its GPUs are the NVML simulator's (a sandbox node): nothing can run CUDA on them"
    if not gpus:
        return "NVML sees no GPU on this node"
    return ""


def nccl_check(found, floors, expected_gpus=None, simulated=False):
    """The verdict on an all-reduce run (gpufleet-allreduce's JSON, or parse_nccl_tests' dict)."""
    if found is None:
        return result("nccl", "failed", "the all-reduce test printed no result")
    if found.get("ok") is False and found.get("stage") == "cuda":
        why, cannot = refusal_reason(found), no_gpu_to_test(expected_gpus, simulated)
        status = "refused" if cannot else "failed"
        reason = f"{why}; {cannot}" if cannot else f"CUDA cannot start on this node's GPUs: {why}"
        return result("nccl", status, reason, nccl_version=found.get("nccl_version"))
    if found.get("ok") is False:
        return result("nccl", "failed", f"NCCL failed: {found.get('code')}: {found.get('error')}")
    status, reason, data = _measured(found, floors, expected_gpus)
    return result("nccl", status, reason, **data)


def overall(results):
    """failed when any check failed; else refused when any was refused; else passed (skips do not count)."""
    statuses = {r["status"] for r in results}
    for status in ("failed", "refused", "passed"):
        if status in statuses:
            return status
    return "skipped"


# dcgmi's exit statuses are a negative dcgmReturn_t as a byte (NVIDIA/DCGM dcgmi/main_dcgmi.cpp, dcgm_structs.h).
# A failed test exits 226 (DCGM_ST_NVVS_ERROR, -30); dcgm_check reads which test failed from the report instead.
DCGMI_NO_HOSTENGINE = 235  # DCGM_ST_CONNECTION_NOT_VALID (-21)
DCGMI_ISOLATE = 205  # DCGM_ST_NVVS_ISOLATE_ERROR (-51): an error that takes the GPU out of service


def _diag_root(found):
    """The diagnostic of DCGM 4 ("DCGM Diagnostic") or 3 ("DCGM GPU Diagnostic"), or None."""
    if not isinstance(found, dict):
        return None
    return found.get("DCGM Diagnostic") or found.get("DCGM GPU Diagnostic")


def parse_dcgm_diag(text):
    """`dcgmi diag -r N -j` (DCGM 3 or 4 schema) -> {"tests": {name: status}, "failures", "warnings",
    "skipped": {name: why}, "gpus", "runtime_error"}, or None when it printed no diagnostic JSON."""
    start = (text or "").find("{")
    try:
        root = _diag_root(json.loads(text[start:])) if start >= 0 else None
    except ValueError:
        root = None
    if root is None:
        return None
    found = {"tests": {}, "failures": [], "warnings": [], "skipped": {}, "gpus": set()}
    found["runtime_error"] = root.get("runtime_error") or ""
    for category in root.get("test_categories") or []:
        for test in category.get("tests") or []:
            name = test.get("name", "?")
            statuses = []
            for res in test.get("results") or []:
                status = _status(res.get("status"))
                gpu = res.get("entity_id", res.get("gpu_id", res.get("gpu_ids")))
                found["gpus"].add(str(gpu))
                statuses.append(status)
                notes = [w.get("warning", "") if isinstance(w, dict) else str(w) for w in res.get("warnings") or []]
                where = f"{name} on GPU {gpu}"
                if status == "Fail":
                    found["failures"].append(f"{where}: {'; '.join(notes) or 'failed'}")
                elif notes:
                    found["warnings"].append(f"{where}: {'; '.join(notes)}")
                if status == "Skip":
                    info = res.get("info")
                    found["skipped"][name] = (
                        info[0] if isinstance(info, list) and info else str(info or "")
                    ) or "skipped"
            summary = (test.get("test_summary") or {}).get("status")
            found["tests"][name] = _status(summary) if summary else _worst(statuses)
    found["gpus"] = len(found["gpus"] - {"None"})
    return found


def _status(text):
    """DCGM's result words in one form: Pass, Fail, Warn, Skip ("Not Run", DCGM 3's "SKIPPED" are Skip)."""
    word = str(text or "").strip().lower()
    if word in ("skip", "skipped", "not run", "notrun", "not_run"):
        return "Skip"
    return word.capitalize()


def _worst(statuses):
    for status in ("Fail", "Warn", "Pass"):
        if status in statuses:
            return status
    return "Skip"


def _count(n, noun):
    return f"{n} {noun}{'' if n == 1 else 's'}"


def dcgm_check(rc, out, err, level):
    """The verdict on one `dcgmi diag -r LEVEL -j` run: failed on a failed test, a runtime error, no host engine
    or output that is not DCGM's; passed otherwise, naming warnings and the tests DCGM skipped."""
    run = f"dcgmi diag -r {level}"
    if rc == DCGMI_NO_HOSTENGINE or "Unable to connect to host engine" in (out or ""):
        return result(
            "dcgm",
            "failed",
            f"{run}: no nv-hostengine answers (exit {rc}): start DCGM with systemctl enable --now nvidia-dcgm",
        )
    found = parse_dcgm_diag(out)
    if found is None:
        tail = ((err or "") + (out or "")).strip()[-300:]
        return result("dcgm", "failed", f"{run} exited {rc} without a diagnostic: {tail or 'no output'}")
    data = {"tests": found["tests"], "exit": rc}
    problems = list(found["failures"])
    if found["runtime_error"]:
        problems.insert(0, f"runtime error: {found['runtime_error']}")
    if not problems and rc != 0:
        problems.append(f"exit {rc} with no failed test in its report")
    if problems:
        isolate = " (DCGM says: isolate the GPU)" if rc == DCGMI_ISOLATE else ""
        return result("dcgm", "failed", f"{run}{isolate}: " + "; ".join(problems), **data)
    ran = [n for n, s in found["tests"].items() if s != "Skip"]
    if not ran or not found["gpus"]:
        return result(
            "dcgm", "failed", f"{run} ran no test on any GPU: {_count(len(found['tests']), 'test')} listed", **data
        )
    reason = f"{run}: {_count(len(ran), 'test')} passed on {_count(found['gpus'], 'GPU')} ({', '.join(ran)})"
    if found["warnings"]:
        reason += "; warnings: " + "; ".join(found["warnings"])
    if found["skipped"]:
        why = sorted(set(found["skipped"].values()))
        reason += f"; skipped: {', '.join(found['skipped'])} ({'; '.join(why)})"
    return result("dcgm", "passed", reason, **data)
