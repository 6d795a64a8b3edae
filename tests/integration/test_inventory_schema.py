r"""Mistyped and hostile inventory values through the real playbooks, against a host that cannot be reached
(_unreachable.py). Each bad value must stop the run on the controller (rc != 0, no UNREACHABLE: no host contacted)
with a message that names the variable as written, its value and the fix; each valid control case must get past
the checks and reach for the host (UNREACHABLE), so the table can fail both ways.

Values are raw YAML in the host's host_vars file, as a user writes them: `cuda: 12.10` is the number 12.1 before
Ansible sees it, `|` leaves a trailing newline. All cases run up front, three runs at a time. The bad values that
live in host_vars share a run per playbook: each is the host_vars of a host of its own (gpu-<case>), the check
reports every host's problems in one message, and each case is held to the lines that name its host (97 runs of
about two seconds each on the controller became 14). A value that stopped the run before the check, or a check that
stopped at its first bad host, would leave the other hosts' cases without their lines.
"""

from concurrent.futures import ThreadPoolExecutor

import pytest
from _unreachable import run

BASE = {"gpufleet_stack": {"driver": "570.133.20", "cuda": "12.8", "cudnn": "9.8.0", "nccl": "2.26.2"}}
NVIDIA_KEY = "EB693B3035CD5710E231E123A4B469963BF863CC"  # NVIDIA's Debian 12 CUDA key
STACK = '{driver: "570.133.20", cuda: "12.8", cudnn: "9.8.0", nccl: "2.26.2"'


def stack(more):
    """The valid stack with more keys (raw YAML flow text), as the whole gpufleet_stack of the host."""
    return f"gpufleet_stack: {STACK}, {more}}}\n"


def bad_stack(key, value):
    """The valid stack with one key replaced by raw YAML text."""
    keys = {"driver": '"570.133.20"', "cuda": '"12.8"', "cudnn": '"9.8.0"', "nccl": '"2.26.2"'}
    keys[key] = value
    return "gpufleet_stack: {" + ", ".join(f"{k}: {v}" for k, v in keys.items()) + "}\n"


