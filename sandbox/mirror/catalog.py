"""What the offline mirror holds: NVIDIA's package names, versions, dependency chains and file paths, in small.

Pure data and text: `catalog()` returns one dict per package; mirror_build.py turns them into .deb files.
Names and layout follow NVIDIA's Debian 12 CUDA repository
(https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/) and the libnvidia-container
repository (https://nvidia.github.io/libnvidia-container/stable/deb/amd64/). Where we simplify, README.md says so.
"""

from __future__ import annotations

import json

import driver_graph
import kmod_source

DESC = "synthetic test fixture from gpufleet.stack sandbox/mirror (not NVIDIA software)"
LIB = "/usr/lib/x86_64-linux-gnu"

# Driver versions: real release numbers; the highest CUDA each branch supports (cuDriverGetVersion / NVML).
# 580.95.05 and 580.105.08 are in NVIDIA's repositories (580.105.08-1: debian12, in a forum post's apt output).
DRIVERS = {
    "550.54.15": 12040,
    "550.127.08": 12040,
    "550.163.01": 12040,
    "570.124.06": 12080,
    "570.133.20": 12080,
    "570.172.08": 12080,
    "580.95.05": 13000,
    "580.105.08": 13000,
    "580.178.04": 13000,  # the R580 fix of NVIDIA's September 2026 security bulletin (5861)
    "595.91.07": 13020,  # the R595 fix of the same bulletin
}
# Its kernel-module postinst fails like a DKMS build error: for failure-injection tests. Lower than every good
# 570 version so "install the newest 570" never picks it; only an exact pin does.
BROKEN_DRIVER = "570.86.15"
DRIVERS[BROKEN_DRIVER] = 12080
# The pinning packages exist for newer branches only (NVIDIA lists nvidia-driver-pinning-570/-575/-580...).
PINNING_FROM_BRANCH = 570
DISTS = ("debian12", "debian13")
# cuda-keyring points at the repository it came from; the mirror's at the URL `serve` uses by default.
DEFAULT_URL = "http://127.0.0.1:8790"

# CUDA toolkits: (full version, nvcc, cudart, nvcc build line date, compiler build id) from NVIDIA's release files.
TOOLKITS = {
    "12.4": ("12.4.1", "12.4.131", "12.4.127", "Thu_Mar_28_02:18:24_PDT_2024", "34097967_0", "2024"),
    "12.8": ("12.8.1", "12.8.93", "12.8.90", "Fri_Feb_21_20:23:50_PST_2025", "35583870_0", "2025"),
}

# cuDNN: (package, dev package, version, debian revision suffix)
CUDNN = [
    ("libcudnn8", "libcudnn8-dev", "8.9.7.29", "-1+cuda12.2"),
    ("libcudnn9-cuda-12", "libcudnn9-dev-cuda-12", "9.1.1.17", "-1"),
    ("libcudnn9-cuda-12", "libcudnn9-dev-cuda-12", "9.8.0.87", "-1"),
]
NCCL = [("2.21.5", "12.4"), ("2.26.2", "12.8")]
# DCGM: 4.x as NVIDIA/DCGM cmake/packaging.cmake splits it (core + one package per CUDA major, epoch 1, revision 1;
# versions from Azure/AgentBaker's pins), 3.x as the one package of the real ubuntu2404 index (1:3.3.x, no revision).
DCGM = {"4.4.1": ("12", "13"), "4.5.3": ("12", "13")}
DCGM3 = "3.3.9"
# dcgm-exporter's package: its own version (no epoch, revision 1; Azure/AgentBaker pins 4.6.0-1, a 4.8.2-1 file is
# listed elsewhere) -> the DCGM it is built against (its image tags: <DCGM>-<exporter>).
DCGM_EXPORTER = {"4.6.0": "4.4.1", "4.8.2": "4.5.3"}
CONTAINER_TOOLKIT = {
    "1.17.4": "9b69590c7428470a72f2ae05f826412976af1395",
    "1.17.8": "f202b80a9b9d0db00d9b1d73c0128c8962c55f4d",
    "1.19.1": "09ceee5dde66ba9ce25c7cc69b1ebd5e6e3266fa",  # tag v1.19.1, 2026-05-21: the CVE-2026-24260 fix
}
# From 1.18.0 (NVIDIA/nvidia-container-toolkit packaging/debian at v1.18.0 and v1.19.1): nvidia-container-toolkit
# depends on libnvidia-container-tools (= its version), and the base package ships the nvidia-cdi-refresh units.
CTK_REFRESH_FROM = "1.18.0"


def pkg(name, version, *, depends=(), files=None, links=None, postinst=None, prerm=None, repo="cuda", **extra):
    extra = {k.replace("_", "-"): v for k, v in extra.items()}
    return {
        "name": name,
        "version": version,
        "depends": list(depends),
        "files": files or {},  # path -> (text or bytes or ("stub", symbol, value) or ("nvml", driver, cuda), mode)
        "links": links or {},  # path -> target
        "postinst": postinst,
        "prerm": prerm,
        "repo": repo,
        "extra": extra,  # more control fields: Provides, Conflicts, Replaces
    }


def sh(body):
    return "#!/bin/sh\nset -e\n" + body.strip() + "\n"


# NVIDIA's own Ubuntu packaging starts the daemon with persistence mode off (NVIDIA/ubuntu-packaging-nvidia-driver:
# "--user root --no-persistence-mode --verbose"); the upstream template (NVIDIA/nvidia-persistenced) has neither flag.
# The Debian 12 CUDA repository's unit is not recorded here: we model NVIDIA's packaging, the case that needs a fix.
PERSIST_UNIT = (
    "[Unit]\nDescription=NVIDIA Persistence Daemon\nWants=syslog.target\n\n"
    "[Service]\nType=forking\nExecStart=/usr/bin/nvidia-persistenced --user root --no-persistence-mode --verbose\n"
    "ExecStopPost=/bin/rm -rf /var/run/nvidia-persistenced\n\n[Install]\nWantedBy=multi-user.target\n"
)
# The sandbox's profile, read by the daemon stand-ins (sandbox/nvml-sim).
SIM_PROFILE = "/etc/gpufleet/nvml-sim/profile.json"


