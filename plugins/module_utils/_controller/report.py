# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report's data: one row per host from cached facts, drift from the desired stack, the fleet's summaries.

Pure functions: the fleet_report action plugin feeds them hostvars; report_render.py writes Markdown and HTML.
"""

from __future__ import annotations

from ansible_collections.gpufleet.stack.plugins.module_utils._common.versions import matches
from ansible_collections.gpufleet.stack.plugins.module_utils._common.xid import parse_xid, pci_key

HEALTH_ORDER = {"ok": 0, "unknown": 1, "warning": 2, "critical": 3}
# What site.yml installs when gpufleet_components is not set (playbooks/vars/gpufleet.yml): drift is measured against
# the stack keys of the listed components only, as verification does; a framework only with horovod.
DEFAULT_COMPONENTS = ("driver", "cuda", "cudnn", "nccl", "container_toolkit")
COMPONENT_KEYS = {
    "driver": ("driver",),
    "cuda": ("cuda",),
    "cudnn": ("cudnn",),
    "nccl": ("nccl",),
    "container_toolkit": ("container_toolkit",),
    "dcgm": ("dcgm",),
    "horovod": ("framework", "horovod"),
}


STACK_LABELS = (("cudnn", "cuDNN"), ("nccl", "NCCL"), ("container_toolkit", "Container Toolkit"), ("dcgm", "DCGM"))


def version_matches(desired, actual):
    """True when `actual` satisfies the pin `desired` (exact, branch/prefix or range, as in stack_assert)."""
    if desired in (None, ""):
        return True
    if actual in (None, ""):
        return False
    try:
        return matches(desired, actual)
    except ValueError:  # a malformed pin cannot be satisfied; stack_assert's preflight names it
        return False


def installed_versions(installed):
    """Map component -> installed version(s) from the stack_facts result (`gpufleet_installed`)."""
    installed = installed or {}

    def version_of(key):
        value = installed.get(key) or {}
        return value.get("version") if isinstance(value, dict) else None

    driver = installed.get("driver") or {}
    toolkits = (installed.get("cuda") or {}).get("toolkits") or []
    frameworks = installed.get("frameworks") or {}
    return {
        "driver": driver.get("loaded_version") or driver.get("package_version"),
        "driver_flavor": driver.get("flavor"),
        "fabricmanager": version_of("fabricmanager"),
        "cuda": [t.get("version") for t in toolkits if t.get("version")],
        "cudnn": version_of("cudnn"),
        "nccl": version_of("nccl"),
        "container_toolkit": version_of("container_toolkit"),
        "dcgm": version_of("dcgm"),
        "frameworks": {
            name: (fw[0] if isinstance(fw, list) and fw else fw or {}).get("version") for name, fw in frameworks.items()
        },
    }


def desired_for(stack, components):
    """The desired stack's keys that the listed components install (what verification expects)."""
    keys = {k for c in (components or DEFAULT_COMPONENTS) for k in COMPONENT_KEYS.get(c, ())}
    return {k: v for k, v in (stack or {}).items() if k in keys}


def drift(desired, gpu, installed):
    """[(kind, text)]: each difference between the desired stack and what the host reports."""
    if not desired:
        return []
    found = installed_versions(installed)
    driver = (gpu or {}).get("driver_version") or found["driver"]
    out = []
    if desired.get("driver") and not version_matches(desired["driver"], driver):
        out.append(("driver", f"driver {driver or 'absent'} ≠ {desired['driver']}"))
    if installed is not None:
        wanted = desired.get("cuda")
        for cuda in wanted if isinstance(wanted, list) else [wanted] if wanted else []:
            if not any(version_matches(cuda, v) for v in found["cuda"]):
                out.append(("CUDA", f"CUDA {cuda} not installed (have {', '.join(found['cuda']) or 'none'})"))
        for key, label in STACK_LABELS:
            if desired.get(key) and not version_matches(desired[key], found[key]):
                out.append((label, f"{label} {found[key] or 'absent'} ≠ {desired[key]}"))
        framework = desired.get("framework") or {}
        if isinstance(framework, dict) and framework.get("name") and framework.get("version"):
            have = found["frameworks"].get(framework["name"])
            if not version_matches(framework["version"], (have or "").split("+")[0]):
                out.append(("framework", f"{framework['name']} {have or 'absent'} ≠ {framework['version']}"))
    return out