# (id, playbook, host_vars YAML, extra ansible-playbook arguments, fragments the output must hold)
BAD = [
    # --- gpufleet_stack and each of its keys
    ("stack-null", "site.yml", "gpufleet_stack:\n", [], ["gpufleet_stack is null", "give the stack the host must run"]),
    ("stack-empty", "site.yml", "gpufleet_stack: {}\n", [], ["gpufleet_stack is {}: empty", "give the stack"]),
    ("stack-string", "site.yml", 'gpufleet_stack: "570"\n', [], ['gpufleet_stack is "570": not a dictionary']),
    ("stack-list", "site.yml", "gpufleet_stack: [driver]\n", [], ['gpufleet_stack is ["driver"]: not a dictionary']),
    (
        "cuda-unquoted-12.10",
        "site.yml",
        bad_stack("cuda", "12.10"),
        [],
        ["gpufleet_stack.cuda is the YAML number 12.1", "quote it"],
    ),
    (
        "driver-float",
        "site.yml",
        bad_stack("driver", "570.133"),
        [],
        ["gpufleet_stack.driver is the YAML number 570.133", "quote it"],
    ),
    (
        "driver-int",
        "site.yml",
        bad_stack("driver", "570"),
        [],
        ["gpufleet_stack.driver is the YAML number 570", "quote it"],
    ),
    (
        "driver-block-newline",
        "site.yml",
        "gpufleet_stack:\n  driver: |\n    570.133.20\n  cuda: '12.8'\n  cudnn: '9.8.0'\n  nccl: '2.26.2'\n",
        [],
        ['gpufleet_stack.driver is "570.133.20\\n"', "control character"],
    ),
    (
        "driver-word",
        "site.yml",
        bad_stack("driver", "latest"),
        [],
        ['gpufleet_stack.driver is "latest"', '"570" (a branch)'],
    ),
    (
        "key-typo-cudaa",
        "site.yml",
        stack('cudaa: "12.8"'),
        [],
        ["gpufleet_stack.cudaa is not a key of gpufleet_stack", "did you mean cuda?"],
    ),
    (
        "flavour-typo",
        "site.yml",
        stack("driver_flavor: opne"),
        [],
        ['gpufleet_stack.driver_flavor is "opne"', "did you mean open?", '"proprietary"'],
    ),
    (
        "cuda-duplicate",
        "site.yml",
        bad_stack("cuda", '["12.8", "12.8"]'),
        [],
        ['gpufleet_stack.cuda is ["12.8", "12.8"]', "more than once", "list each once"],
    ),
    ("cuda-duplicate-xy", "site.yml", bad_stack("cuda", '["12.8", "12.8.1"]'), [], ['lists "12.8" more than once']),
    ("cuda-empty-list", "site.yml", bad_stack("cuda", "[]"), [], ["gpufleet_stack.cuda is []: empty"]),
    ("cuda-major-only", "site.yml", bad_stack("cuda", '"12"'), [], ['gpufleet_stack.cuda is "12"', '"12.8.1"']),
    ("cudnn-major-only", "site.yml", bad_stack("cudnn", '"9"'), [], ['gpufleet_stack.cudnn is "9"', '"9.8.0.87"']),
    (
        "nccl-package-form",
        "site.yml",
        bad_stack("nccl", '"2.26.2-1+cuda12.8"'),
        [],
        ['gpufleet_stack.nccl is "2.26.2-1+cuda12.8"', "CUDA build follows gpufleet_stack.cuda"],
    ),
    (
        "nccl-newline",
        "site.yml",
        bad_stack("nccl", '"2.26.2\\n"'),
        [],
        ['gpufleet_stack.nccl is "2.26.2\\n"', "control character"],
    ),
    (
        "ctk-short",
        "site.yml",
        stack('container_toolkit: "1.17"'),
        [],
        ['gpufleet_stack.container_toolkit is "1.17"', '"1.19.1"'],
    ),
    (
        "ctk-number",
        "site.yml",
        stack("container_toolkit: 1.17"),
        [],
        ["gpufleet_stack.container_toolkit is the YAML number 1.17", "quote it"],
    ),
    (
        "framework-shorthand",
        "site.yml",
        stack('framework: "torch=2.7.1"'),
        [],
        ['gpufleet_stack.framework is "torch=2.7.1"', "NAME==VERSION", "torch==2.7.1"],
    ),
    (
        "framework-no-version",
        "site.yml",
        stack("framework: {name: torch}"),
        [],
        ["gpufleet_stack.framework has no version", "add gpufleet_stack.framework.version"],
    ),
    (
        "framework-version-number",
        "site.yml",
        stack("framework: {name: torch, version: 2.7}"),
        [],
        ["gpufleet_stack.framework.version is the YAML number 2.7", "quote it"],
    ),
    (
        "framework-key-typo",
        "site.yml",
        stack('framework: {name: torch, verison: "2.7.1"}'),
        [],
        ["gpufleet_stack.framework.verison is not a key", "did you mean version?"],
    ),
    ("horovod-short", "site.yml", stack('horovod: "0.28"'), [], ['gpufleet_stack.horovod is "0.28"', '"0.28.1"']),
    (
        "fabricmanager-word",
        "site.yml",
        stack('fabricmanager: "same"'),
        [],
        ['gpufleet_stack.fabricmanager is "same"', '"570.133.20"'],
    ),
    (
        "stack-impossible",
        "site.yml",
        bad_stack("cuda", '"13.0"'),
        [],
        ["incompatibilities in gpufleet_stack", "CUDA toolkit 13.0 needs driver >= 580.65.06"],
    ),
    (
        "horovod-without-framework",
        "site.yml",
        "gpufleet_components: [driver, cuda, cudnn, nccl, horovod]\n",
        [],
        ["gpufleet_stack has no framework", "leave horovod out of gpufleet_components"],
    ),
    (
        "stack-without-driver",
        "site.yml",
        'gpufleet_stack: {cuda: "12.8", cudnn: "9.8.0", nccl: "2.26.2"}\n',
        [],
        ["gpufleet_stack has no driver", "add gpufleet_stack.driver"],
    ),
    # --- which hosts
    (
        "hosts-pattern-typo",
        "site.yml",
        "",
        ["-e", "gpufleet_hosts=gpux"],
        ['gpufleet_hosts is "gpux", which names no host of the inventory', "give a host pattern"],
    ),
    (
        "hosts-pattern-newline",
        "site.yml",
        "",
        ["-e", '{"gpufleet_hosts": "gpu-x\\n"}'],
        ['gpufleet_hosts is "gpu-x\\n"', "control character"],
    ),
    (
        "facts-hosts-typo",
        "playbooks/facts.yml",
        "",
        ["-e", "gpufleet_facts_hosts=gpu_nodez"],
        ['gpufleet_facts_hosts is "gpu_nodez", which names no host'],
    ),
    # --- gpufleet_components
    (
        "component-typo",
        "site.yml",
        "gpufleet_components: [driver, cdua]\n",
        [],
        ['gpufleet_components[1] is "cdua"', "did you mean cuda?", '"container_toolkit"'],
    ),
    (
        "components-string",
        "site.yml",
        "gpufleet_components: driver\n",
        [],
        ['gpufleet_components is "driver": not a list'],
    ),
    ("components-empty", "site.yml", "gpufleet_components: []\n", [], ["gpufleet_components is []: empty"]),
    (
        "components-duplicate",
        "site.yml",
        "gpufleet_components: [driver, driver]\n",
        [],
        ['gpufleet_components is ["driver", "driver"]', "more than once"],
    ),
    # --- scheduler, channel, strictness, report
    (
        "scheduler-typo",
        "site.yml",
        "gpufleet_scheduler: slrum\n",
        [],
        ['gpufleet_scheduler is "slrum"', "did you mean slurm?"],
    ),
    (
        "channel-typo",
        "site.yml",
        "gpufleet_nvidia_channel: netwrok\n",
        [],
        ['gpufleet_nvidia_channel is "netwrok"', "did you mean network?", '"distro"'],
    ),
    (
        "strict-word",
        "site.yml",
        "gpufleet_stack_strict: maybe\n",
        [],
        ['gpufleet_stack_strict is "maybe": not a boolean', "use true or false"],
    ),
    (
        "report-dir-newline",
        "site.yml",
        "",
        ["-e", '{"gpufleet_report_dir": "reports\\nx"}'],
        ['gpufleet_report_dir is "reports\\nx"', "control character"],
    ),
    # --- repository URL and key: nothing unchecked reaches an apt source
    (
        "repo-url-newline-trusted",
        "site.yml",
        'gpufleet_nvidia_repo_url: "http://mirror.example.org/nvidia\\nTrusted: yes"\n',
        [],
        [
            'gpufleet_nvidia_repo_url is "http://mirror.example.org/nvidia\\nTrusted: yes"',
            "control character",
            "mirror laid out like them",
        ],
    ),
    (
        "repo-url-space-second-uri",
        "site.yml",
        'gpufleet_nvidia_repo_url: "http://mirror.example.org/nvidia http://evil.example.org"\n',
        [],
        ["gpufleet_nvidia_repo_url is", "second URI"],
    ),
    (
        "repo-url-block-scalar",
        "site.yml",
        "gpufleet_nvidia_repo_url: |\n  http://mirror.example.org/nvidia\n",
        [],
        ['gpufleet_nvidia_repo_url is "http://mirror.example.org/nvidia\\n"', "control character"],
    ),
    (
        "repo-url-ftp",
        "site.yml",
        "gpufleet_nvidia_repo_url: ftp://mirror.example.org/nvidia\n",
        [],
        ['gpufleet_nvidia_repo_url is "ftp://mirror.example.org/nvidia"', "scheme must be http, https or file"],
    ),
    (
        "repo-url-no-scheme",
        "site.yml",
        "gpufleet_nvidia_repo_url: mirror.example.org/nvidia\n",
        [],
        ['gpufleet_nvidia_repo_url is "mirror.example.org/nvidia"', "scheme must be"],
    ),
    (
        "repo-url-no-host",
        "site.yml",
        "gpufleet_nvidia_repo_url: 'http:///nvidia'\n",
        [],
        ['gpufleet_nvidia_repo_url is "http:///nvidia"', "names no host"],
    ),
    (
        "repo-url-number",
        "site.yml",
        "gpufleet_nvidia_repo_url: 8790\n",
        [],
        ["gpufleet_nvidia_repo_url is the YAML number 8790", "not a URL"],
    ),
    (
        "repo-url-query",
        "site.yml",
        "gpufleet_nvidia_repo_url: 'http://mirror.example.org/nvidia?x=1'\n",
        [],
        ["gpufleet_nvidia_repo_url is", "no ?query"],
    ),
    (
        "repo-url-credentials-hidden",
        "site.yml",
        'gpufleet_nvidia_repo_url: "https://ci:hunter2@mirror.example.org/nvidia\\n"\n',
        [],
        ['"https://ci:***@mirror.example.org/nvidia\\n"', "control character"],
    ),
    (
        "repo-url-password-with-slash",
        "site.yml",
        'gpufleet_nvidia_repo_url: "https://ci:hunter2/x@mirror.example.org/nvidia\\n"\n',
        [],
        ['"https://ci:***@mirror.example.org/nvidia\\n"', "control character"],
    ),
    (
        "repo-url-undefined",
        "site.yml",
        'gpufleet_nvidia_repo_url: "{{ site_mirror_base }}/nvidia"\n',
        [],
        ["gpufleet_nvidia_repo_url cannot be evaluated", "site_mirror_base"],
    ),
    (
        "repo-key-string",
        "site.yml",
        "gpufleet_nvidia_repo_key: https://mirror.example.org/key.asc\n",
        [],
        ['gpufleet_nvidia_repo_key is "https://mirror.example.org/key.asc": not a dictionary'],
    ),
    (
        "repo-key-no-fingerprint",
        "site.yml",
        "gpufleet_nvidia_repo_key: {url: 'https://mirror.example.org/key.asc'}\n",
        [],
        ["gpufleet_nvidia_repo_key has no fingerprint", "add gpufleet_nvidia_repo_key.fingerprint"],
    ),
    (
        "repo-key-short-id",
        "site.yml",
        "gpufleet_nvidia_repo_key: {url: 'https://m.example.org/k.asc', fingerprint: 3BF863CC}\n",
        [],
        ['gpufleet_nvidia_repo_key.fingerprint is "3BF863CC"', "40 hex digits"],
    ),
    (
        "repo-key-typo",
        "site.yml",
        f"gpufleet_nvidia_repo_key: {{url: 'https://m.example.org/k.asc', fingerprnt: {NVIDIA_KEY}}}\n",
        [],
        ["gpufleet_nvidia_repo_key.fingerprnt is not a key", "did you mean fingerprint?"],
    ),
    (
        "repo-key-url-newline",
        "site.yml",
        f'gpufleet_nvidia_repo_key: {{url: "https://m.example.org/k.asc\\n", fingerprint: {NVIDIA_KEY}}}\n',
        [],
        ['gpufleet_nvidia_repo_key.url is "https://m.example.org/k.asc\\n"', "control character"],
    ),
    # --- compatibility matrix rows
    (
        "matrix-extra-dict",
        "site.yml",
        "gpufleet_compat_matrix_extra: {id: x}\n",
        [],
        ['gpufleet_compat_matrix_extra is {"id": "x"}: not a list of rows', "data/compat_matrix.yml"],
    ),
    (
        "matrix-extra-row-no-id",
        "site.yml",
        "gpufleet_compat_matrix_extra: [{kind: branch, branch: '600'}]\n",
        [],
        ["gpufleet_compat_matrix_extra: matrix_extra: every row needs an `id`"],
    ),
    # --- the upgrade's own variables (upgrade.yml)
    (
        "serial-zero",
        "playbooks/upgrade.yml",
        "",
        ["-e", "gpufleet_upgrade_serial=0"],
        ['gpufleet_upgrade_serial is "0"', "whole fleet (or none) in one batch", '[1, "10%", "25%"]'],
    ),
    (
        "serial-negative",
        "playbooks/upgrade.yml",
        "",
        ["-e", "gpufleet_upgrade_serial=-1"],
        ['gpufleet_upgrade_serial is "-1"', "whole fleet"],
    ),
    (
        "serial-150-percent",
        "playbooks/upgrade.yml",
        "",
        ["-e", "gpufleet_upgrade_serial=150%"],
        ['gpufleet_upgrade_serial is "150%"', "whole fleet"],
    ),
    (
        "serial-abc",
        "playbooks/upgrade.yml",
        "",
        ["-e", "gpufleet_upgrade_serial=abc"],
        ['gpufleet_upgrade_serial is "abc"', "not a host count or a percentage"],
    ),
    (
        "serial-list-zero-percent",
        "playbooks/upgrade.yml",
        "gpufleet_upgrade_serial: [1, '0%']\n",
        [],
        ['gpufleet_upgrade_serial is [1, "0%"]', '"0%" would put'],
    ),
    (
        "serial-empty-list",
        "playbooks/upgrade.yml",
        "gpufleet_upgrade_serial: []\n",
        [],
        ["gpufleet_upgrade_serial is []: empty"],
    ),
    (
        "max-fail-over-100",
        "playbooks/upgrade.yml",
        "gpufleet_upgrade_max_fail_percentage: 150\n",
        [],
        ["gpufleet_upgrade_max_fail_percentage is the YAML number 150", "out of range (0 to 100)"],
    ),
    (
        "max-fail-word",
        "playbooks/upgrade.yml",
        "gpufleet_upgrade_max_fail_percentage: some\n",
        [],
        ['gpufleet_upgrade_max_fail_percentage is "some": not a whole number'],
    ),
    (
        "mode-typo",
        "playbooks/upgrade.yml",
        "",
        ["-e", "gpufleet_upgrade_mode=rollbak"],
        ['gpufleet_upgrade_mode is "rollbak"', "did you mean rollback?"],
    ),
    (
        "force-word",
        "playbooks/upgrade.yml",
        "",
        ["-e", "gpufleet_upgrade_force=sure"],
        ['gpufleet_upgrade_force is "sure": not a boolean'],
    ),
    (
        "reboot-ok-typo",
        "playbooks/upgrade.yml",
        "",
        ["-e", "gpufleet_upgrade_reboot_ok=ture"],
        ['gpufleet_upgrade_reboot_ok is "ture": not a boolean', "use true or false"],
    ),
    (
        "require-loaded-word",
        "playbooks/upgrade.yml",
        "gpufleet_upgrade_require_loaded: nope\n",
        [],
        ['gpufleet_upgrade_require_loaded is "nope": not a boolean'],
    ),
    (
        "drain-timeout-negative",
        "playbooks/upgrade.yml",
        "gpufleet_upgrade_drain_timeout: -5\n",
        [],
        ["gpufleet_upgrade_drain_timeout is the YAML number -5", "out of range", "seconds to wait"],
    ),
    (
        "stop-services-newline",
        "playbooks/upgrade.yml",
        'gpufleet_upgrade_stop_services: ["nvidia-persistenced.service\\n"]\n',
        [],
        ['gpufleet_upgrade_stop_services[0] is "nvidia-persistenced.service\\n"', "control character"],
    ),
    (
        "stop-services-string",
        "playbooks/upgrade.yml",
        "gpufleet_upgrade_stop_services: nvidia-persistenced.service\n",
        [],
        ['gpufleet_upgrade_stop_services is "nvidia-persistenced.service": not a list'],
    ),
    (
        "state-dir-relative",
        "playbooks/upgrade.yml",
        "gpufleet_upgrade_state_dir: var/lib/gpufleet\n",
        [],
        ['gpufleet_upgrade_state_dir is "var/lib/gpufleet": not an absolute path'],
    ),
    ("upgrade-stack-missing", "playbooks/upgrade.yml", "gpufleet_stack: null\n", [], ["gpufleet_stack is null"]),
    (
        "upgrade-cuda-unquoted",
        "playbooks/upgrade.yml",
        bad_stack("cuda", "12.10"),
        [],
        ["gpufleet_stack.cuda is the YAML number 12.1", "quote it"],
    ),
    # --- role variables set through inventory
    (
        "nccl-settings-newline",
        "site.yml",
        'nccl_settings: {NCCL_DEBUG: "WARN\\nNCCL_P2P_DISABLE=1"}\n',
        [],
        ['nccl_settings.NCCL_DEBUG is "WARN\\nNCCL_P2P_DISABLE=1"', "control character"],
    ),
    (
        "nccl-settings-lowercase-key",
        "site.yml",
        "nccl_settings: {nccl_debug: WARN}\n",
        [],
        ['nccl_settings has the key "nccl_debug"', "NCCL_* keys (upper case)"],
    ),
    (
        "nccl-settings-key-newline",
        "site.yml",
        'nccl_settings: {"NCCL_DEBUG\\n": WARN}\n',
        [],
        ['nccl_settings has the key "NCCL_DEBUG\\n"'],
    ),
    (
        "nccl-settings-boolean",
        "site.yml",
        "nccl_settings: {NCCL_IB_DISABLE: true}\n",
        [],
        [
            "nccl_settings.NCCL_IB_DISABLE is true: not a one-line string or number",
            'quote booleans (NCCL_IB_DISABLE: "1")',
        ],
    ),
    (
        "nccl-settings-list",
        "site.yml",
        "nccl_settings: [NCCL_DEBUG=WARN]\n",
        [],
        ['nccl_settings is ["NCCL_DEBUG=WARN"]: not a dictionary'],
    ),
    (
        "nccl-settings-typo",
        "site.yml",
        "nccl_setings: {NCCL_DEBUG: WARN}\n",
        [],
        ["nccl_setings is not a variable of this collection", "did you mean nccl_settings?"],
    ),
    (
        "driver-version-newline",
        "site.yml",
        'nvidia_driver_version: "570\\n"\n',
        [],
        ['nvidia_driver_version is "570\\n"', "control character"],
    ),
    (
        "driver-flavour-var-typo",
        "site.yml",
        "nvidia_driver_flavour: open\n",
        [],
        ["nvidia_driver_flavour is not a variable", "did you mean nvidia_driver_flavor?"],
    ),
    (
        "cuda-versions-number",
        "site.yml",
        "cuda_toolkit_versions: 12.10\n",
        [],
        ["cuda_toolkit_versions is the YAML number 12.1", "quote it"],
    ),
    (
        "ctk-runtime-unknown",
        "site.yml",
        "container_toolkit_runtimes: [docker, podman]\n",
        [],
        ['container_toolkit_runtimes[1] is "podman"', "docker"],
    ),
    (
        "cdi-spec-directory",
        "site.yml",
        "container_toolkit_cdi_spec: /etc/cdi/\n",
        [],
        ['container_toolkit_cdi_spec is "/etc/cdi/"', "names a directory"],
    ),
    (
        "pip-index-injection",
        "site.yml",
        'horovod_pip_index_url: "https://pypi.example.org/simple\\n--trusted-host evil"\n',
        [],
        ["horovod_pip_index_url is", "control character"],
    ),
    (
        "slurm-node-name-space",
        "site.yml",
        'node_drain_slurm_node_name: "gpu 01"\n',
        [],
        ['node_drain_slurm_node_name is "gpu 01"', "NodeName in slurm.conf"],
    ),
    (
        "horovod-ops-choice",
        "site.yml",
        "horovod_gpu_operations: mpi\n",
        [],
        ['horovod_gpu_operations is "mpi": not one of the choices', '"gloo"'],
    ),
    (
        "gpufleet-var-typo",
        "site.yml",
        "gpufleet_sheduler: slurm\n",
        [],
        ["gpufleet_sheduler is not a variable of this collection", "did you mean gpufleet_scheduler?"],
    ),
    # --- values checked to their real domain (issue 30): a mount over /etc, shell syntax in a repository's host, a
    # timeout without a sensible bound, a container image that a command line reads as an option
    (
        "mount-over-etc",
        "site.yml",
        "dataset_cache_mounts: [{path: /etc, type: tmpfs, size: 1g}]\n",
        [],
        ['dataset_cache_mounts[0].path is "/etc"', "/etc itself holds other programs' files"],
    ),
    (
        "repo-url-shell-in-host",
        "site.yml",
        "gpufleet_nvidia_repo_url: 'http://mirror$(id).example.org/nvidia'\n",
        [],
        ['gpufleet_nvidia_repo_url is "http://mirror$(id).example.org/nvidia"', "its host is not a DNS name"],
    ),
    (
        "drain-timeout-unbounded",
        "playbooks/upgrade.yml",
        "gpufleet_upgrade_drain_timeout: 99999999\n",
        [],
        ["gpufleet_upgrade_drain_timeout is the YAML number 99999999: out of range (0 to 604800)"],
    ),
    (
        "validation-image-option",
        "site.yml",
        "gpu_validation_image: --privileged\n",
        [],
        ['gpu_validation_image is "--privileged": not in the expected form', "ubuntu:24.04"],
    ),
    # --- facts.yml checks what it reads too
    (
        "facts-stack-empty",
        "playbooks/facts.yml",
        "gpufleet_stack: {}\n",
        ["-e", "pynvml_install=false"],
        ["gpufleet_stack is {}: empty"],
    ),
    (
        "facts-cuda-unquoted",
        "playbooks/facts.yml",
        bad_stack("cuda", "12.10"),
        ["-e", "pynvml_install=false"],
        ["gpufleet_stack.cuda is the YAML number 12.1"],
    ),
]