def daemon_script(ver, version_line, start):
    """A stand-in daemon binary: --version prints the real line; a start runs `start` (bash) and leaves a process
    behind for systemd's Type=forking, as the real daemons fork and the parent exits 0."""
    return (
        "#!/bin/bash\nset -e\n"
        f'case "${{1:-}}" in --version|-v) echo "{version_line}"; exit 0 ;; esac\n'
        f"# gpufleet.stack test mirror: stand-in for driver {ver} (not NVIDIA software)\n"
        + start.strip()
        + "\nsetsid sleep infinity </dev/null >/dev/null 2>&1 &\nexit 0\n"
    )


def persistenced_script(ver):
    # Persistence mode is on unless --no-persistence-mode; the simulator reads it from this file (sandbox/nvml-sim).
    return daemon_script(
        ver,
        f"nvidia-persistenced:  version {ver}",
        """
mode=1
for arg in "$@"; do [ "$arg" = --no-persistence-mode ] && mode=0; done
mkdir -p /run/nvidia-persistenced
echo "$mode" > /run/nvidia-persistenced/gpufleet-nvml-sim-persistence
[ "$mode" = 1 ] && state=enabled || state=disabled
echo "nvidia-persistenced: persistence mode $state"
""",
    )


# Python one-liners the stand-ins run on the profile (kept here so the scripts stay readable).
PY_START_ERROR = (
    'import json,sys; print((json.load(open(sys.argv[1])).get("host") or {}).get("fabricmanager_start_error") or "")'
)
PY_GPUS = (
    "import json,sys; "
    'print(sum(g.get("nvml_visible", True) is not False for g in json.load(open(sys.argv[1]))["gpus"]))'
)


def fabricmanager_script(ver):
    # The journal and /var/log/fabricmanager.log lines the real daemon prints once the fabric is configured (an HGX A100
    # or B200 report in NVIDIA's trackers); a profile's host.fabricmanager_start_error makes it fail instead.
    return daemon_script(
        ver,
        f"Fabric Manager version is : {ver}",
        f"""
PY_START_ERROR='{PY_START_ERROR}'
error="$(python3 -c "$PY_START_ERROR" {SIM_PROFILE} 2>/dev/null || true)"
if [ -n "$error" ]; then echo "$error" | tee -a /var/log/fabricmanager.log >&2; exit 1; fi
for line in "Fabric Manager version {ver} is running" "Connected to 1 node." \
    "Successfully configured all the available GPUs and NVSwitches to route NVLink traffic."; do
    echo "$line"; echo "[$(date '+%b %d %Y %H:%M:%S')] [INFO] [tid $$] $line" >> /var/log/fabricmanager.log
done
""",
    )


# nvidia-imex's unit as NVIDIA ships it (the directives of the stock unit that ParallelCluster's copy and its test
# show: Type=forking, the config file, Restart=on-failure), its config's keys with their documented defaults (IMEX
# guide, "IMEX Service Config Options"), and an empty nodes file.
IMEX_UNIT = (
    "[Unit]\nDescription=NVIDIA IMEX service\nAfter=network-online.target\nRequires=network-online.target\n\n"
    "[Service]\nUser=root\nPrivateTmp=false\nType=forking\nTimeoutStartSec=infinity\n"
    "ExecStart=/usr/bin/nvidia-imex -c /etc/nvidia-imex/config.cfg\nLimitCORE=infinity\nRestart=on-failure\n"
    "RestartSec=1s\n\n[Install]\nWantedBy=multi-user.target\n"
)
IMEX_CONFIG = (
    "LOG_LEVEL=4\nLOG_FILE_NAME=/var/log/nvidia-imex.log\nDAEMONIZE=1\nBIND_INTERFACE_IP=\nSERVER_PORT=50000\n"
    "IMEX_NODE_CONFIG_FILE=/etc/nvidia-imex/nodes_config.cfg\nIMEX_WAIT_FOR_QUORUM=RECOVERY\nIMEX_CMD_ENABLED=1\n"
    "IMEX_CMD_PORT=50005\n"
)


def imex_script(ver):
    """nvidia-imex: reads its config's node file; with no address in it, or a line that is not one, it fails as the
    real daemon cannot bind (the sandbox's nodes share the host's addresses, so any listed address of this machine
    is "this node")."""
    return daemon_script(
        ver,
        f"IMEX version is: {ver}",
        r"""
config=/etc/nvidia-imex/config.cfg
[ "${1:-}" = -c ] && config="$2"
nodes="$(sed -n 's/^IMEX_NODE_CONFIG_FILE=//p' "$config")"
grep -qE '^[A-Za-z0-9][A-Za-z0-9.:-]*$' "$nodes" 2>/dev/null || {
    echo "IMEX: no node address in $nodes" | tee -a /var/log/nvidia-imex.log >&2; exit 1; }
echo "IMEX version $(basename "$0") is running with $(grep -c . "$nodes") nodes" >> /var/log/nvidia-imex.log
""",
    )


DEVNODES = "/usr/lib/nvidia/gpufleet-sandbox-devnodes"
DEVNODES_UNIT_NAME = "gpufleet-sandbox-nvidia-devnodes.service"
# A real node loads nvidia.ko at every boot and udev's rule (nvidia-modprobe) makes the device nodes again; a container
# starts on a fresh /dev. This oneshot stands in for both at boot, before slurmd (which checks every gres.conf File=,
# "Waiting for gres.conf file /dev/nvidia0", then exits) and the driver's daemons.
DEVNODES_UNIT = (
    "[Unit]\nDescription=Make the NVIDIA device nodes (gpufleet.stack sandbox: the module loading at boot)\n"
    "Before=slurmd.service nvidia-persistenced.service nvidia-fabricmanager.service\n\n"
    f"[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart={DEVNODES}\n\n[Install]\nWantedBy=multi-user.target\n"
)