def outcome_notes(facts):
    """[(kind, text)]: what the last site.yml verification or upgrade.yml said about the host, when it went wrong."""
    notes = []
    verify = facts.get("gpufleet_verify") or {}
    if verify.get("status") == "failed":
        failures = "; ".join(verify.get("failures") or ["(no reason recorded)"])
        notes.append(("verification", f"verification failed: {failures}"))
    validation = facts.get("gpufleet_validation") or {}
    if validation.get("status") == "failed":
        failed = [f"{c['check']}: {c['reason']}" for c in validation.get("checks") or [] if c.get("status") == "failed"]
        notes.append(("validation", "validation failed: " + "; ".join(failed or ["(no reason recorded)"])))
    multinode = facts.get("gpufleet_multinode") or {}
    if multinode.get("status") == "failed":
        failed = [f"{c['check']}: {c['reason']}" for c in multinode.get("checks") or [] if c.get("status") == "failed"]
        notes.append(("validation", "the job across nodes failed: " + "; ".join(failed or ["(no reason recorded)"])))
    upgrade = facts.get("gpufleet_upgrade") or {}
    if upgrade.get("status") not in (None, "", "done", "running"):
        text = f"upgrade {upgrade['status']} at {upgrade.get('step', '?')}: {upgrade.get('message', '')}"
        notes.append(("upgrade", text.rstrip(": ")))
    return notes


def stack_of(gpu, installed):
    """The whole installed stack, for the row: driver and flavour, Fabric Manager, toolkits, cuDNN, NCCL, toolkit,
    frameworks."""
    found = installed_versions(installed)
    return {
        "driver": (gpu or {}).get("driver_version") or found["driver"],
        "flavor": (gpu or {}).get("kernel_module_flavor") or found["driver_flavor"],
        "fabricmanager": found["fabricmanager"],
        "cuda": found["cuda"],
        "cudnn": found["cudnn"],
        "nccl": found["nccl"],
        "container_toolkit": found["container_toolkit"],
        "dcgm": found["dcgm"],
        "frameworks": {k: v for k, v in found["frameworks"].items() if v},
    }


def gpu_grid(gpu):
    """One entry per GPU: temperature against its slowdown threshold, memory, ECC, remapped rows, Xid count."""
    xids = {}
    for line in ((gpu or {}).get("kernel_log") or {}).get("xid_lines") or []:
        parsed = parse_xid(line)
        if parsed:
            xids[parsed[0]] = xids.get(parsed[0], 0) + 1
    grid = []
    for card in (gpu or {}).get("gpus") or []:
        temperature = card.get("temperature") or {}
        ecc = card.get("ecc") or {}
        rows = card.get("remapped_rows") or {}
        remapped = None  # not before Ampere
        if rows.get("correctable") is not None:
            remapped = {k: rows.get(k) for k in ("correctable", "uncorrectable", "pending", "failed")}
        grid.append(
            {
                "index": card.get("index"),
                "name": card.get("name") or card.get("error") or "?",
                "temp_c": temperature.get("current_c"),
                "slowdown_c": temperature.get("slowdown_c"),
                "memory_mib": card.get("memory_total_mib"),
                "ecc_uncorrected": ecc.get("volatile_uncorrected"),
                "remapped": remapped,
                "xid": xids.get(pci_key(card.get("pci_bus_id")), 0),
            }
        )
    return grid