# Valid inventories: past the checks, the run reaches for the host.
GOOD = [
    ("site-base", "site.yml", "", []),
    (
        "site-everything-valid",
        "site.yml",
        stack('cuda: ["12.8", "12.4"], framework: "torch==2.7.1+cu128", driver_flavor: proprietary')
        + "gpufleet_nvidia_repo_url: https://ci:token@mirror.example.org:8443/nvidia\n"
        + "gpufleet_nvidia_repo_key: {url: 'file:///srv/key.asc', fingerprint: 'EB69 3B30 35CD 5710 E231 E123 A4B4"
        + " 6996 3BF8 63CC'}\nnccl_settings: {NCCL_SOCKET_IFNAME: '^docker,lo', NCCL_IB_TIMEOUT: 22}\n"
        + "gpufleet_components: [driver, cuda, cudnn, nccl, horovod]\n",
        [],
    ),
    (
        "upgrade-canary-batches",
        "playbooks/upgrade.yml",
        "",
        ["-e", '{"gpufleet_upgrade_serial": [1, "10%", "25%"]}', "-e", "gpufleet_upgrade_reboot_ok=true"],
    ),
    (
        "upgrade-rollback-without-stack",
        "playbooks/upgrade.yml",
        "gpufleet_stack: {driver: '570.133.20'}\n",
        ["-e", "gpufleet_upgrade_mode=rollback"],
    ),
    ("facts-without-stack", "playbooks/facts.yml", "", ["-e", "pynvml_install=false"]),
    # Templated from another host's variables and a key as gpg prints it (two spaces in the middle), no key URL.
    (
        "site-hostvars-and-gpg-fingerprint",
        "site.yml",
        "gpufleet_nvidia_repo_url: \"http://{{ hostvars['gpu-x'].ansible_host }}:8790\"\n"
        "gpufleet_nvidia_repo_key: {fingerprint: 'EB69 3B30 35CD 5710 E231  E123 A4B4 6996 3BF8 63CC'}\n",
        [],
    ),
    # A value built from facts is left to its role on the host, with a warning, not refused on the controller.
    (
        "site-value-from-facts",
        "site.yml",
        "nccl_settings: {NCCL_SOCKET_IFNAME: '{{ ansible_default_ipv4.interface }}'}\n",
        [],
    ),
]