def devnodes_script():
    """The driver's device nodes as nvidia-modprobe makes them (195:N per GPU the driver brought up, 195:255
    nvidiactl, 195:254 nvidia-modeset, nvidia-uvm on its own major); nothing without a simulated GPU."""
    return f"""#!/bin/bash
set -e
[ -f {SIM_PROFILE} ] || exit 0
PY_GPUS='{PY_GPUS}'
gpus="$(python3 -c "$PY_GPUS" {SIM_PROFILE})"
node() {{ [ -e "$1" ] || mknod -m 0666 "$1" c "$2" "$3" || echo "cannot create $1 (no CAP_MKNOD?)" >&2; }}
node /dev/nvidiactl 195 255
node /dev/nvidia-modeset 195 254
node /dev/nvidia-uvm 509 0
node /dev/nvidia-uvm-tools 509 1
for i in $(seq 0 $((gpus - 1))); do node "/dev/nvidia$i" 195 "$i"; done
# The driver makes IMEX's channel0 at load time when asked to (NVreg_CreateImexChannel0=1, driver 555 and newer).
if grep -rqsE '^options nvidia .*NVreg_CreateImexChannel0=1' /etc/modprobe.d; then
    mkdir -p /dev/nvidia-caps-imex-channels
    node /dev/nvidia-caps-imex-channels/channel0 234 0
fi
"""


def kernel_module_postinst(ver):
    """dh_dkms's postinst (kmod_source.py: DKMS really builds the module for kernels that have headers); then the
    module "loads": the sandbox's simulator stands in for nvidia.ko in the running kernel, which in a container is
    the host's, and the driver's device nodes appear (DEVNODES, which also runs at every boot)."""
    return "#!/bin/bash\nset -e\n" + kmod_source.POSTINST.format(ver=ver) + f"{DEVNODES}\n"


FM_UNIT = (
    "[Unit]\nDescription=NVIDIA fabric manager service\nAfter=network-online.target\n\n"
    "[Service]\nExecStart=/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg\n"
    "Type=forking\nTimeoutStartSec=240\n\n[Install]\nWantedBy=multi-user.target\n"
)


# NVLSM's paths (NVIDIA's nvlsm archive as Sidero's extension unpacks it: sbin/nvlsm, share/nvidia/nvlsm/*.conf); the
# binary is a stand-in that prints its version. Fabric Manager's start script runs it on NVLink 5 systems.
NVLSM_FILES = {
    "/opt/nvidia/nvlsm/sbin/nvlsm": (
        sh('echo "OpenSM 2025.10.14 (gpufleet.stack test mirror stand-in for nvlsm)"'),
        0o755,
    ),
    "/usr/share/nvidia/nvlsm/nvlsm.conf": ("log_file /var/log/nvlsm.log\n", 0o644),
}


def from_stanza(fields, **contents):
    """A catalog entry from a driver_graph stanza (control fields) and its contents (files, links, scripts)."""
    extra = {k: v for k, v in fields.items() if k not in ("Package", "Version", "Depends", "Architecture")}
    depends = [d.strip() for d in fields.get("Depends", "").split(",") if d.strip()]
    return pkg(fields["Package"], fields["Version"], depends=depends, **contents, **extra)


def driver_contents(ver):
    """Files of the parts the collection reads or runs, by package name; every other part is an empty package."""
    cuda = DRIVERS[ver]
    broken = ver == BROKEN_DRIVER
    # The broken version's source does not compile: DKMS fails for real on a node with kernel headers. A node without
    # any (a plain container) builds nothing, so there its postinst fails as DKMS would have.
    dkms_post = (
        "#!/bin/bash\nset -e\n"
        + kmod_source.POSTINST.format(ver=ver)
        + f"""
ls -d /lib/modules/*/build/include >/dev/null 2>&1 && exit 0
echo "Error! Bad return status for module build on kernel: $(uname -r) (x86_64)" >&2
echo "Consult /var/lib/dkms/nvidia/{ver}/build/make.log for more information." >&2
echo "(gpufleet.stack test mirror: driver {ver} is the deliberately broken version)" >&2
exit 10
"""
        if broken
        else kernel_module_postinst(ver)
    )

    def dkms(flavor):
        return {
            "files": {
                **kmod_source.source_files(ver, flavor, broken),
                DEVNODES: (devnodes_script(), 0o755),
                f"/lib/systemd/system/{DEVNODES_UNIT_NAME}": (DEVNODES_UNIT, 0o644),
            },
            "links": {f"/lib/systemd/system/multi-user.target.wants/{DEVNODES_UNIT_NAME}": f"../{DEVNODES_UNIT_NAME}"},
            "postinst": dkms_post,
            "prerm": "#!/bin/sh\nset -e\n" + kmod_source.PRERM.format(ver=ver),
        }

    fm = {
        "files": {
            "/usr/bin/nv-fabricmanager": (fabricmanager_script(ver), 0o755),
            "/usr/share/nvidia/nvswitch/fabricmanager.cfg": ("LOG_LEVEL=4\nFABRIC_MODE=0\n", 0o644),
            "/lib/systemd/system/nvidia-fabricmanager.service": (FM_UNIT, 0o644),
        }
    }
    imex = {
        "files": {
            "/usr/bin/nvidia-imex": (imex_script(ver), 0o755),
            "/etc/nvidia-imex/config.cfg": (IMEX_CONFIG, 0o644),
            "/etc/nvidia-imex/nodes_config.cfg": ("", 0o644),
            "/usr/lib/systemd/system/nvidia-imex.service": (IMEX_UNIT, 0o644),
        }
    }
    branch = ver.split(".")[0]
    return {
        "libnvidia-ml1": {
            "files": {f"{LIB}/libnvidia-ml.so.{ver}": (("nvml", ver, cuda), 0o644)},
            "links": {f"{LIB}/libnvidia-ml.so.1": f"libnvidia-ml.so.{ver}"},
            "postinst": sh("ldconfig"),
        },
        "libcuda1": {
            "files": {f"{LIB}/libcuda.so.{ver}": (("stub", "cuDriverGetVersion", cuda), 0o644)},
            "links": {f"{LIB}/libcuda.so.1": f"libcuda.so.{ver}"},
            "postinst": sh("ldconfig"),
        },
        "nvidia-smi": {
            "files": {"/usr/bin/nvidia-smi": (sh(f'echo "NVIDIA-SMI {ver} (synthetic test fixture)"'), 0o755)}
        },
        "nvidia-persistenced": {
            "files": {
                "/usr/bin/nvidia-persistenced": (persistenced_script(ver), 0o755),
                "/lib/systemd/system/nvidia-persistenced.service": (PERSIST_UNIT, 0o644),
            }
        },
        "nvidia-kernel-dkms": dkms("proprietary"),
        "nvidia-kernel-open-dkms": dkms("open"),
        "nvidia-fabricmanager": fm,
        f"nvidia-fabricmanager-{branch}": fm,
        "nvidia-imex": imex,
        f"nvidia-imex-{branch}": imex,
    }


