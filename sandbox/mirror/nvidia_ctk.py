"""A small stand-in for NVIDIA's `nvidia-ctk`, shipped as /usr/bin/nvidia-ctk by the test mirror's
nvidia-container-toolkit-base package (mirror_build.py adds the shebang and fills in the version).

It answers what roles and tests call, with the real tool's flags, file formats and messages:
  nvidia-ctk --version
  nvidia-ctk runtime configure --runtime=docker|containerd [--config PATH] [--set-as-default] [--dry-run]
  nvidia-ctk cdi generate [--output FILE]
  nvidia-ctk cdi list [--spec-dir DIR]...   (the INFO count on stderr, as logrus writes it; kind=name lines on stdout)
  nvidia-ctk system create-dev-char-symlinks [--create-all] [--dev-char-path DIR] [--dry-run]
`runtime configure` merges into the existing config like the real one (other keys survive; comments in a
TOML file do not, as with the real tool). Behaviour reference:
https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html#configuration
"""

import argparse
import ctypes
import json
import os
import re
import stat
import sys

VERSION = "@VERSION@"
COMMIT = "@COMMIT@"
RUNTIME_BINARY = "/usr/bin/nvidia-container-runtime"
DEFAULT_CONFIGS = {"docker": "/etc/docker/daemon.json", "containerd": "/etc/containerd/config.toml"}
BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def info(msg):
    sys.stderr.write(f"INFO[0000] {msg}\n")


def fail(msg):
    sys.stderr.write(f"ERRO[0000] {msg}\n")
    sys.exit(1)


# --- docker ---------------------------------------------------------------------------------------------
def docker_config(text, set_default):
    config = json.loads(text) if text and text.strip() else {}
    if not isinstance(config, dict):
        fail("unable to load config: expected a JSON object")
    config.setdefault("runtimes", {})["nvidia"] = {"args": [], "path": "nvidia-container-runtime"}
    if set_default:
        config["default-runtime"] = "nvidia"
    return json.dumps(config, indent=4) + "\n"


# --- containerd -----------------------------------------------------------------------------------------
def toml_key(key):
    return key if BARE_KEY.match(key) else json.dumps(key)


def toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def toml_dump(data, path=(), out=None):
    out = [] if out is None else out
    scalars = {k: v for k, v in data.items() if not isinstance(v, dict)}
    tables = {k: v for k, v in data.items() if isinstance(v, dict)}
    if path and (scalars or not tables):
        out.append("\n[" + ".".join(toml_key(p) for p in path) + "]")
    indent = "  " * max(len(path) - 1, 0) if path else ""
    out.extend(f"{indent}{toml_key(k)} = {toml_value(v)}" for k, v in scalars.items())
    for key, table in tables.items():
        toml_dump(table, (*path, key), out)
    return out


def containerd_config(text, set_default):
    import tomllib

    try:
        config = tomllib.loads(text or "")
    except tomllib.TOMLDecodeError as exc:
        fail(f"unable to load config: {exc}")
    # containerd 2.x (config version 3) moved the CRI runtime plugin.
    plugin = "io.containerd.cri.v1.runtime" if config.get("version") == 3 else "io.containerd.grpc.v1.cri"
    config.setdefault("version", 2)
    containerd = config.setdefault("plugins", {}).setdefault(plugin, {}).setdefault("containerd", {})
    containerd.setdefault("runtimes", {})["nvidia"] = {
        "privileged_without_host_devices": False,
        "runtime_engine": "",
        "runtime_root": "",
        "runtime_type": "io.containerd.runc.v2",
        "options": {"BinaryName": RUNTIME_BINARY},
    }
    if set_default:
        containerd["default_runtime_name"] = "nvidia"
    return "\n".join(toml_dump(config)).lstrip("\n") + "\n"