def shared_runs(cases):
    """The bad cases whose value is in host_vars, by the run they share (playbook, extra arguments): {key: [case]};
    a case alone in its group runs as the others do."""
    groups = {}
    for case in cases:
        if case[2].strip():
            groups.setdefault((case[1], tuple(case[3])), []).append(case)
    return {key: group for key, group in groups.items() if len(group) > 1}


def host_lines(out, host):
    """What the check's report says of `host`: each entry that names it ("- gpu-a, gpu-b: problem", with the lines
    indented below it), each once (the output shows the message twice)."""
    entries, entry, indent = [], None, -1
    for line in out.splitlines():
        depth = len(line) - len(line.lstrip())
        if entry is not None and depth > indent:
            entry.append(line.strip())
            continue
        item = line.strip()
        names = item[2:].split(": ", 1)[0].split(", ") if item.startswith("- ") and ": " in item else []
        entry, indent = ([item], depth) if host in names else (None, -1)
        if entry is not None:
            entries.append(entry)
    return "\n".join(dict.fromkeys("\n".join(e) for e in entries))


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory, request):
    """{case: (rc, the run's output, what the output says of the case)}: the whole output for a case that ran alone,
    its host's report lines for one that shared a run."""
    env = request.getfixturevalue("ansible_env_module")
    shared = shared_runs(BAD)
    together_names = {case[0] for group in shared.values() for case in group}
    alone = [(c[0], c[1], c[2], c[3]) for c in BAD if c[0] not in together_names] + list(GOOD)

    def one(case):
        name, playbook, host_vars, extra = case
        base = {} if name == "facts-without-stack" else BASE
        workdir = tmp_path_factory.mktemp(name)
        rc, out = run(workdir, env, base, playbook=playbook, host_vars_text=host_vars, extra=extra)
        return {name: (rc, out, out)}

    def together(key):
        playbook, extra = key
        group = shared[key]
        host_vars = {f"gpu-{case[0]}": case[2] for case in group}
        workdir = tmp_path_factory.mktemp(playbook.replace("/", "-"))
        rc, out = run(workdir, env, BASE, playbook=playbook, host_vars=host_vars, extra=extra)
        return {case[0]: (rc, out, host_lines(out, f"gpu-{case[0]}")) for case in group}

    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(together, shared)) + list(pool.map(one, alone))
    return {name: outcome for result in results for name, outcome in result.items()}