def driver_packages(ver, dist):
    """Every package of one driver version in NVIDIA's repository for `dist` (driver_graph.py)."""
    deb = f"{ver}-1"
    stanzas = driver_graph.graphics_drivers(ver, deb, dist) + driver_graph.nvidia_additions(ver, deb, dist)
    stanzas += driver_graph.fabric_manager(ver, deb)
    contents = driver_contents(ver)
    out = [from_stanza(fields, **contents.get(fields["Package"], {})) for fields in stanzas]
    if int(ver.split(".")[0]) >= PINNING_FROM_BRANCH and ver != BROKEN_DRIVER:
        for fields, text in driver_graph.pinning(ver, deb):
            out.append(from_stanza(fields, files={"/etc/apt/preferences.d/nvidia-driver-pin": (text, 0o644)}))
    return out


def keyring_package(dist, key, url=DEFAULT_URL):
    """cuda-keyring 1.1-1 as NVIDIA builds it (NVIDIA/apt-packaging-cuda-keyring): the repository key and the source
    line, pointing at the repository it came from (here the mirror at its default URL)."""
    line = f"deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] {url}/compute/cuda/repos/{dist}/x86_64/ /\n"
    files = {
        "/usr/share/keyrings/cuda-archive-keyring.gpg": (key, 0o644),
        f"/etc/apt/sources.list.d/cuda-{dist}-x86_64.list": (line, 0o644),
    }
    return pkg("cuda-keyring", "1.1-1", files=files, Source="cuda-keyring", Architecture="all")


def nvcc_script(xy, full):
    _tk, nvcc, _rt, built, build_id, year = full
    return sh(
        f"""
case "$1" in
  --version|-V) ;;
  *) echo "nvcc fatal   : synthetic nvcc from the gpufleet.stack test mirror only answers --version" >&2; exit 1 ;;
esac
cat <<'EOF'
nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-{year} NVIDIA Corporation
Built on {built}
Cuda compilation tools, release {xy}, V{nvcc}
Build cuda_{xy}.r{xy}/compiler.{build_id}
EOF
"""
    )


def toolkit_packages(xy):
    full = TOOLKITS[xy]
    tk, nvcc, cudart = full[:3]
    dash, home = xy.replace(".", "-"), f"/usr/local/cuda-{xy}"
    major = xy.split(".")[0]
    rt_dir = f"{home}/targets/x86_64-linux/lib"
    prio = int(xy.replace(".", ""))  # NVIDIA's alternatives priority grows with the version
    version_json = {
        "cuda": {"name": "CUDA SDK", "version": tk},
        "cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": cudart},
        "cuda_nvcc": {"name": "CUDA NVCC", "version": nvcc},
    }
    return [
        # One package for all 12.x (the newest wins), so it must not name a minor version's directory.
        pkg(
            f"cuda-toolkit-{major}-config-common",
            f"{cudart}-1",
            files={
                f"/etc/ld.so.conf.d/988_cuda-{major}.conf": (
                    f"/usr/local/cuda-{major}/targets/x86_64-linux/lib\n",
                    0o644,
                )
            },
        ),
        # Each X.Y registers /usr/local/cuda and /usr/local/cuda-12 with update-alternatives.
        pkg(
            f"cuda-toolkit-{dash}-config-common",
            f"{cudart}-1",
            postinst=sh(
                f"update-alternatives --install /usr/local/cuda cuda {home} {prio}\n"
                f"update-alternatives --install /usr/local/cuda-{major} cuda-{major} {home} {prio}"
            ),
            prerm=sh(
                f'[ "$1" = upgrade ] && exit 0\nupdate-alternatives --remove cuda {home}\n'
                f"update-alternatives --remove cuda-{major} {home}"
            ),
        ),
        pkg(
            f"cuda-cudart-{dash}",
            f"{cudart}-1",
            depends=[f"cuda-toolkit-{dash}-config-common", f"cuda-toolkit-{major}-config-common"],
            files={f"{rt_dir}/libcudart.so.{cudart}": (("stub", "cudaRuntimeGetVersion", prio * 10), 0o644)},
            links={
                f"{rt_dir}/libcudart.so.{major}": f"libcudart.so.{cudart}",
                f"{home}/lib64": "targets/x86_64-linux/lib",
            },
        ),
        pkg(f"cuda-nvcc-{dash}", f"{nvcc}-1", files={f"{home}/bin/nvcc": (nvcc_script(xy, full), 0o755)}),
        pkg(f"cuda-compiler-{dash}", f"{tk}-1", depends=[f"cuda-nvcc-{dash} (>= {nvcc})"]),
        pkg(f"cuda-libraries-{dash}", f"{tk}-1", depends=[f"cuda-cudart-{dash} (>= {cudart})"]),
        pkg(
            f"cuda-toolkit-{dash}",
            f"{tk}-1",
            depends=[f"cuda-compiler-{dash} (>= {tk})", f"cuda-libraries-{dash} (>= {tk})"],
            files={f"{home}/version.json": (json.dumps(version_json, indent=3) + "\n", 0o644)},
        ),
    ]


