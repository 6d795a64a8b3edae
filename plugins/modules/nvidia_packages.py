#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_packages
short_description: Resolve, pin, install and hold one set of NVIDIA packages in one apt transaction
version_added: "0.1.0"
description:
  - The package engine every install role of the collection calls. Given a package set and a version request
    (exact C(570.133.20), branch C(570), series C(12.8), or a full Debian version C(570.133.20-1)), it reads what
    apt offers and what dpkg has, chooses the exact versions, writes an apt pin that makes them the candidates,
    installs and removes in one C(apt-get install) transaction, and holds every part of the set that is on the host.
  - An installed version that fits a branch or series request is kept, so a new build in the repository never moves
    a host by itself; an exact request moves every part of the set together, up or down.
  - The pin selects by source package where the set needs it (C(src:nvidia-graphics-drivers)), as NVIDIA's
    C(nvidia-driver-pinning-*) packages do, so parts pulled in by dependencies are pinned too.
  - After a failed transaction the parts on the host are held again, and the failure says what apt and dpkg said and
    which packages are left half-installed.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  name:
    description: The set's name; its pin is C(/etc/apt/preferences.d/gpufleet-<name>.pref).
    type: str
    required: true
  packages:
    description: Package names to install (no versions).
    type: list
    elements: str
    required: true
  version:
    description: The version request for O(reference).
    type: str
    required: true
  label:
    description:
      - How the user wrote the request, named in failure messages (C(nvidia_driver_version (gpufleet_stack.driver))).
    type: str
    default: version
  reference:
    description: The package whose offered versions the request is matched against; default the first of O(packages).
    type: str
  same_version:
    description:
      - V(true) installs every package at the reference's chosen version; V(false) gives each package the newest
        offered version of O(series) (CUDA's components have their own numbers, toolkit 12.8.1 and nvcc 12.8.93).
    type: bool
    default: true
  series:
    description: With O(same_version=false), the version prefix every package must match; default O(version).
    type: str
  revision:
    description:
      - A glob the chosen version's Debian revision must match (C(*+cuda12.8) for NCCL's builds for CUDA 12.8).
    type: str
    default: ""
  keep_installed:
    description: Keep an installed version that fits the request instead of the newest that fits.
    type: bool
    default: true
  pin:
    description:
      - apt preferences selectors the pin covers (C(src:nvidia-graphics-drivers), C(cuda-*-12-8)); empty writes no pin.
    type: list
    elements: str
    default: []
  pin_version:
    description: The version the pin names; default the chosen version (or C(<series>.*) with O(same_version=false)).
    type: str
  exclude_origins:
    description: Origins whose builds of the pinned packages are never installed (priority -1), e.g. C(Debian).
    type: list
    elements: str
    default: []
  lock_timeout:
    description:
      - Seconds apt waits for the package manager's lock (C(DPkg::Lock::Timeout)) when another apt, dpkg or
        unattended-upgrades holds it; then the module fails naming the process that holds it. 0 fails at once.
      - C(playbooks/site.yml) and C(playbooks/upgrade.yml) set it from C(gpufleet_apt_lock_timeout).
    type: int
    default: 120
  members:
    description:
      - Selectors of the set's other parts (pulled in by dependencies), held with it and moved with it when
        installed; C(src:GLOB) names a source package.
    type: list
    elements: str
    default: []
  remove:
    description:
      - Selectors of installed packages to release and remove in the same transaction (another flavour or branch);
        here C(re:REGEX) also selects the names a regular expression finds.
    type: list
    elements: str
    default: []
  include_urls:
    description:
      - Count only the versions apt offers from repository URLs containing one of these (none given means every
        repository).
    type: list
    elements: str
    default: []
  exclude_urls:
    description: Ignore the versions apt offers from repository URLs containing one of these.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - gpufleet.stack.attributes
attributes:
  check_mode:
    support: full
    details: Reports the versions it would choose and the transaction it would run; changes nothing.
  diff_mode:
    support: full
    details: Shows the set's package versions before and after (the pin file's text is not diffed).
  platform:
    platforms: debian
seealso:
  - module: ansible.builtin.apt
  - module: ansible.builtin.dpkg_selections
"""

EXAMPLES = r"""
- name: Driver 570.133.20, compute only, open kernel modules
  gpufleet.stack.nvidia_packages:
    name: nvidia-driver
    packages: [nvidia-driver-cuda, nvidia-kernel-open-dkms]
    version: "570.133.20"
    label: nvidia_driver_version
    pin: ["src:nvidia-graphics-drivers", "src:nvidia-open-gpu-kernel-modules"]
    members: ["src:nvidia-graphics-drivers", "src:nvidia-open-gpu-kernel-modules"]
    remove: [nvidia-kernel-dkms, "nvidia-driver-pinning-*"]
    exclude_origins: [Debian]