def runtime_configure(args):
    path = args.config or DEFAULT_CONFIGS[args.runtime]
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        text = ""
    merge = docker_config if args.runtime == "docker" else containerd_config
    try:
        new = merge(text, args.set_as_default)
    except ValueError as exc:
        fail(f"unable to load config for runtime {args.runtime}: {exc}")
    if args.dry_run:
        sys.stdout.write(new)
        return
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)
    info(f"Wrote updated config to {path}")
    info(f"It is recommended that {args.runtime} daemon be restarted.")


# --- cdi ------------------------------------------------------------------------------------------------
def nvml_devices():
    """(driver version, GPU UUIDs) from NVML, as the real tool discovers them."""
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        fail("failed to generate CDI spec: failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND")
    ret = nvml.nvmlInit_v2()
    if ret != 0:
        fail(f"failed to generate CDI spec: failed to initialize NVML: NVML error {ret}")
    version = ctypes.create_string_buffer(80)
    nvml.nvmlSystemGetDriverVersion(version, 80)
    count = ctypes.c_uint(0)
    nvml.nvmlDeviceGetCount_v2(ctypes.byref(count))
    uuids = []
    for index in range(count.value):
        handle = ctypes.c_void_p()
        buf = ctypes.create_string_buffer(96)
        if nvml.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) == 0:
            nvml.nvmlDeviceGetUUID(handle, buf, 96)
        uuids.append(buf.value.decode())
    nvml.nvmlShutdown()
    return version.value.decode(), uuids


def driver_libraries(version, libdir="/usr/lib/x86_64-linux-gnu"):
    """The driver's libraries of that version (lib*.so.<version>), which the real spec bind-mounts by their versioned
    names: the driver version a spec was generated for is written in every such path."""
    try:
        names = os.listdir(libdir)
    except OSError:
        return []
    return sorted(os.path.join(libdir, n) for n in names if n.startswith("lib") and n.endswith(f".so.{version}"))


def cdi_spec(version, uuids, driver_root="/"):
    lines = ["---", "cdiVersion: 0.5.0", "containerEdits:", "  deviceNodes:"]
    lines += [f"  - path: /dev/{n}" for n in ("nvidia-modeset", "nvidia-uvm", "nvidia-uvm-tools", "nvidiactl")]
    lines += ["  env:", "  - NVIDIA_VISIBLE_DEVICES=void", "  hooks:", "  - args:", "    - nvidia-cdi-hook",
              "    - enable-cuda-compat", f"    - --host-driver-version={version}", "    hookName: createContainer",
              "    path: /usr/bin/nvidia-cdi-hook", "  mounts:"]  # fmt: skip
    for lib in driver_libraries(version, os.path.join(driver_root, "usr/lib/x86_64-linux-gnu")):
        lines += [f"  - containerPath: {lib}", f"    hostPath: {lib}", "    options:", "    - ro", "    - nosuid",
                  "    - nodev", "    - bind"]  # fmt: skip
    lines.append("devices:")
    for index, uuid in enumerate(uuids):
        for name in (str(index), uuid):
            lines += ["- containerEdits:", "    deviceNodes:", f"    - path: /dev/nvidia{index}", f'  name: "{name}"']
    lines += ["- containerEdits:", "    deviceNodes:"]
    lines += [f"    - path: /dev/nvidia{i}" for i in range(len(uuids))]
    lines += ["  name: all", "kind: nvidia.com/gpu"]
    return "\n".join(lines) + "\n"


def cdi_generate(args):
    spec = cdi_spec(*nvml_devices(), driver_root=args.driver_root)
    if not args.output:
        sys.stdout.write(spec)
        return
    os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(spec)
    info("Generated CDI spec with version 0.5.0")


CDI_DIRS = ("/etc/cdi", "/var/run/cdi")