def cudnn_packages(name, dev, ver, suffix):
    major, minor, patch = ver.split(".")[:3]
    rev = ver + suffix
    header = f"/usr/include/x86_64-linux-gnu/cudnn_version_v{major}.h"
    text = (
        f"/* cudnn_version.h: {DESC} */\n#ifndef CUDNN_VERSION_H_\n#define CUDNN_VERSION_H_\n"
        f"#define CUDNN_MAJOR {major}\n#define CUDNN_MINOR {minor}\n#define CUDNN_PATCHLEVEL {patch}\n"
        "#define CUDNN_VERSION (CUDNN_MAJOR * 1000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)\n#endif\n"
    )
    if int(major) >= 9:  # cuDNN 9 changed the encoding: major * 10000 + minor * 100 + patch
        text = text.replace("CUDNN_MAJOR * 1000", "CUDNN_MAJOR * 10000")
    code = int(major) * (10000 if int(major) >= 9 else 1000) + int(minor) * 100 + int(patch)
    so = f"libcudnn.so.{major}.{minor}.{patch}"
    return [
        pkg(
            name,
            rev,
            files={f"{LIB}/{so}": (("stub-size_t", "cudnnGetVersion", code), 0o644)},
            links={f"{LIB}/libcudnn.so.{major}": so},
            postinst=sh("ldconfig"),
        ),
        pkg(
            dev,
            rev,
            depends=[f"{name} (= {rev})"],
            files={header: (text, 0o644)},
            postinst=sh(f"update-alternatives --install /usr/include/cudnn_version.h cudnn_version {header} {major}0"),
            prerm=sh(f'[ "$1" = upgrade ] || update-alternatives --remove cudnn_version {header}'),
        ),
    ]


def nccl_packages(ver, cuda):
    rev = f"{ver}-1+cuda{cuda}"
    major, minor, patch = (int(x) for x in ver.split("."))
    code = major * 10000 + minor * 100 + patch
    header = (
        f"/* nccl.h: {DESC} */\n#ifndef NCCL_H_\n#define NCCL_H_\n#define NCCL_MAJOR {major}\n"
        f'#define NCCL_MINOR {minor}\n#define NCCL_PATCH {patch}\n#define NCCL_SUFFIX ""\n'
        f"#define NCCL_VERSION_CODE {code}\n#endif\n"
    )
    return [
        pkg(
            "libnccl2",
            rev,
            files={f"{LIB}/libnccl.so.{ver}": (("stub", "ncclGetVersion", code), 0o644)},
            links={f"{LIB}/libnccl.so.2": f"libnccl.so.{ver}"},
            postinst=sh("ldconfig"),
        ),
        pkg("libnccl-dev", rev, depends=[f"libnccl2 (= {rev})"], files={"/usr/include/nccl.h": (header, 0o644)}),
    ]


# nvidia-dcgm.service as DCGM 4 installs it (NVIDIA/DCGM config-files/systemd/nvidia-dcgm.service.in).
DCGM_UNIT = (
    "[Unit]\nDescription=NVIDIA DCGM service\nAfter=nvidia-gpu-reset.target\nWants=nvidia-gpu-reset.target\n\n"
    '[Service]\nUser=root\nPrivateTmp=false\n\nEnvironment="DCGM_HOME_DIR=/var/log/nvidia-dcgm"\n\n'
    "ExecStart=/usr/bin/nv-hostengine -n --service-account nvidia-dcgm\n\nRestart=on-abort\n\n"
    "[Install]\nAlias=dcgm.service\nWantedBy=multi-user.target\n"
)
# DCGM's postinst (scripts/deb/postinst): the service account and its log directory; it enables nothing.
DCGM_POSTINST = """#!/bin/sh
set -uf
useradd -Urs /usr/sbin/nologin nvidia-dcgm
retcode=$?
set -e
if [ $retcode -ne 0 ] && [ $retcode -ne 9 ]; then
    exit $retcode
fi
mkdir -p /var/log/nvidia-dcgm
chown nvidia-dcgm:nvidia-dcgm /var/log/nvidia-dcgm
chmod 755 /var/log/nvidia-dcgm
"""


def hostengine_script(ver):
    """nv-hostengine: -n stays in the foreground (the unit's form), else it forks; either way its pid goes to
    /var/run/nvhostengine.pid, which the dcgmi stand-in reads to know it can connect."""
    return (
        "#!/bin/bash\nset -e\n"
        f"# gpufleet.stack test mirror: stand-in for DCGM {ver}'s nv-hostengine (not NVIDIA software)\n"
        'foreground=0; for arg in "$@"; do [ "$arg" = -n ] && foreground=1; done\n'
        f'echo "Started host engine version {ver} using port number: 5555"\n'
        'if [ "$foreground" = 1 ]; then echo $$ > /var/run/nvhostengine.pid; exec sleep infinity; fi\n'
        "setsid sleep infinity </dev/null >/dev/null 2>&1 &\necho $! > /var/run/nvhostengine.pid\n"
    )


