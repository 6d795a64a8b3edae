#!/usr/bin/env bash
# Build the NVML simulator as libnvidia-ml.so.1.
#
#   sandbox/nvml-sim/build.sh [OUTDIR] [--driver-version V] [--cuda-version N]
#   make -C sandbox/nvml-sim [OUT=DIR] [DRIVER_VERSION=V] [CUDA_VERSION=N]
#
# OUTDIR defaults to sandbox/nvml-sim/build/. --driver-version bakes in the version the library reports
# (as a driver package's own libnvidia-ml would), overriding the profile's driver_version;
# --cuda-version does the same for nvmlSystemGetCudaDriverVersion (e.g. 12080).
# Extra compiler flags come from $CFLAGS (e.g. -fsanitize=address,undefined for the fuzz test).
# NVML's header is not vendored (NVIDIA license): it is taken from $NVML_SIM_HEADER_DIR, or from PyPI's
# nvidia-nvml-dev wheel cached under .cache/nvml-dev/ at the repo root (downloaded once with pip).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$here/build"
driver_version=""
cuda_version="0"
while [ $# -gt 0 ]; do
    case "$1" in
        --driver-version) driver_version="$2"; shift 2 ;;
        --cuda-version) cuda_version="$2"; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        -*) echo "build: unknown option $1 (use --driver-version V, --cuda-version N)" >&2; exit 2 ;;
        *) out="$1"; shift ;;
    esac
done
case "$driver_version" in *[!0-9.]*) echo "build: --driver-version must look like 570.133.20, got $driver_version" >&2; exit 2 ;; esac
case "$cuda_version" in ''|*[!0-9]*) echo "build: --cuda-version must be an integer such as 12080, got $cuda_version" >&2; exit 2 ;; esac

# One build at a time per checkout: Molecule scenarios run side by side and may start nodes of the same driver.
mkdir -p "$root/.cache"
exec 9>"$root/.cache/nvml-sim-build.lock"
flock 9

nvml_dev_version="13.5.37" # nvidia-nvml-dev wheel providing nvml.h (matches the 13.x pynvml in requirements)
header_dir="${NVML_SIM_HEADER_DIR:-}"
if [ -z "$header_dir" ]; then
    cache="$root/.cache/nvml-dev"
    found="$(find "$cache" -name nvml.h -path '*include*' 2>/dev/null | head -n1 || true)"
    if [ -z "$found" ]; then
        mkdir -p "$cache"
        python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$cache" "nvidia-nvml-dev==$nvml_dev_version" >&2
        python3 - "$cache" <<'PY'
import pathlib, sys, zipfile
cache = pathlib.Path(sys.argv[1])
for wheel in cache.glob("nvidia_nvml_dev-*.whl"):
    with zipfile.ZipFile(wheel) as z:
        z.extractall(cache)
PY
        found="$(find "$cache" -name nvml.h -path '*include*' | head -n1)"
    fi
    header_dir="$(dirname "$found")"
fi
[ -f "$header_dir/nvml.h" ] || { echo "build: no nvml.h in $header_dir (set NVML_SIM_HEADER_DIR)" >&2; exit 1; }

mkdir -p "$out"
lib="$out/libnvidia-ml.so.1"
stamp="$out/.build-flags"
flags="driver=$driver_version cuda=$cuda_version header=$header_dir cflags=${CFLAGS:-}"
# Rebuild only when a source changed or the baked-in versions differ: tests and replay call this often.
if [ -f "$lib" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$flags" ] \
    && [ -z "$(find "$here/src" "$here/build.sh" -newer "$lib" -type f 2>/dev/null)" ]; then
    echo "$lib"
    exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Export only the NVML API and our two marker symbols, like the real library's version script.
printf '{ global: nvml*; gpufleet_nvml_sim_*; local: *; };\n' > "$tmp/exports.map"
# shellcheck disable=SC2086 # CFLAGS is a list of flags
${CC:-cc} -shared -fPIC -O2 -std=gnu11 -Wall -Wextra -Wno-deprecated-declarations -Wno-unused-parameter ${CFLAGS:-} \
    -I"$header_dir" \
    -DGPUFLEET_NVML_SIM_BUILT_DRIVER_VERSION="\"$driver_version\"" \
    -DGPUFLEET_NVML_SIM_BUILT_CUDA_VERSION="$cuda_version" \
    -Wl,-soname,libnvidia-ml.so.1 -Wl,--version-script="$tmp/exports.map" \
    -o "$tmp/libnvidia-ml.so.1" "$here"/src/*.c -lpthread
mv -f "$tmp/libnvidia-ml.so.1" "$lib"
ln -sf libnvidia-ml.so.1 "$out/libnvidia-ml.so"
printf '%s' "$flags" > "$stamp"
echo "$lib"