def last_upgrade(facts):
    """From → to, when and how the last upgrade.yml run on the host ended; None when it never ran."""
    upgrade = facts.get("gpufleet_upgrade") or {}
    if not upgrade.get("status"):
        return None
    return {
        "from": ((upgrade.get("from") or {}).get("driver")),
        "to": ((upgrade.get("to") or {}).get("driver")),
        "time": upgrade.get("time"),
        "outcome": upgrade.get("outcome") or upgrade["status"],
    }


def _outcome(found):
    checks = "; ".join(f"{c['check']} {c['status']}" for c in found.get("checks") or [])
    return f"{found['status']} ({checks})" if checks else found["status"]


def last_validation(facts):
    """ "refused (runtime refused; nccl refused); across gpu-1, gpu-2: passed (allreduce passed)": the last
    playbooks/validate.yml outcome on the node and of the job across nodes it took part in; None if never."""
    validation = facts.get("gpufleet_validation") or {}
    multinode = facts.get("gpufleet_multinode") or {}
    parts = [_outcome(validation)] if validation.get("status") else []
    if multinode.get("status"):
        parts.append(f"across {', '.join(multinode.get('nodes') or [])}: {_outcome(multinode)}")
    return "; ".join(parts) or None


def nvlink_text(gpu):
    """What the node's NVLink fabric needs, from gpu_facts: NVLink 5 NVSwitches (Fabric Manager with NVLSM), and the
    multi-node NVLink domain an IMEX node is in ([] for an NVLink 4 HGX or a node without NVSwitches)."""
    parts = ["NVLink 5 NVSwitches (Fabric Manager, NVLSM)"] if gpu.get("nvlink5_switch") is True else []
    if gpu.get("imex_required") is True:
        domain = gpu.get("nvlink_domain")
        parts.append(f"NVLink domain {domain} (IMEX)" if domain else "multi-node NVLink, no domain registered (IMEX)")
    return parts


def fabric_text(gpu):
    """ "ib: mlx5_0:1 ACTIVE 400 Gb/s, mlx5_1:1 DOWN; GPUDirect RDMA (nvidia-peermem)": the node's RDMA ports from
    gpu_facts' fabric (not the NVSwitch management bridge's, which lead to the NVSwitches), then what its NVLink
    fabric needs; None on a node with neither (or facts from before fabric was gathered)."""
    gpu = gpu if isinstance(gpu, dict) else {}
    fabric = gpu.get("fabric") if isinstance(gpu.get("fabric"), dict) else {}
    parts = []
    if fabric.get("summary") not in (None, "none"):
        ports = []
        for dev in fabric.get("devices") or []:
            for port in [] if dev.get("nvswitch_mgmt") else dev.get("ports") or []:
                rate = f" {port['rate_gbps']:g} Gb/s" if port.get("active") and port.get("rate_gbps") else ""
                ports.append(f"{dev.get('name')}:{port.get('port')} {port.get('state') or '?'}{rate}")
        peermem = "GPUDirect RDMA (nvidia-peermem)" if fabric.get("peermem") is True else "no nvidia-peermem"
        parts.append(f"{fabric['summary']}: {', '.join(ports) or 'no port'}; {peermem}")
    return "; ".join(parts + nvlink_text(gpu)) or None