def dcgm_packages(ver, cudas, dcgmi_source):
    """DCGM 4: core (the daemon, dcgmi, the unit) and one package per CUDA major with that major's plugins."""
    rev = f"1:{ver}-1"
    plugins = "/usr/libexec/datacenter-gpu-manager-4/plugins"
    core = pkg(
        "datacenter-gpu-manager-4-core",
        rev,
        depends=["libc6 (>= 2.27)", "lshw"],
        Pre_Depends="passwd, login",
        Conflicts="datacenter-gpu-manager",
        files={
            "/usr/bin/dcgmi": (dcgmi_source.replace("@VERSION@", ver), 0o755),
            "/usr/bin/nv-hostengine": (hostengine_script(ver), 0o755),
            "/usr/lib/systemd/system/nvidia-dcgm.service": (DCGM_UNIT, 0o644),
            f"{LIB}/libdcgm.so.{ver}": (("stub", "dcgmInit", 0), 0o644),
        },
        links={f"{LIB}/libdcgm.so.4": f"libdcgm.so.{ver}"},
        postinst=DCGM_POSTINST,
    )
    out = [core]
    for cuda in cudas:
        out.append(
            pkg(
                f"datacenter-gpu-manager-4-cuda{cuda}",
                rev,
                depends=[f"datacenter-gpu-manager-4-core (= {rev})"],
                Provides=f"datacenter-gpu-manager-4 (= {rev})",
                Recommends="libnuma1",
                files={
                    f"/usr/bin/dcgmproftester{cuda}": (
                        sh(f'echo "stand-in: DCGM {ver} for CUDA {cuda}" >&2; exit 1'),
                        0o755,
                    ),
                    f"{plugins}/cuda{cuda}/libDiagnostic.so.4": (f"stand-in plugin: {DESC}\n", 0o644),
                },
            )
        )
    return out


# nvidia-dcgm-exporter.service as dcgm-exporter's packaging installs it (packaging/config-files/systemd).
DCGM_EXPORTER_UNIT = (
    "[Unit]\nDescription=NVIDIA DCGM-exporter service\nWants=nvidia-dcgm.service\nAfter=nvidia-dcgm.service\n\n"
    "[Service]\nUser=root\nPrivateTmp=false\nStandardOutput=append:/var/log/dcgm-exporter.log\n"
    "StandardError=append:/var/log/dcgm-exporter.log\n"
    "ExecStart=/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/default-counters.csv\nRestart=on-abort\n\n"
    "[Install]\nWantedBy=multi-user.target\n"
)
# A part of NVIDIA's etc/default-counters.csv, its lines as written there.
DCGM_COUNTERS = """# Format
# If line starts with a '#' it is considered a comment
# DCGM FIELD, Prometheus metric type, help message

# Clocks
DCGM_FI_DEV_SM_CLOCK,  gauge, SM clock frequency (in MHz).
DCGM_FI_DEV_MEM_CLOCK, gauge, Memory clock frequency (in MHz).

# Temperature
DCGM_FI_DEV_MEMORY_TEMP, gauge, Memory temperature (in C).
DCGM_FI_DEV_GPU_TEMP,    gauge, GPU temperature (in C).

# Power
DCGM_FI_DEV_POWER_USAGE,              gauge, Power draw (in W).

# Utilization
DCGM_FI_DEV_GPU_UTIL,      gauge, GPU utilization (in %).

# Errors and violations
DCGM_FI_DEV_XID_ERRORS,              gauge,  Value of the last XID error encountered.

# Memory usage
DCGM_FI_DEV_FB_FREE, gauge, Framebuffer memory free (in MiB).
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB).

# Remapped rows
DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS, counter, Number of remapped rows for uncorrectable errors
DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS,   counter, Number of remapped rows for correctable errors
DCGM_FI_DEV_ROW_REMAP_FAILURE,           gauge,   Whether remapping of rows has failed

# Static configuration information
DCGM_FI_DRIVER_VERSION,        label, Driver Version
"""


def dcgm_exporter_package(ver, dcgm, source):
    return pkg(
        "datacenter-gpu-manager-exporter",
        f"{ver}-1",
        depends=[f"datacenter-gpu-manager-4-core (>= 1:{dcgm})", "python3"],  # python3: our stand-in is a script
        files={
            "/usr/bin/dcgm-exporter": (source, 0o755),
            "/etc/dcgm-exporter/default-counters.csv": (DCGM_COUNTERS, 0o644),
            "/usr/lib/systemd/system/nvidia-dcgm-exporter.service": (DCGM_EXPORTER_UNIT, 0o644),
        },
    )


def dcgm3_package(ver, dcgmi_source):
    """DCGM 3: one package; its Conflicts/Replaces as the real ubuntu2404 index lists them."""
    olds = (
        "datacenter-gpu-manager, datacenter-gpu-manager-fabricmanager (<< 2.0), datacenter-gpu-manager-dcp-nda-only, "
        "datacenter-gpu-manager-collectd, datacenter-gpu-manager-wsgi, "
        "datacenter-gpu-manager-fabricmanager-internal-api-header"
    )
    return pkg(
        "datacenter-gpu-manager",
        f"1:{ver}",
        depends=["libc6 (>= 2.17)"],
        Provides="datacenter-gpu-manager",
        Conflicts=olds,
        Replaces=olds,
        files={
            "/usr/bin/dcgmi": (dcgmi_source.replace("@VERSION@", ver), 0o755),
            "/usr/bin/nv-hostengine": (hostengine_script(ver), 0o755),
            "/usr/lib/systemd/system/nvidia-dcgm.service": (DCGM_UNIT.replace("Alias=dcgm.service\n", ""), 0o644),
        },
        postinst=DCGM_POSTINST,
    )


