#!/usr/bin/env bash
# Install the NVML simulator and a profile into a sandbox node, laid out like a driver package would.
#
#   sandbox/nvml-sim/install-node.sh --root DIR       PROFILE [--driver-version V] [--libdir PATH]
#   sandbox/nvml-sim/install-node.sh --container NAME PROFILE [--driver-version V] [--libdir PATH] [--no-driver]
#
# PROFILE: a profile name (profiles/NAME.json), a profile file, or an nvidia-smi -q -x dump.
# Installs, under DIR or into the running container NAME (docker cp + docker exec ldconfig):
#   $LIBDIR/libnvidia-ml.so.<driver version>       the simulator (LIBDIR default /usr/lib/x86_64-linux-gnu)
#   $LIBDIR/libnvidia-ml.so.1 -> libnvidia-ml.so.<driver version>
#   /etc/gpufleet/nvml-sim/profile.json             the default profile path the library reads
#   /etc/gpufleet/nvml-sim/gpufleet-nvml-sim        marker: key=value lines (profile, driver_version, source)
# --driver-version bakes a version into the library (default: the profile's driver_version), as a
# driver package ships the libnvidia-ml of its own version.
# --no-driver: GPUs without a driver: only the profile (its host.kernel_module_version and GPU processes removed:
# nothing runs on a node without a driver), no library, so
# the driver package a role installs (the offline mirror's libnvidia-ml1 ships the simulator) decides what NVML
# reports — and an upgrade changes it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root_dir="$(cd "$here/../.." && pwd)"
dest_root="" container="" profile="" driver_version="" libdir="/usr/lib/x86_64-linux-gnu" no_driver=""
usage() { sed -n '2,19p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --root) dest_root="$2"; shift 2 ;;
        --container) container="$2"; shift 2 ;;
        --driver-version) driver_version="$2"; shift 2 ;;
        --libdir) libdir="$2"; shift 2 ;;
        --no-driver) no_driver=1; shift ;;
        -h|--help) usage ;;
        -*) echo "install-node: unknown option $1" >&2; usage ;;
        *) [ -z "$profile" ] || { echo "install-node: one PROFILE only (got $profile and $1)" >&2; exit 2; }
           profile="$1"; shift ;;
    esac
done
[ -n "$profile" ] || { echo "install-node: PROFILE missing" >&2; usage; }
if { [ -n "$dest_root" ] && [ -n "$container" ]; } || { [ -z "$dest_root" ] && [ -z "$container" ]; }; then
    echo "install-node: give exactly one of --root DIR or --container NAME" >&2
    exit 2
fi

stage="$(mktemp -d)"
# The stage is unpacked over the node's / : mktemp's 0700 would become the mode of / itself.
chmod 0755 "$stage"
trap 'rm -rf "$stage"' EXIT

# Resolve the profile the way replay does: a file, a shipped name, or an XML dump to convert.
src="$profile"
[ -f "$src" ] || src="$here/profiles/$profile.json"
[ -f "$src" ] || { echo "install-node: no profile file or name '$profile' (see $here/profiles/)" >&2; exit 2; }
mkdir -p "$stage/etc/gpufleet/nvml-sim"
if head -c 256 "$src" | grep -q '^[[:space:]]*<'; then
    python3 "$here/import-smi-xml" "$src" -o "$stage/etc/gpufleet/nvml-sim/profile.json"
else
    cp "$src" "$stage/etc/gpufleet/nvml-sim/profile.json"
fi
if [ -z "$driver_version" ]; then
    driver_version="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("driver_version") or "")' \
        "$stage/etc/gpufleet/nvml-sim/profile.json")"
fi
[ -n "$driver_version" ] || { echo "install-node: profile has no driver_version; pass --driver-version" >&2; exit 2; }

if [ -n "$no_driver" ]; then
    python3 - "$stage/etc/gpufleet/nvml-sim/profile.json" <<'PY'
import json, sys
profile = json.load(open(sys.argv[1]))
profile.get("host", {}).pop("kernel_module_version", None)
# A node whose driver is not installed yet runs no GPU jobs: its GPUs (and MIG devices) start idle.
for gpu in profile.get("gpus", []):
    gpu.pop("processes", None)
    for device in (gpu.get("mig") or {}).get("devices", []):
        device.pop("processes", None)
json.dump(profile, open(sys.argv[1], "w"), indent=1)
PY
    driver_version="none"
else
    lib="$("$here/build.sh" "$root_dir/.cache/nvml-sim/lib-$driver_version" --driver-version "$driver_version")"
    mkdir -p "$stage$libdir"
    cp "$lib" "$stage$libdir/libnvidia-ml.so.$driver_version"
    ln -s "libnvidia-ml.so.$driver_version" "$stage$libdir/libnvidia-ml.so.1"
fi
printf 'profile=%s\ndriver_version=%s\nsource=%s\n' "$(basename "$src")" "$driver_version" \
    "gpufleet.stack sandbox/nvml-sim/install-node.sh" > "$stage/etc/gpufleet/nvml-sim/gpufleet-nvml-sim"

if [ -n "$dest_root" ]; then
    mkdir -p "$dest_root"
    # Replace, do not merge: a previous version's library must not linger next to the new one.
    rm -f "$dest_root$libdir"/libnvidia-ml.so.*
    cp -a "$stage/." "$dest_root/"
    # No ldconfig here: the libnvidia-ml.so.1 link is in place; the node runs ldconfig when it boots or installs.
    echo "installed ${no_driver:+no }${no_driver:-$driver_version }simulator and $(basename "$src") under $dest_root"
else
    # A library a driver package installed (the mirror's libnvidia-ml1) is the package's: --no-driver keeps it.
    keep_packaged="${no_driver:+dpkg-query -W -f '\${Status}' libnvidia-ml1 2>/dev/null | grep -q 'ok installed' ||}"
    docker exec "$container" sh -c "$keep_packaged rm -f '$libdir'/libnvidia-ml.so.*; mkdir -p '$libdir' /etc/gpufleet/nvml-sim"
    tar -C "$stage" -cf - . | docker exec -i "$container" tar -C / -xf -
    docker exec "$container" ldconfig
    echo "installed $driver_version simulator and $(basename "$src") into container $container"
fi
