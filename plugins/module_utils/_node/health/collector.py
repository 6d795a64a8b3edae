# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU health collector a systemd timer runs on each node (roles/gpu_monitoring): the thin I/O layer.

One run: gather GPU facts with gpu_facts' own code (gpu/gather), read the installed stack (cached until dpkg's
status or a Python environment changes), write node_exporter's textfile atomically, then, when enabled, the health
loop's Slurm step (loop.decide). The decisions and the rendering are pure functions elsewhere; this file
runs commands and writes files. The role installs this module and what it imports under
/usr/local/lib/gpufleet/health, so the node runs the same code the collection tests.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import time

from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.gather import gather
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.readers import kernel_log_reader, modinfo_reader
from ansible_collections.gpufleet.stack.plugins.module_utils._node.health import loop
from ansible_collections.gpufleet.stack.plugins.module_utils._node.health.metrics import render
from ansible_collections.gpufleet.stack.plugins.module_utils._node.slurm.scontrol import parse_node
from ansible_collections.gpufleet.stack.plugins.module_utils._node.stack.gather import gather as gather_installed
from ansible_collections.gpufleet.stack.plugins.module_utils._node.stack.gather import scanner_for

DEFAULTS = {
    "textfile_dir": "/var/lib/prometheus/node-exporter",
    "textfile_name": "gpufleet_gpu.prom",
    "state_dir": "/var/lib/gpufleet/health",
    "temperature_threshold": 85,
    "kernel_log": True,
    "python_envs": [],
    "slurm_drain": False,
    "slurm_node": "",
    "drain_ignore": [],
    "dpkg_status": "/var/lib/dpkg/status",
}


class Host:
    """The two methods of AnsibleModule that gpu_facts' readers and the stack scanner use, on subprocess."""

    def get_bin_path(self, name, opt_dirs=None):
        return shutil.which(
            name, path=os.pathsep.join([os.environ.get("PATH", ""), *(opt_dirs or ["/usr/sbin", "/sbin"])])
        )

    def run_command(self, argv, check_rc=False):
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return 127, "", str(exc)
        return proc.returncode, proc.stdout, proc.stderr


def write_atomic(path, text):
    """Write then rename, so node_exporter never reads half a file (its textfile collector's documented rule)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


XID_MARK = "NVRM: Xid"


def remembered_kernel_log(read, state_dir, boot_id_path="/proc/sys/kernel/random/boot_id"):
    """The kernel log reader, with every Xid line seen since this boot kept in STATE_DIR/xid-lines.json: the ring
    buffer wraps on a busy node, and an Xid 79 that scrolled out must not let the health loop resume the node. A
    new boot starts afresh; an admin who has dealt with the GPU acknowledges by deleting the file."""
    path = os.path.join(state_dir, "xid-lines.json")

    def load(name):
        try:
            with open(name, encoding="utf-8") as handle:
                return handle.read()
        except OSError:
            return ""

    def read_all():
        lines, source, note = read()
        boot = load(boot_id_path).strip()
        try:
            saved = json.loads(load(path) or "{}")
        except ValueError:
            saved = {}
        kept = saved.get("lines", []) if isinstance(saved, dict) and saved.get("boot_id") == boot else []
        new = [line for line in lines or [] if XID_MARK in line and line not in kept]
        if new:
            write_atomic(path, json.dumps({"boot_id": boot, "lines": kept + new}))
        if lines is None and not kept:
            return None, source, note
        return kept + [line for line in lines or [] if line not in kept], source, note

    return read_all


def stack_key(config):
    """What the installed stack depends on: dpkg's database and each Python environment's site-packages."""
    sites = sorted(
        p for env in config["python_envs"] for p in glob.glob(os.path.join(env, "lib", "python3*", "site-packages"))
    )
    stamps = []
    for path in [config["dpkg_status"], *sites]:
        try:
            stamps.append([path, os.stat(path).st_mtime_ns])
        except OSError:
            stamps.append([path, None])
    return {"stamps": stamps, "python_envs": config["python_envs"]}


def installed_stack(host, config):
    """gpufleet_installed, from the cache when nothing it depends on changed since it was read (dpkg-query and the
    file scans are most of a run's CPU otherwise)."""
    cache = os.path.join(config["state_dir"], "stack.json")
    key = stack_key(config)
    try:
        with open(cache, encoding="utf-8") as handle:
            cached = json.load(handle)
        if cached.get("key") == key:
            return cached["installed"]
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    installed = gather_installed(scanner_for(host), config["python_envs"])
    write_atomic(cache, json.dumps({"key": key, "installed": installed}))
    return installed


def slurm_step(host, config, findings):
    """Read the node in Slurm, decide, act. -> (record, error or None)."""
    node_name = config["slurm_node"] or os.uname().nodename.split(".")[0]
    rc, out, err = host.run_command(["scontrol", "show", "node", node_name])
    if rc != 0:
        return {"node": node_name}, f"scontrol show node {node_name} exited {rc}: {(err or out).strip()[:300]}"
    node = parse_node(out)
    decision = loop.decide(node, findings, ignore=config["drain_ignore"])
    record = dict(decision, node=node_name, state_before=node["state"])
    argv = loop.scontrol_argv(node_name, decision)
    if argv:
        rc, out, err = host.run_command(argv)
        if rc != 0:
            record["drained_by_us"] = False  # the change did not happen
            return record, f"{' '.join(argv[:3])} exited {rc}: {(err or out).strip()[:300]}"
    return record, None


def load_config(path):
    config = dict(DEFAULTS)
    if path:
        with open(path, encoding="utf-8") as handle:
            config.update(json.load(handle))
    return config


def run(config, host=None, clock=time.time):
    """One collector run. -> (exit status, summary line)."""
    host = host or Host()
    started, monotonic = clock(), time.monotonic()
    for directory in (config["state_dir"], config["textfile_dir"]):
        os.makedirs(directory, exist_ok=True)
    params = {"temperature_threshold": config["temperature_threshold"], "kernel_log": config["kernel_log"]}
    reader = remembered_kernel_log(kernel_log_reader(host), config["state_dir"])
    facts = gather(dict(params, modinfo=modinfo_reader(host)), reader)
    installed = installed_stack(host, config)
    slurm, error = (None, None)
    if config["slurm_drain"]:
        slurm, error = slurm_step(host, config, facts["health"])
    collector = {"timestamp": round(started, 3), "duration_s": round(time.monotonic() - monotonic, 4), "slurm": slurm}
    write_atomic(os.path.join(config["textfile_dir"], config["textfile_name"]), render(facts, installed, collector))
    state = {"collector": collector, "health_status": facts["health_status"], "health": facts["health"], "error": error}
    write_atomic(os.path.join(config["state_dir"], "last.json"), json.dumps(state, indent=1, default=str))
    counts = {s: sum(f["severity"] == s for f in facts["health"]) for s in ("critical", "warning")}
    summary = f"health {facts['health_status']}: {counts['critical']} critical, {counts['warning']} warning"
    if slurm:
        summary += f"; slurm {slurm['node']}: {slurm.get('action', 'unknown')} ({slurm.get('why', '')})"
    if error:
        summary += f"; error: {error}"
    return (1 if error else 0), summary