# nvidia-container-toolkit-base from 1.18.0 (NVIDIA/nvidia-container-toolkit v1.19.1: deployments/systemd/ and
# packaging/debian/nvidia-container-toolkit-base.{install,postinst}): two units in /etc/systemd/system and an env
# file; the postinst enables and starts them where systemd runs (running or degraded), on install and on every
# upgrade. The service writes the CDI spec to /var/run/cdi/nvidia.yaml, which CDI reads after /etc/cdi (a later
# directory wins for the same device name). It runs only where the running kernel's modules.dep lists nvidia.ko: in a
# container the kernel is the host's, so here it is skipped, as on a real node before the driver is installed.
CDI_REFRESH_SERVICE = """[Unit]
Description=Refresh NVIDIA CDI specification file
ConditionPathExists=|/usr/bin/nvidia-smi
ConditionPathExists=|/usr/sbin/nvidia-smi
ConditionPathExists=/usr/bin/nvidia-ctk
StartLimitBurst=5
StartLimitIntervalSec=10s

[Service]
Type=oneshot
Environment=NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/var/run/cdi/nvidia.yaml
EnvironmentFile=-/etc/nvidia-container-toolkit/nvidia-cdi-refresh.env
ExecCondition=/bin/sh -c '/usr/bin/grep -qE "/(nvidia|nvidia-current)[.]ko" /lib/modules/%v/modules.dep'
ExecStart=/bin/sh -c '/usr/bin/nvidia-smi -L || /usr/sbin/nvidia-smi -L'
ExecStart=/usr/bin/nvidia-ctk cdi generate
Restart=on-failure
RestartSec=1s

[Install]
WantedBy=multi-user.target
"""
CDI_REFRESH_PATH = """[Unit]
Description=Trigger CDI refresh on NVIDIA driver or toolkit install / upgrade events

[Path]
PathChanged=/lib/modules/%v/modules.dep
PathChanged=/lib/modules/%v/modules.dep.bin
PathChanged=/usr/bin/nvidia-ctk

[Install]
WantedBy=multi-user.target
"""
CDI_REFRESH_FILES = {
    "/etc/systemd/system/nvidia-cdi-refresh.service": (CDI_REFRESH_SERVICE, 0o644),
    "/etc/systemd/system/nvidia-cdi-refresh.path": (CDI_REFRESH_PATH, 0o644),
    "/etc/nvidia-container-toolkit/nvidia-cdi-refresh.env": (
        "# Overrides for the nvidia-ctk cdi generate run by nvidia-cdi-refresh.service, as ENVVAR=value:\n"
        "# NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/var/run/cdi/nvidia.yaml\n",
        0o644,
    ),
}
CDI_REFRESH_POSTINST = sh("""
[ "$1" = configure ] || exit 0
command -v systemctl >/dev/null 2>&1 || exit 0
case "$(systemctl is-system-running 2>/dev/null || true)" in
    running|degraded)
        systemctl daemon-reload || echo "Warning: Failed to reload systemd daemon" >&2
        for unit in nvidia-cdi-refresh.path nvidia-cdi-refresh.service; do
            systemctl enable --now "$unit" || echo "Warning: Failed to enable $unit" >&2
        done
        echo "Regenerating NVIDIA CDI specification..."
        systemctl start nvidia-cdi-refresh.service || echo "Warning: Failed to trigger CDI refresh" >&2
        ;;
esac
""")


def container_packages(ver, commit, ctk_source):
    rev = f"{ver}-1"
    refresh = [int(x) for x in ver.split(".")] >= [int(x) for x in CTK_REFRESH_FROM.split(".")]
    ctk = ctk_source.replace("@VERSION@", ver).replace("@COMMIT@", commit)
    runtime_cfg = (
        "#accept-nvidia-visible-devices-as-volume-mounts = false\n\n"
        '[nvidia-container-cli]\nldconfig = "@/sbin/ldconfig"\n'
        '\n[nvidia-container-runtime]\nlog-level = "info"\nmode = "auto"\n'
    )
    stub = sh('echo "synthetic test fixture: no container runtime here" >&2; exit 1')
    return [
        pkg(
            "libnvidia-container1",
            rev,
            repo="container",
            files={f"{LIB}/libnvidia-container.so.{ver}": (("stub", "nvc_version_stub", 0), 0o644)},
            links={f"{LIB}/libnvidia-container.so.1": f"libnvidia-container.so.{ver}"},
            postinst=sh("ldconfig"),
        ),
        pkg(
            "libnvidia-container-tools",
            rev,
            repo="container",
            depends=[f"libnvidia-container1 (>= {rev})", "libnvidia-container1 (<< 2.0.0)"],
            files={
                "/usr/bin/nvidia-container-cli": (
                    sh(f'echo "cli-version: {ver}"; echo "lib-version: {ver}"; echo "build revision: {commit}"'),
                    0o755,
                )
            },
        ),
        pkg(
            "nvidia-container-toolkit-base",
            rev,
            repo="container",
            depends=["python3"],  # our nvidia-ctk is a Python script; the real one is a Go binary
            files={
                "/usr/bin/nvidia-ctk": (ctk, 0o755),
                "/usr/bin/nvidia-container-runtime": (stub, 0o755),
                "/etc/nvidia-container-runtime/config.toml": (runtime_cfg, 0o644),
                **(CDI_REFRESH_FILES if refresh else {}),
            },
            postinst=CDI_REFRESH_POSTINST if refresh else None,
        ),
        pkg(
            "nvidia-container-toolkit",
            rev,
            repo="container",
            depends=[
                f"nvidia-container-toolkit-base (= {rev})",
                f"libnvidia-container-tools ({'=' if refresh else '>='} {rev})",
                "libnvidia-container-tools (<< 2.0.0)",
            ],
            files={"/usr/bin/nvidia-container-runtime-hook": (stub, 0o755)},
        ),
    ]


# GDRCopy as its own Debian packaging builds it (NVIDIA/gdrcopy packages/: debian-lib, debian-tests, debian-meta and
# dkms/debian control files, dkms.conf, the postinst and gdrdrv.init). NVIDIA publishes these .debs for Ubuntu only
# (developer.download.nvidia.com/compute/redist/gdrcopy/CUDA <x.y>/ubuntu22_04/x64/..., a directory of files, no apt
# index) and RPMs for RHEL; Debian has no gdrcopy. A Debian fleet builds them (packages/build-deb-packages.sh) and
# serves them from its own repository: the mirror's "site" repository stands in for that one. Versions as the
# published files name them: 2.4.4 (no Debian revision: "Unpacking gdrdrv-dkms:amd64 (2.4.4)", deepseek-ai/DeepEP#11)
# and 2.5.1-1.
GDRCOPY = ["2.4.4", "2.5.1-1"]