def host_row(name, hostvars):
    """One report row from a host's variables (facts from the cache, desired stack and components from inventory)."""
    facts = hostvars.get("ansible_facts") or {}
    if "gpufleet_multinode" in hostvars:  # set_fact (cacheable) on the nodes of the job: a host variable in this run
        facts = {**facts, "gpufleet_multinode": hostvars["gpufleet_multinode"]}
    gpu = facts.get("gpufleet_gpu")
    installed = facts.get("gpufleet_installed")
    if gpu is None:
        return {
            "host": name, "gathered": False, "gpus": "", "model": "", "gpu_count": 0, "driver": "", "cuda": "",
            "stack": {}, "gpu_grid": [], "upgrade": last_upgrade(facts), "validation": last_validation(facts),
            "health": "critical" if facts.get("gpufleet_gather_failed") else "unknown", "facts_at": "",
            "findings": not_gathered(facts.get("gpufleet_gather_failed"), {}),
            "drift": ["no GPU facts: run playbooks/facts.yml"], "drift_kinds": ["no facts"],
        }  # fmt: skip
    failed = facts.get("gpufleet_gather_failed")
    models = {}
    for card in gpu.get("gpus") or []:
        models[card.get("name") or "?"] = models.get(card.get("name") or "?", 0) + 1
    toolkits = installed_versions(installed)["cuda"] if installed else []
    differences = outcome_notes(facts) + drift(
        desired_for(hostvars.get("gpufleet_stack"), hostvars.get("gpufleet_components")), gpu, installed
    )
    return {
        "host": name,
        "gathered": True,
        "gpus": ", ".join(f"{n}x {m}" for m, n in models.items()) or "none",
        "model": max(models, key=models.get) if models else "none",
        "gpu_count": sum(models.values()),
        "driver": f"{gpu.get('driver_version') or '—'} ({gpu.get('driver_state', 'unknown')})",
        "cuda": " / ".join(filter(None, [gpu.get("cuda_driver_version"), ", ".join(toolkits)])) or "—",
        "stack": stack_of(gpu, installed),
        "gpu_grid": gpu_grid(gpu),
        "fabric": fabric_text(gpu),
        "upgrade": last_upgrade(facts),
        "validation": last_validation(facts),
        "health": "critical" if failed else gpu.get("health_status") or "unknown",
        "findings": not_gathered(failed, gpu) + (gpu.get("health") or []),
        "facts_at": gpu.get("gathered_at") or "",
        "drift": [text for _kind, text in differences],
        "drift_kinds": sorted({kind for kind, _text in differences}),
    }


def not_gathered(failed, gpu):
    """The finding of a host whose last gathering failed (playbooks/facts.yml's record): its cached facts are old."""
    if not isinstance(failed, dict):
        return []
    since = (
        f"; the facts shown are from {gpu['gathered_at']}" if gpu.get("gathered_at") else "; the facts shown are old"
    )
    return [
        {
            "severity": "critical",
            "gpu": None,
            "what": f"facts could not be gathered at {failed.get('at') or '?'}: {failed.get('reason') or '?'}{since}",
        }
    ]


def summary(rows):
    return {
        "hosts": len(rows),
        "critical": sum(r["health"] == "critical" for r in rows),
        "warning": sum(r["health"] == "warning" for r in rows),
        "drifted": sum(bool(r["drift"]) for r in rows),
        "ok": sum(r["health"] == "ok" and not r["drift"] for r in rows),
    }


def breakdowns(rows):
    """The fleet by GPU model (hosts, GPUs), by driver (hosts) and by kind of drift (hosts), largest first."""
    by_model, by_driver, by_drift = {}, {}, {}
    for r in rows:
        if r["gathered"]:
            entry = by_model.setdefault(r["model"], {"hosts": 0, "gpus": 0})
            entry["hosts"] += 1
            entry["gpus"] += r["gpu_count"]
            driver = r["stack"].get("driver") or "none"
            by_driver[driver] = by_driver.get(driver, 0) + 1
        for kind in r["drift_kinds"]:
            by_drift[kind] = by_drift.get(kind, 0) + 1
    return {
        "model": dict(sorted(by_model.items(), key=lambda kv: (-kv[1]["hosts"], kv[0]))),
        "driver": dict(sorted(by_driver.items(), key=lambda kv: (-kv[1], kv[0]))),
        "drift": dict(sorted(by_drift.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


def build_rows(hostvars_by_host):
    """Rows sorted worst first (critical, then drifted), then by host name."""
    rows = [host_row(name, hv) for name, hv in hostvars_by_host.items()]
    return sorted(rows, key=lambda r: (-HEALTH_ORDER.get(r["health"], 1), not r["drift"], r["host"]))
