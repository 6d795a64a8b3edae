# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report: one row per host from cached facts, drift from the desired stack, Markdown and HTML.

Pure functions: the fleet_report action plugin feeds them hostvars and writes the files.
"""

from __future__ import annotations

import html

from ansible_collections.gpufleet.stack.plugins.module_utils._versions import matches

HEALTH_ORDER = {"ok": 0, "unknown": 1, "warning": 2, "critical": 3}


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

    toolkits = (installed.get("cuda") or {}).get("toolkits") or []
    frameworks = installed.get("frameworks") or {}
    return {
        "driver": (installed.get("driver") or {}).get("loaded_version")
        or (installed.get("driver") or {}).get("package_version"),
        "cuda": [t.get("version") for t in toolkits if t.get("version")],
        "cudnn": version_of("cudnn"),
        "nccl": version_of("nccl"),
        "frameworks": {
            name: (fw[0] if isinstance(fw, list) and fw else fw or {}).get("version") for name, fw in frameworks.items()
        },
    }


def drift(desired, gpu, installed):
    """List of human-readable differences between the desired stack and what the host reports."""
    if not desired:
        return []
    found = installed_versions(installed)
    driver = (gpu or {}).get("driver_version") or found["driver"]
    out = []
    if desired.get("driver") and not version_matches(desired["driver"], driver):
        out.append(f"driver {driver or 'absent'} ≠ {desired['driver']}")
    if installed is not None:
        wanted = desired.get("cuda")
        for cuda in wanted if isinstance(wanted, list) else [wanted] if wanted else []:
            if not any(version_matches(cuda, v) for v in found["cuda"]):
                out.append(f"CUDA {cuda} not installed (have {', '.join(found['cuda']) or 'none'})")
        for key, label in (("cudnn", "cuDNN"), ("nccl", "NCCL")):
            if desired.get(key) and not version_matches(desired[key], found[key]):
                out.append(f"{label} {found[key] or 'absent'} ≠ {desired[key]}")
        framework = desired.get("framework") or {}
        if framework.get("name") and framework.get("version"):
            have = found["frameworks"].get(framework["name"])
            if not version_matches(framework["version"], (have or "").split("+")[0]):
                out.append(f"{framework['name']} {have or 'absent'} ≠ {framework['version']}")
    return out


def host_row(name, hostvars):
    """One report row from a host's variables (facts from the cache, desired stack from inventory)."""
    facts = hostvars.get("ansible_facts") or {}
    gpu = facts.get("gpufleet_gpu")
    installed = facts.get("gpufleet_installed")
    if gpu is None:
        return {
            "host": name,
            "gathered": False,
            "gpus": "",
            "driver": "",
            "cuda": "",
            "health": "unknown",
            "findings": [],
            "drift": ["no GPU facts: run playbooks/facts.yml"],
        }
    gpus = gpu.get("gpus") or []
    models = {}
    for card in gpus:
        models[card.get("name") or "?"] = models.get(card.get("name") or "?", 0) + 1
    toolkits = installed_versions(installed)["cuda"] if installed else []
    return {
        "host": name,
        "gathered": True,
        "gpus": ", ".join(f"{n}x {m}" for m, n in models.items()) or "none",
        "driver": f"{gpu.get('driver_version') or '—'} ({gpu.get('driver_state', 'unknown')})",
        "cuda": " / ".join(filter(None, [gpu.get("cuda_driver_version"), ", ".join(toolkits)])) or "—",
        "health": gpu.get("health_status") or "unknown",
        "findings": gpu.get("health") or [],
        "drift": outcome_notes(facts) + drift(hostvars.get("gpufleet_stack"), gpu, installed),
    }


def outcome_notes(facts):
    """What the last site.yml verification or upgrade.yml said about the host, when it went wrong."""
    notes = []
    verify = facts.get("gpufleet_verify") or {}
    if verify.get("status") == "failed":
        notes.append("verification failed: " + "; ".join(verify.get("failures") or ["(no reason recorded)"]))
    upgrade = facts.get("gpufleet_upgrade") or {}
    if upgrade.get("status") == "failed":
        notes.append(f"upgrade failed at {upgrade.get('step', '?')}: {upgrade.get('message', '')}".rstrip(": "))
    return notes