- name: CUDA 12.8, each part at its own 12.8.* version
  gpufleet.stack.nvidia_packages:
    name: cuda-12-8
    packages: [cuda-toolkit-12-8]
    version: "12.8"
    same_version: false
    pin: ["cuda-*-12-8"]
    members: ["cuda-*-12-8", "lib*-12-8"]
"""

RETURN = r"""
version:
  description: The reference package's chosen version.
  returned: success
  type: str
  sample: 570.133.20-1
reason:
  description: Why that version.
  returned: always
  type: str
  sample: 570.133.20-1 is the one offered that fits 570.133.20
versions:
  description: Each package to install and its chosen version.
  returned: success
  type: dict
  sample: {"nvidia-driver-cuda": "570.133.20-1"}
before:
  description: The set's packages on the host before, with their versions.
  returned: always
  type: dict
after:
  description: The set's packages on the host after, with their versions.
  returned: always
  type: dict
installed:
  description: The C(name=version) specs the transaction installed (or would install).
  returned: always
  type: list
  elements: str
removed:
  description: Packages the transaction removed (or would remove).
  returned: always
  type: list
  elements: str
held:
  description: Packages newly held.
  returned: always
  type: list
  elements: str
pin_file:
  description: The pin file's path.
  returned: always
  type: str
failed_packages:
  description: After a failed transaction, each part left not fully installed (C(name version status)).
  returned: failure
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node.apt import plan as ap
from ansible_collections.gpufleet.stack.plugins.module_utils._node.atomic import write

PIN_DIR = "/etc/apt/preferences.d"
APT_ENV = {"DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C"}


def read_dpkg(module):
    rc, out, err = module.run_command(["dpkg-query", "-W", "-f", ap.DPKG_FORMAT], environ_update=APT_ENV)
    if rc not in (0, 1):
        module.fail_json(msg=f"nvidia_packages: dpkg-query failed ({rc}): {err.strip()}")
    return ap.parse_dpkg(out)


def read_offers(module, names):
    rc, out, err = module.run_command(["apt-cache", "madison", *names], environ_update=APT_ENV)
    if rc != 0:
        module.fail_json(msg=f"nvidia_packages: apt-cache madison failed ({rc}): {err.strip()}")
    p = module.params
    return ap.offers_by_package(ap.parse_madison(out), p["include_urls"], p["exclude_urls"])


def write_pin(module, path, text):
    """True when the pin file changed (or would, in check mode)."""
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return False
    except FileNotFoundError:
        pass
    if not module.check_mode:
        write(module, path, text)
    return True


def hold(module, names):
    if names and not module.check_mode:
        rc, _out, err = module.run_command(["apt-mark", "hold", *names], environ_update=APT_ENV)
        if rc != 0:
            module.fail_json(msg=f"nvidia_packages: apt-mark hold {' '.join(names)} failed: {err.strip()}")
    return names