def cdi_list(args):
    """The fully qualified device names of the CDI specs in --spec-dir (default /etc/cdi and /var/run/cdi, as the real
    tool's), from each spec's `kind:` and its devices' `name:`, sorted as the real tool prints them (indexes, then
    UUIDs, then `all`: sandbox/mirror/recorded/nvidia-ctk-1.17.6-cdi-list-4gpu.txt)."""
    names = []
    for directory in args.spec_dir or CDI_DIRS:
        if not os.path.isdir(directory):
            continue
        for entry in sorted(os.listdir(directory)):
            if not entry.endswith((".yaml", ".yml", ".json")):
                continue
            with open(os.path.join(directory, entry), encoding="utf-8") as f:
                text = f.read()
            kind = re.search(r"(?m)^kind:\s*(\S+)", text)
            found = re.findall(r'(?m)^  name:\s*"?([^"\s]+)"?', text)
            names += [f"{kind.group(1)}={name}" for name in found] if kind else []
    info(f"Found {len(names)} CDI devices")
    for name in sorted(names):
        print(name)


# --- system ---------------------------------------------------------------------------------------------
def create_dev_char_symlinks(args):
    """/dev/char/MAJOR:MINOR -> ../<node> for each NVIDIA device node, as runc needs them to keep containers' GPU access
    across a systemd daemon-reload (nvidia-container-toolkit#48). --create-all: every GPU node too, not only those a
    process opened; here every node in /dev already exists, so both create the same links."""
    dev = os.path.join(args.driver_root, "dev")
    os.makedirs(args.dev_char_path, exist_ok=True)
    for name in sorted(os.listdir(dev)):
        path = os.path.join(dev, name)
        if not (name.startswith("nvidia") and os.path.exists(path)):
            continue
        st = os.stat(path)
        if not stat.S_ISCHR(st.st_mode):  # character devices only
            continue
        link = os.path.join(args.dev_char_path, f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")
        target = os.path.relpath(path, args.dev_char_path)
        if os.path.islink(link) and os.readlink(link) == target:
            continue
        if args.dry_run:
            info(f"Would create link {link} => {target}")
            continue
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(target, link)
        info(f"Creating link {link} => {target}")


def main(argv):
    parser = argparse.ArgumentParser(prog="nvidia-ctk", description="NVIDIA Container Toolkit CLI (test fixture)")
    parser.add_argument("--version", "-v", action="store_true")
    sub = parser.add_subparsers(dest="command")
    runtime = sub.add_parser("runtime").add_subparsers(dest="action", required=True)
    configure = runtime.add_parser("configure")
    configure.add_argument("--runtime", choices=["docker", "containerd"], default="docker")
    configure.add_argument("--config")
    configure.add_argument("--set-as-default", action="store_true")
    configure.add_argument("--dry-run", action="store_true")
    cdi = sub.add_parser("cdi").add_subparsers(dest="action", required=True)
    generate = cdi.add_parser("generate")
    # As the real CLI binds its flags to environment variables (nvidia-cdi-refresh.service sets this one).
    generate.add_argument("--output", default=os.environ.get("NVIDIA_CTK_CDI_OUTPUT_FILE_PATH"))
    generate.add_argument("--driver-root", default="/")
    cdi.add_parser("list").add_argument("--spec-dir", action="append")
    system = sub.add_parser("system").add_subparsers(dest="action", required=True)
    symlinks = system.add_parser("create-dev-char-symlinks")
    symlinks.add_argument("--create-all", action="store_true")
    symlinks.add_argument("--dev-char-path", default="/dev/char")
    symlinks.add_argument("--driver-root", default="/")
    symlinks.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    if args.version:
        print(f"NVIDIA Container Toolkit CLI version {VERSION}\ncommit: {COMMIT}")
    elif args.command == "runtime":
        runtime_configure(args)
    elif args.command == "cdi" and args.action == "list":
        cdi_list(args)
    elif args.command == "cdi":
        cdi_generate(args)
    elif args.command == "system":
        create_dev_char_symlinks(args)
    else:
        parser.print_help()
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