def summary(rows):
    return {
        "hosts": len(rows),
        "critical": sum(r["health"] == "critical" for r in rows),
        "warning": sum(r["health"] == "warning" for r in rows),
        "drifted": sum(bool(r["drift"]) for r in rows),
        "ok": sum(r["health"] == "ok" and not r["drift"] for r in rows),
    }


def _finding_text(f):
    where = f"GPU {f['gpu']}: " if f.get("gpu") is not None else ""
    limit = f" (threshold {f['threshold']})" if f.get("threshold") is not None else ""
    value = f" = {f['value']}" if f.get("value") is not None else ""
    return f"{f.get('severity', '?')}: {where}{f.get('what', '?')}{value}{limit}"


def render_markdown(rows, generated):
    s = summary(rows)
    lines = [
        "# GPU fleet report",
        "",
        f"Generated {generated}. {s['hosts']} hosts: {s['ok']} ok, {s['critical']} critical, "
        f"{s['warning']} warning, {s['drifted']} drifted from the desired stack.",
        "",
        "| Host | GPUs | Driver | CUDA (driver / toolkits) | Health | Drift |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        cells = [r["host"], r["gpus"], r["driver"], r["cuda"], r["health"], "; ".join(r["drift"]) or "none"]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    for r in rows:
        if r["findings"]:
            lines += ["", f"## {r['host']}", ""] + [f"- {_finding_text(f)}" for f in r["findings"]]
    return "\n".join(lines) + "\n"


CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#1d2433}
h1{font-size:1.5em}table{border-collapse:collapse;width:100%}
th,td{border:1px solid #d0d5dd;padding:.4em .6em;text-align:left;vertical-align:top}
th{background:#f2f4f7}.badge{padding:.1em .5em;border-radius:.8em;font-weight:600}
.ok{background:#d1fadf;color:#05603a}.warning{background:#fef0c7;color:#93370d}
.critical{background:#fee4e2;color:#912018}.unknown{background:#eaecf0;color:#344054}
.cards span{display:inline-block;margin-right:1.5em;font-size:1.1em}ul{margin:.2em 0;padding-left:1.2em}
td:nth-child(-n+4){white-space:nowrap}td:first-child{font-weight:600}@page{size:A4 landscape;margin:1cm}
"""


def render_html(rows, generated):
    e = html.escape
    s = summary(rows)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>GPU fleet report</title>',
        f"<style>{CSS}</style></head><body>",
        "<h1>GPU fleet report</h1>",
        f"<p>Generated {e(generated)}.</p>",
        '<p class="cards">'
        + "".join(
            f'<span id="count-{k}">{e(label)}: <b>{s[k]}</b></span>'
            for k, label in (
                ("hosts", "Hosts"),
                ("ok", "OK"),
                ("critical", "Critical"),
                ("warning", "Warning"),
                ("drifted", "Drifted"),
            )
        )
        + "</p>",
        "<table><thead><tr><th>Host</th><th>GPUs</th><th>Driver</th><th>CUDA (driver / toolkits)</th>"
        "<th>Health</th><th>Drift from desired stack</th></tr></thead><tbody>",
    ]
    for r in rows:
        findings = "".join(f"<li>{e(_finding_text(f))}</li>" for f in r["findings"])
        drift_cell = "".join(f"<li>{e(d)}</li>" for d in r["drift"])
        out.append(
            f'<tr id="host-{e(r["host"])}"><td>{e(r["host"])}</td><td>{e(r["gpus"])}</td><td>{e(r["driver"])}</td>'
            f'<td>{e(r["cuda"])}</td><td><span class="badge {e(r["health"])}">{e(r["health"])}</span>'
            f"{'<ul>' + findings + '</ul>' if findings else ''}</td>"
            f"<td>{'<ul>' + drift_cell + '</ul>' if drift_cell else 'none'}</td></tr>"
        )
    out.append("</tbody></table></body></html>")
    return "\n".join(out) + "\n"


def build_rows(hostvars_by_host):
    """Rows sorted worst first (critical, then drifted), then by host name."""
    rows = [host_row(name, hv) for name, hv in hostvars_by_host.items()]
    return sorted(rows, key=lambda r: (-HEALTH_ORDER.get(r["health"], 1), not r["drift"], r["host"]))
