"""A small stand-in for NVIDIA DCGM's `dcgmi`, shipped as /usr/bin/dcgmi by the test mirror's
datacenter-gpu-manager-4-core (and datacenter-gpu-manager 3) package; catalog.py fills in the version and the major.

It answers what the collection calls, with the real tool's flags, output forms, messages and exit statuses
(NVIDIA/DCGM: dcgmi/CommandLineParser.cpp, dcgmi/Diag.cpp, dcgmlib/dcgm_errors.h, nvvs/include/PluginStrings.h,
testing/python3/dcgm_diag_schema.json):
  dcgmi --version
  dcgmi diag -r 1|2|3|4|short|medium|long|xlong [-j] [--host HOST]
Without a running nv-hostengine it prints the two connection errors and exits 235 (DCGM_ST_CONNECTION_NOT_VALID,
-21, as a byte). A failed test exits 226 (DCGM_ST_NVVS_ERROR, -30). The Deployment test ("software" in DCGM 4) reads
what the real one reads through NVML from the NVML simulator's profile: row remapping failed or pending, persistence
mode, graphics processes, and the GPUs NVML counts against the /dev/nvidiaN nodes. Tests that need CUDA on a GPU
(pcie, memory, diagnostic, targeted_stress ...) are reported Skip with a reason naming this stand-in: nothing here
can run them.
"""

import glob
import json
import os
import re
import sys

VERSION = "@VERSION@"
MAJOR = int(VERSION.split(".", maxsplit=1)[0])
PROFILE = "/etc/gpufleet/nvml-sim/profile.json"
PIDFILE = "/var/run/nvhostengine.pid"
LEVELS = {"1": "short", "quick": "short", "short": "short", "2": "medium", "medium": "medium"}
LEVELS.update({"3": "long", "long": "long", "4": "xlong", "xlong": "xlong"})
# DCGM 4's test names by category and the level that first runs them (nvvs/include/PluginStrings.h, diag-skus).
TESTS = [
    ("Integration", "pcie", "medium"),
    ("Hardware", "memory", "medium"),
    ("Hardware", "diagnostic", "long"),
    ("Stress", "targeted_stress", "long"),
    ("Stress", "targeted_power", "long"),
    ("Stress", "memory_bandwidth", "long"),
    ("Stress", "memtest", "xlong"),
]
ORDER = ["short", "medium", "long", "xlong"]
# dcgmErrorSeverity_t: 1 MONITOR (can run work), 2 ISOLATE; which one each software check carries is our guess.
FINDINGS = {
    "row_remap_failure": (80, 10, 2, "GPU {} had uncorrectable memory errors and row remapping failed."),
    "pending_row_remap": (85, 10, 2, "GPU {} had memory errors and row remappings are pending"),
    "persistence_mode": (29, 3, 1, "Persistence mode for GPU {} is disabled."),
    "graphics_processes": (
        25,
        3,
        1,
        "NVVS has detected processes with graphics contexts open running on at least one GPU. "
        "This may cause some tests to fail.",
    ),
    "device_count": (20, 3, 2, "The number of devices NVML returns is different than the number of devices in /dev."),
}


def connection_error(host):
    print(f"Error: unable to establish a connection to the specified host: {host}")
    print("Error: Unable to connect to host engine. Host engine connection invalid/disconnected.")
    sys.exit(235)


def hostengine_running():
    try:
        with open(PIDFILE) as handle:
            pid = int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return False
    return os.path.exists(f"/proc/{pid}")


def warning(kind, gpu):
    error_id, category, severity, text = FINDINGS[kind]
    text = text.format(gpu)
    return {"warning": text, "error_id": error_id, "error_category": category, "error_severity": severity}


def software(gpus):
    """One result per GPU: Fail on an error, Warn on a warning only."""
    devices = [p for p in glob.glob("/dev/nvidia*") if re.fullmatch(r"/dev/nvidia\d+", p)]
    mismatch = len(devices) != len(gpus)
    results = []
    for index, gpu in enumerate(gpus):
        errors, warnings = [], []
        rows = gpu.get("remapped_rows") or {}
        if rows.get("failure"):
            errors.append(warning("row_remap_failure", index))
        elif rows.get("pending"):
            errors.append(warning("pending_row_remap", index))
        if mismatch:
            errors.append(warning("device_count", index))
        if gpu.get("persistence_mode") is False:
            warnings.append(warning("persistence_mode", index))
        if any(str(p.get("type", "")).lower().startswith("graphics") for p in gpu.get("processes") or []):
            warnings.append(warning("graphics_processes", index))
        status = "Fail" if errors else "Warn" if warnings else "Pass"
        results.append(result(index, status, errors + warnings))
    return results


def result(index, status, warnings, info=()):
    return {
        "entity_group": "GPU",
        "entity_group_id": 1,
        "entity_id": index,
        "status": status,
        "warnings": list(warnings),
        "info": list(info),
    }