# gdrdrv.init's behaviour (packages/dkms/debian/gdrdrv.init): check that nvidia is loaded, modprobe gdrdrv, mknod
# /dev/gdrdrv from its major in /proc/devices; every step reported through the LSB functions, whose log_failure_msg
# returns 0, so the script exits 0 whatever failed. Written anew; not NVIDIA's text.
GDRDRV_INIT = """#!/bin/bash
### BEGIN INIT INFO
# Provides:       gdrcopy
# Required-Start:
# Required-Stop:
# Default-Start: 2 3 4 5
# Default-Stop: 0 1 6
# Description: GDRCopy kernel-mode driver (gpufleet.stack test mirror stand-in)
### END INIT INFO
. /lib/lsb/init-functions

start() {
    echo -n "Checking required modules: "
    grep -qw '^nvidia' /proc/modules && log_success_msg || log_failure_msg
    if ! grep -qw '^gdrdrv' /proc/modules; then
        echo -n "Loading gdrdrv kernel module: "
        /sbin/modprobe gdrdrv && log_success_msg || log_failure_msg
    fi
    echo -n "Initializing GDRcopy /dev entries: "
    major=$(awk '$2 == "gdrdrv" {print $1; exit}' /proc/devices)
    rm -f /dev/gdrdrv
    [ -n "$major" ] && mknod -m 666 /dev/gdrdrv c "$major" 0 && log_success_msg || log_failure_msg
}

stop() {
    echo -n "Unloading gdrdrv kernel module: "
    /sbin/rmmod gdrdrv && log_success_msg || log_failure_msg
    rm -f /dev/gdrdrv
}

case "$1" in
    start) start ;;
    stop) stop ;;
    restart) stop; start ;;
    *) echo "Usage: $0 {start|stop|restart}"; exit 1 ;;
esac
exit 0
"""
# debhelper's postinst-init (compat 9, as gdrcopy's dkms/debian/compat says; Debian's debhelper 13.11.4): enable the
# script, start it, and fail the configuration when the start fails (it does not: see GDRDRV_INIT).
INIT_POSTINST = """if [ "$1" = configure ] && [ -x /etc/init.d/gdrdrv ]; then
    update-rc.d gdrdrv defaults >/dev/null
    invoke-rc.d gdrdrv start || exit 1
fi
"""


def gdrcopy_packages(deb):
    """gdrdrv-dkms, libgdrapi, gdrcopy-tests and the gdrcopy metapackage at one version, with their real relations."""
    ver = deb.split("-")[0]
    major_minor = ".".join(ver.split(".")[:2])
    return [
        pkg(
            "gdrdrv-dkms",
            deb,
            depends=["dkms (>= 1.95)"],
            files={
                **kmod_source.gdrdrv_files(ver),
                "/etc/init.d/gdrdrv": (GDRDRV_INIT, 0o755),
            },
            postinst="#!/bin/sh\nset -e\n" + kmod_source.GDRDRV_POSTINST.format(ver=ver) + INIT_POSTINST,
            prerm="#!/bin/sh\nset -e\n" + kmod_source.GDRDRV_PRERM.format(ver=ver),
            repo="site",
            Source="gdrdrv-dkms",
            Multi_Arch="same",
        ),
        pkg(
            "libgdrapi",
            deb,
            files={f"{LIB}/libgdrapi.so.{major_minor}": (("stub", "gdr_open", 0), 0o644)},
            links={f"{LIB}/libgdrapi.so.2": f"libgdrapi.so.{major_minor}"},
            postinst=sh("ldconfig"),
            repo="site",
            Source="libgdrapi",
            Multi_Arch="same",
            Replaces="gdrcopy (<= 2.2-1)",
            Conflicts="gdrcopy (<= 2.2-1)",
        ),
        pkg(
            "gdrcopy-tests",
            deb,
            depends=[f"libgdrapi (>= {deb})"],
            files={
                "/usr/bin/gdrcopy_sanity": (sh('echo "gdrcopy_sanity (gpufleet.stack test mirror stand-in)"'), 0o755)
            },
            repo="site",
            Source="gdrcopy-tests",
            Replaces="gdrcopy (<= 2.2-1)",
            Conflicts="gdrcopy (<= 2.2-1)",
        ),
        pkg(
            "gdrcopy",
            deb,
            depends=[f"gdrdrv-dkms (= {deb})", f"libgdrapi (= {deb})", f"gdrcopy-tests (= {deb})"],
            repo="site",
            Source="gdrcopy",
        ),
    ]


def catalog(ctk_source, dist="debian12", key=b"", url=DEFAULT_URL, *, dcgmi_source="", exporter_source=""):
    """Every package of the mirror for one distribution; the driver as NVIDIA's repository has it (driver_graph.py:
    ~60 packages a version, cuda-keyring, pinning packages, 580 and its unsuffixed Fabric Manager)."""
    out = [keyring_package(dist, key, url)]
    for ver in DRIVERS:
        out += driver_packages(ver, dist)
    seen = set()
    out = [p for p in out if (p["name"], p["version"]) not in seen and not seen.add((p["name"], p["version"]))]
    out.append(from_stanza(driver_graph.NVLSM, files=NVLSM_FILES))
    for deb in GDRCOPY:
        out += gdrcopy_packages(deb)
    for xy in TOOLKITS:
        out += toolkit_packages(xy)
    for entry in CUDNN:
        out += cudnn_packages(*entry)
    out.append(pkg("cudnn9-cuda-12", "9.8.0.87-1", depends=["libcudnn9-dev-cuda-12 (= 9.8.0.87-1)"]))
    for ver, cuda in NCCL:
        out += nccl_packages(ver, cuda)
    for ver, commit in CONTAINER_TOOLKIT.items():
        out += container_packages(ver, commit, ctk_source)
    for ver, cudas in DCGM.items():
        out += dcgm_packages(ver, cudas, dcgmi_source)
    out.append(dcgm3_package(DCGM3, dcgmi_source))
    for ver, dcgm in DCGM_EXPORTER.items():
        out.append(dcgm_exporter_package(ver, dcgm, exporter_source))
    return out