def test_the_table_covers_enough_inputs():
    assert len(BAD) >= 60 and len({c[0] for c in BAD}) == len(BAD)


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_input_stops_on_the_controller_naming_variable_value_and_fix(outcomes, case):
    name, _playbook, _host_vars, _extra, expected = case
    rc, out, said = outcomes[name]
    assert rc != 0, out
    assert "UNREACHABLE" not in out, f"a host was contacted:\n{out}"
    assert "no host was contacted" in out or "which names no host of the inventory" in out, out
    for text in expected:
        assert text in said, f"missing {text!r} in:\n{said}\nof:\n{out}"
    assert "hunter2" not in out


@pytest.mark.parametrize("case", GOOD, ids=[c[0] for c in GOOD])
def test_valid_input_passes_the_checks_and_reaches_the_host(outcomes, case):
    rc, out, _said = outcomes[case[0]]
    assert "problem" not in out.split("PLAY RECAP")[0].split("UNREACHABLE")[0], out
    if case[0] == "site-value-from-facts":
        assert "nccl_settings uses ansible_default_ipv4, which is known only when the play runs on the host" in out, out
    assert "UNREACHABLE" in out and rc != 0, out


def test_a_hostile_inventory_host_name_stops_on_the_controller(tmp_path, ansible_env):
    rc, out = run(tmp_path, ansible_env, BASE, hosts=("gpu-x", "gpu$(reboot)"))
    assert rc != 0 and "UNREACHABLE" not in out, out
    assert 'the inventory host name "gpu$(reboot)" is not a host name' in out and "ansible_host" in out, out