def summary(results):
    statuses = [r["status"] for r in results]
    for status in ("Fail", "Warn", "Pass"):
        if status in statuses:
            return status
    return "Skip"


def run_diag(level, gpus):
    categories = {"Deployment": [{"name": "software", "results": software(gpus)}]}
    reach = ORDER.index(level)
    for category, name, first in TESTS:
        if ORDER.index(first) <= reach:
            why = "gpufleet.stack sandbox stand-in for dcgmi: this test needs CUDA on a real GPU and did not run"
            results = [result(i, "Skip", [], [why]) for i in range(len(gpus))]
            categories.setdefault(category, []).append({"name": name, "results": results})
    out = []
    for category, tests in categories.items():
        for test in tests:
            test["test_summary"] = {"status": summary(test["results"])}
        out.append({"category": category, "tests": tests})
    return out


def device_id(gpu):
    """NVML's PCI device id 0x233010DE -> "2330", as DCGM prints it."""
    return str((gpu.get("pci") or {}).get("device_id", ""))[2:6].lower()


def as_json(categories, gpus, profile):
    entities = [
        {"entity_id": i, "device_id": device_id(g), "serial_num": g.get("serial", "")} for i, g in enumerate(gpus)
    ]
    if MAJOR < 4:  # DCGM 3's schema: another top key, gpu_id as a string, no summaries or entity groups
        for category in categories:
            for test in category["tests"]:
                test.pop("test_summary", None)
                for r in test["results"]:
                    r["gpu_id"] = str(r.pop("entity_id"))
                    for key in ("entity_group", "entity_group_id"):
                        r.pop(key)
        return {
            "DCGM GPU Diagnostic": {"test_categories": categories},
            "version": VERSION,
            "Driver Version Detected": profile.get("driver_version", ""),
            "GPU Device IDs": [e["device_id"] for e in entities],
            "GPU Device Serials": {str(e["entity_id"]): e["serial_num"] for e in entities},
        }
    return {
        "DCGM Diagnostic": {"test_categories": categories},
        "entity_groups": [{"entity_group": "GPU", "entity_group_id": 1, "entities": entities}],
        "metadata": {"version": VERSION, "Driver Version Detected": profile.get("driver_version", "")},
    }


def row(left, right):
    return f"| {left:<25} | {right:<46} |"


def as_text(categories, gpus, profile):
    lines = [
        "Successfully ran diagnostic for group.",
        "+---------------------------+------------------------------------------------+",
        "| Diagnostic                | Result                                         |",
        "+===========================+================================================+",
        "|-----  Metadata  ----------+------------------------------------------------|",
        row("DCGM Version", VERSION),
        row("Driver Version Detected", profile.get("driver_version", "")),
    ]
    for category in categories:
        name = category["category"]
        lines.append(f"+-----  {name}  {'-' * (18 - len(name))}+{'-' * 48}+")
        for test in category["tests"]:
            lines.append(row(test["name"], test["test_summary"]["status"]))
            for r in test["results"]:
                lines.append(row("", f"GPU{r['entity_id']}: {r['status']}"))
                for w in r["warnings"]:
                    lines.append(row("", f"Warning: GPU{r['entity_id']}"))
                    lines.append(row("", w["warning"][:46]))
    lines.append("+---------------------------+------------------------------------------------+")
    return "\n".join(lines)


def main(argv):
    if argv[:1] in (["--version"], ["-v"]):
        print(f"Version : {VERSION}")
        return 0
    if not argv or argv[0] != "diag":
        print("Error: this stand-in answers `dcgmi diag` and `dcgmi --version` only", file=sys.stderr)
        return 255
    args, level, as_json_out, host = argv[1:], "short", False, "localhost"
    while args:
        arg = args.pop(0)
        if arg in ("-r", "--run"):
            given = args.pop(0) if args else ""
            if given not in LEVELS:
                print(f"Error: Invalid value for -r: {given}", file=sys.stderr)
                return 255
            level = LEVELS[given]
        elif arg in ("-j", "--json"):
            as_json_out = True
        elif arg == "--host":
            host = args.pop(0) if args else host
    if not hostengine_running():
        connection_error(host)
    try:
        with open(PROFILE) as handle:
            profile = json.load(handle)
    except OSError:
        profile = {"gpus": []}
    gpus = [g for g in profile.get("gpus", []) if g.get("nvml_visible", True) is not False]
    categories = run_diag(level, gpus)
    if MAJOR < 4:
        categories = [c for c in categories if c["category"] == "Deployment"]
    failed = any(t["test_summary"]["status"] == "Fail" for c in categories for t in c["tests"])
    print(
        json.dumps(as_json(categories, gpus, profile), indent=4) if as_json_out else as_text(categories, gpus, profile)
    )
    return 226 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
