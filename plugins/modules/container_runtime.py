#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: container_runtime
short_description: The nvidia runtime merged into container engines' configs, and the CDI spec, by nvidia-ctk
version_added: "0.1.0"
description:
  - For each engine of O(engines), asks C(nvidia-ctk runtime configure --runtime=<engine> --config=<file> --dry-run)
    (NVIDIA's documented merge, which keeps every other key of the file) for the merged file, and writes it only when
    it differs from the file, atomically, keeping the file's mode (a new file is C(0644) in a C(0755) directory), with
    a backup of the old file beside it. Docker's C(daemon.json) must parse as JSON before it replaces the old one.
  - When O(cdi) and one of O(driver_paths) exists (a loaded driver, since C(nvidia-ctk cdi generate) needs NVML), writes
    C(nvidia-ctk cdi generate)'s spec to O(cdi_spec) when it differs; otherwise says why not in RV(cdi).
  - NVIDIA's toolkit from 1.18.0 ships its own C(nvidia-cdi-refresh) units, enabled by the package, which write the
    spec to C(/var/run/cdi/nvidia.yaml); CDI prefers that directory to C(/etc/cdi) for the same devices, so two specs
    would exist and the one this module writes would be shadowed. Where their environment file O(cdi_refresh_env)
    exists and O(cdi) is true, its C(NVIDIA_CTK_CDI_OUTPUT_FILE_PATH) is set to O(cdi_spec) (the file's documented
    override), so NVIDIA's units regenerate the one spec (at boot, after a driver or toolkit change) where this module
    writes it, and a spec they wrote earlier at O(cdi_refresh_spec) is removed.
  - One module run for every engine and the spec; C(--output) would rewrite the files (and report a change) on every
    run, so nvidia-ctk only prints and the module compares.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  engines:
    description:
      - "Engine to config file: C(docker: /etc/docker/daemon.json), C(containerd: /etc/containerd/config.toml)."
    type: dict
    required: true
  default_runtime:
    description: Make C(nvidia) the engines' default runtime (C(--set-as-default)); false leaves the default as it is.
    type: bool
    default: false
  ctk:
    description: Path of C(nvidia-ctk).
    type: path
    default: /usr/bin/nvidia-ctk
  cdi:
    description: Write the CDI spec when a driver is loaded.
    type: bool
    default: true
  cdi_spec:
    description: Where the CDI spec goes.
    type: path
    default: /etc/cdi/nvidia.yaml
  cdi_refresh_env:
    description:
      - The environment file of NVIDIA's C(nvidia-cdi-refresh.service) (toolkit 1.18.0 and later).
      - Empty leaves it alone.
    type: path
    default: /etc/nvidia-container-toolkit/nvidia-cdi-refresh.env
  cdi_refresh_spec:
    description: Where C(nvidia-cdi-refresh.service) writes the spec by default.
    type: path
    default: /var/run/cdi/nvidia.yaml
  driver_paths:
    description: Paths a loaded NVIDIA driver leaves; any one present means loaded.
    type: list
    elements: path
    default: [/dev/nvidiactl, /proc/driver/nvidia]
  dev_char_rule:
    description:
      - NVIDIA's udev rule that runs C(nvidia-ctk system create-dev-char-symlinks --create-all) when the driver binds
        at boot, so a C(systemctl daemon-reload) does not cut running containers off their GPUs
        (U(https://github.com/NVIDIA/nvidia-container-toolkit/issues/48)). With a loaded driver the C(/dev/char) links
        are also made now. Empty leaves both alone.
    type: path
    default: /lib/udev/rules.d/71-nvidia-dev-char.rules
extends_documentation_fragment:
  - gpufleet.stack.attributes
attributes:
  check_mode:
    support: full
    details: >-
      Runs nvidia-ctk (it only prints) and reports what would change; where nvidia-ctk is not installed yet (its
      install is itself only predicted) every config is reported as changing.
  diff_mode:
    support: full
  platform:
    platforms: posix
seealso:
  - module: gpufleet.stack.nvidia_packages
"""

EXAMPLES = r"""
- name: Merge the nvidia runtime into Docker and containerd, CDI spec when a driver is loaded
  gpufleet.stack.container_runtime:
    engines:
      docker: /etc/docker/daemon.json
      containerd: /etc/containerd/config.toml
  register: runtime
  notify: restart the engines in runtime.changed_engines
"""

RETURN = r"""
configs:
  description:
    - Each engine's config (and the udev rule, as engine C(udev)), with whether it changed and where the old file was
      saved.
  returned: always
  type: list
  elements: dict
  sample: [{"engine": "docker", "path": "/etc/docker/daemon.json", "changed": true, "backup": ""}]
changed_engines:
  description: The engines whose config changed (or would), for restarting only those.
  returned: always
  type: list
  elements: str
changed_units:
  description: The systemd units of O(engines) whose config changed (or would), in the same order.
  returned: always
  type: list
  elements: str
  sample: [docker.service]
dev_char_links:
  description: The C(/dev/char) links made for the NVIDIA device nodes (would be, in check mode).
  returned: always
  type: list
  elements: str
cdi:
  description: >-
    C(path), C(generated) (whether a spec is written for a loaded driver), C(changed), C(reason), C(refresh) (NVIDIA's
    refresh units: C(env), C(changed), C(removed), the spec they had written elsewhere; empty without them).
  returned: always
  type: dict
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node.atomic import read, write
from ansible_collections.gpufleet.stack.plugins.module_utils._node.dev_char import UDEV_RULE, ensure_links


def cdi_decision(cdi, driver_paths, present):
    """(generate, reason): a spec only for a loaded driver (nvidia-ctk cdi generate asks NVML)."""
    if not cdi:
        return False, "container_toolkit_cdi is false"
    if present:
        return True, f"driver loaded ({', '.join(present)})"
    return False, (
        f"no NVIDIA driver loaded ({' and '.join(driver_paths)} absent): nvidia-ctk cdi generate needs NVML; "
        "run the role again once the driver is loaded"
    )


REFRESH_OUTPUT = "NVIDIA_CTK_CDI_OUTPUT_FILE_PATH"
UNITS = {"docker": "docker.service", "containerd": "containerd.service"}  # each engine's systemd unit


def refresh_env_text(current, spec):
    """NVIDIA's nvidia-cdi-refresh.env with exactly one active REFRESH_OUTPUT=spec: comments and other settings kept,
    an active assignment of it replaced in place (the first; later ones dropped), else the line appended."""
    lines, placed = [], False
    for line in current.splitlines():
        name = line.strip().removeprefix("export ").split("=", 1)[0].strip()
        if not line.lstrip().startswith("#") and name == REFRESH_OUTPUT:
            if not placed:
                lines.append(f"{REFRESH_OUTPUT}={spec}")
            placed = True
            continue
        lines.append(line)
    if not placed:
        lines.append(f"{REFRESH_OUTPUT}={spec}")
    return "\n".join(lines) + "\n"


class Files:
    """Writes what differs (not in check mode), keeping modes and backups, and collects the diffs."""

    def __init__(self, module):
        self.module, self.diffs = module, []

    def ensure(self, path, text, validate=None):
        data, mode = read(path)
        current = None if data is None else data.decode(errors="replace")
        if current == text:
            return False, ""
        if validate:
            validate(path, text)
        if self.module._diff:
            self.diffs.append({"before_header": path, "after_header": path, "before": current or "", "after": text})
        backup = ""
        if not self.module.check_mode:
            if current is not None:
                backup = self.module.backup_local(path)
            write(self.module, path, text, 0o644 if mode is None else mode)
        return True, backup


def ctk_text(module, argv):
    """nvidia-ctk's stdout, ending in one newline (what the file holds); a failure fails the module."""
    rc, out, err = module.run_command(argv)
    if rc != 0:
        module.fail_json(msg=f"{' '.join(argv)} failed ({rc}): {(err or out).strip()}", rc=rc)
    return out.rstrip("\r\n") + "\n"


def json_only(module):
    def validate(path, text):
        try:
            json.loads(text)
        except ValueError as err:
            module.fail_json(msg=f"nvidia-ctk's merge of {path} is not JSON ({err}); the file was left as it is")

    return validate


def one_spec(module, files, p):
    """NVIDIA's refresh units (toolkit 1.18+) write where cdi_spec is, and their earlier spec elsewhere goes."""
    data, _mode = read(p["cdi_refresh_env"])
    if data is None:  # an older toolkit: no refresh units
        return {}
    text = refresh_env_text(data.decode(errors="replace"), p["cdi_spec"])
    changed = files.ensure(p["cdi_refresh_env"], text)[0]
    stale = p["cdi_refresh_spec"]
    removed = [stale] if os.path.realpath(stale) != os.path.realpath(p["cdi_spec"]) and os.path.exists(stale) else []
    if removed and not module.check_mode:
        os.remove(stale)
    return {"env": p["cdi_refresh_env"], "changed": changed or bool(removed), "removed": removed}


def main():
    module = AnsibleModule(
        argument_spec={
            "engines": {"type": "dict", "required": True},
            "default_runtime": {"type": "bool", "default": False},
            "ctk": {"type": "path", "default": "/usr/bin/nvidia-ctk"},
            "cdi": {"type": "bool", "default": True},
            "cdi_spec": {"type": "path", "default": "/etc/cdi/nvidia.yaml"},
            "cdi_refresh_env": {"type": "path", "default": "/etc/nvidia-container-toolkit/nvidia-cdi-refresh.env"},
            "cdi_refresh_spec": {"type": "path", "default": "/var/run/cdi/nvidia.yaml"},
            "driver_paths": {"type": "list", "elements": "path", "default": ["/dev/nvidiactl", "/proc/driver/nvidia"]},
            "dev_char_rule": {"type": "path", "default": "/lib/udev/rules.d/71-nvidia-dev-char.rules"},
        },
        supports_check_mode=True,
    )
    p = module.params
    ctk_present = os.access(p["ctk"], os.X_OK)
    if not ctk_present and not module.check_mode:
        module.fail_json(msg=f"{p['ctk']} is not installed: install the NVIDIA Container Toolkit first")
    files, configs = Files(module), []
    for engine, path in p["engines"].items():
        if not ctk_present:  # check mode before the toolkit's install: that install is predicted, so is this
            configs.append({"engine": engine, "path": path, "changed": True, "backup": ""})
            continue
        argv = [p["ctk"], "runtime", "configure", f"--runtime={engine}", f"--config={path}", "--dry-run"]
        text = ctk_text(module, argv + (["--set-as-default"] if p["default_runtime"] else []))
        changed, backup = files.ensure(path, text, json_only(module) if engine == "docker" else None)
        configs.append({"engine": engine, "path": path, "changed": changed, "backup": backup})
    present = [path for path in p["driver_paths"] if os.path.exists(path)]
    links = []
    if p["dev_char_rule"]:
        rule_changed = files.ensure(p["dev_char_rule"], UDEV_RULE.replace("/usr/bin/nvidia-ctk", p["ctk"]))[0]
        links = ensure_links(check_mode=module.check_mode) if present else []
        configs.append({"engine": "udev", "path": p["dev_char_rule"], "changed": rule_changed, "backup": ""})
    generate, reason = cdi_decision(p["cdi"], p["driver_paths"], present)
    cdi = {"path": p["cdi_spec"], "generated": generate, "changed": False, "reason": reason}
    if generate and ctk_present:
        rc, out, err = module.run_command([p["ctk"], "cdi", "generate"])
        if rc == 0:
            cdi["changed"] = files.ensure(p["cdi_spec"], out.rstrip("\r\n") + "\n")[0]
        elif "failed to initialize NVML" in err + out:
            # The module loaded is not the installed driver's (an upgrade before its reboot: "Driver/library version
            # mismatch"), or NVML is otherwise unusable now: the spec follows once the driver is (the upgrade
            # playbook regenerates it after the reboot, and its readiness gate checks the spec's driver version).
            cdi.update(generated=False, reason=f"nvidia-ctk cdi generate could not use the driver now: {err.strip()}")
        else:
            module.fail_json(msg=f"{p['ctk']} cdi generate failed ({rc}): {(err or out).strip()}", rc=rc)
    cdi["refresh"] = one_spec(module, files, p) if p["cdi"] and p["cdi_refresh_env"] else {}
    changed_engines = [c["engine"] for c in configs if c["changed"] and c["engine"] in p["engines"]]
    module.exit_json(
        changed=any(c["changed"] for c in configs)
        or cdi["changed"]
        or bool(links)
        or bool(cdi["refresh"].get("changed")),
        configs=configs,
        changed_engines=changed_engines,
        changed_units=[UNITS[engine] for engine in changed_engines if engine in UNITS],
        dev_char_links=links,
        cdi=cdi,
        diff=files.diffs,
    )


if __name__ == "__main__":
    main()