def set_versions(installed, names):
    return {n: installed[n]["version"] for n in sorted(names) if n in installed and installed[n]["present"]}


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "packages": {"type": "list", "elements": "str", "required": True},
            "version": {"type": "str", "required": True},
            "label": {"type": "str", "default": "version"},
            "reference": {"type": "str"},
            "same_version": {"type": "bool", "default": True},
            "series": {"type": "str"},
            "revision": {"type": "str", "default": ""},
            "keep_installed": {"type": "bool", "default": True},
            "pin": {"type": "list", "elements": "str", "default": []},
            "pin_version": {"type": "str"},
            "exclude_origins": {"type": "list", "elements": "str", "default": []},
            "lock_timeout": {"type": "int", "default": 120},
            "members": {"type": "list", "elements": "str", "default": []},
            "remove": {"type": "list", "elements": "str", "default": []},
            "include_urls": {"type": "list", "elements": "str", "default": []},
            "exclude_urls": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    p = module.params
    problem = ap.argument_problem(p)
    if problem:
        module.fail_json(msg=f"nvidia_packages: {problem}")
    reference = p["reference"] or p["packages"][0]
    pin_file = f"{PIN_DIR}/gpufleet-{p['name']}.pref"
    installed = read_dpkg(module)
    # The set as the host has it now: what to install and every installed member.
    scope = sorted(set(p["packages"]) | set(ap.members(installed, p["members"])))
    offers = read_offers(module, sorted(set(scope) | {reference}))
    result = {
        "pin_file": pin_file,
        "before": set_versions(installed, scope),
        "installed": [],
        "removed": [],
        "held": [],
    }

    if not offers.get(reference) and module.check_mode:
        # Check mode on a host that never fetched the repository's index: nothing can be resolved; a real run would.
        reason = (
            f"check mode: apt offers no {reference} yet (repository index not fetched); a real run would resolve "
            f"{p['label']} {p['version']}, pin, install and hold {', '.join(p['packages'])}"
        )
        module.exit_json(changed=True, reason=reason, after=result["before"], **result)
    decided = ap.plan(
        p["packages"],
        p["version"],
        offers,
        installed,
        reference=reference,
        same_version=p["same_version"],
        series=p["series"] or "",
        keep_installed=p["keep_installed"],
        revision=p["revision"],
        members_of=p["members"],
        remove=p["remove"],
    )
    if decided["missing"]:
        module.fail_json(
            msg=f"{p['label']} is {p['version']!r}, but the repositories this host uses cannot give "
            f"{'; '.join(decided['missing'])}. Choose a version they offer (apt-cache madison {reference}), or point "
            "gpufleet_nvidia_repo_url at a repository that has it",
            offered=offers.get(reference, []),
            **result,
        )
    result.update(version=decided["version"], reason=decided["reason"], versions=decided["versions"])
    changed = False
    diff = {"before": "", "after": ""}
    if p["pin"]:
        pin_version = p["pin_version"] or (
            decided["version"] if p["same_version"] else f"{p['series'] or p['version']}.*"
        )
        text = ap.pin_text(p["name"], p["pin"], pin_version, p["exclude_origins"])
        changed = write_pin(module, pin_file, text) or changed

    result["installed"], result["removed"] = decided["install"], decided["remove"]
    if decided["install"] or decided["remove"]:
        changed = True
        if not module.check_mode:
            argv = [
                "apt-get", "install", "-y", "-q", "--no-install-recommends", "--allow-downgrades",
                "--allow-change-held-packages", "-o", "Dpkg::Options::=--force-confdef", "-o",
                "Dpkg::Options::=--force-confold", "-o", f"DPkg::Lock::Timeout={p['lock_timeout']}",
                *decided["install"], *[f"{n}-" for n in decided["remove"]],
            ]  # fmt: skip
            rc, out, err = module.run_command(argv, environ_update=APT_ENV)
            busy = ap.lock_holder(out + err) if rc != 0 else None
            if busy:
                module.fail_json(
                    msg=f"{p['label']} {p['version']}: the package manager is busy, no package was installed or "
                    f"removed: {busy} (waited {p['lock_timeout']} s, gpufleet_apt_lock_timeout). Let it finish "
                    "(unattended-upgrades runs after boot and daily) and run again, or raise the wait",
                    lock_holder=busy,
                    **result,
                )
            if rc != 0:
                # Re-held after a failure: the set, and what was held among the packages it was to remove.
                held_before = [n for n in decided["remove"] if installed[n]["held"]]
                fail_after_transaction(module, out + err, scope + held_before, result)
    after = read_dpkg(module) if changed and not module.check_mode else installed
    if module.check_mode:
        result["held"] = ap.to_hold(installed, p["packages"], p["members"])
        result["after"] = {**result["before"], **decided["versions"]}
        for name in decided["remove"]:
            result["after"].pop(name, None)
    else:
        result["held"] = hold(module, ap.to_hold(after, p["packages"], p["members"]))
        result["after"] = set_versions(after, sorted(set(p["packages"]) | set(ap.members(after, p["members"]))))
    changed = changed or bool(result["held"])
    if module._diff:
        diff = {"before": fmt(result["before"]), "after": fmt(result["after"])}
    module.exit_json(changed=changed, diff=diff, **result)


def fmt(versions):
    return "".join(f"{n}={v}\n" for n, v in versions.items())


def fail_after_transaction(module, output, names, result):
    """Hold again whatever of the set dpkg has (apt released the holds for the transaction), then fail saying what
    apt said and what is left half-installed."""
    p = module.params
    after = read_dpkg(module)
    present = [n for n in names if after.get(n, {}).get("present")]
    still = [n for n in present if not after[n]["held"]]
    if still:
        module.run_command(["apt-mark", "hold", *still], environ_update=APT_ENV)
        after = read_dpkg(module)
    broken = ap.incomplete(after, present)
    module.fail_json(
        msg=f"{p['label']} {p['version']}: the apt transaction for {p['name']} failed. apt and dpkg said: "
        f"{' | '.join(ap.apt_errors(output)) or output.strip()[-600:]}. Not fully installed: "
        f"{', '.join(broken) or 'none'}. Held again: {', '.join(present) or 'none'}. To recover, request a version "
        "that installs and run again: the new pin replaces these packages",
        failed_packages=broken,
        after=set_versions(after, present),
        **{k: v for k, v in result.items() if k != "after"},
    )


if __name__ == "__main__":
    main()
