"""The profile reader is C: damaged profiles must give an NVML error, never a crash or memory error."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pynvml as n

from .conftest import PROFILES, build

FUZZ = Path(__file__).with_name("_fuzz.py")


def sanitizer_runtime():
    """Paths of GCC's ASan/UBSan runtimes to preload into Python, or None when the toolchain lacks them."""
    paths = []
    for name in ("libasan.so", "libubsan.so"):
        out = subprocess.run(["cc", f"-print-file-name={name}"], capture_output=True, text=True, check=False)
        path = out.stdout.strip()
        if not os.path.isabs(path):  # cc echoes the bare name when it has no such library
            return None
        paths.append(path)
    return paths


def test_damaged_profiles_fail_cleanly(tmp_path, libdir):
    runtime = sanitizer_runtime()
    env = dict(os.environ, LD_LIBRARY_PATH=str(libdir))
    if runtime:
        # Same sources under AddressSanitizer/UBSan, so an out-of-bounds read fails the test even if it would not crash.
        asan_dir = build(
            tmp_path / "asan", cflags="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined"
        )
        env.update(
            LD_LIBRARY_PATH=str(asan_dir),
            LD_PRELOAD=" ".join(runtime),
            ASAN_OPTIONS="detect_leaks=0",  # CPython itself leaks at exit by design
        )
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    proc = subprocess.run(
        [sys.executable, str(FUZZ), str(PROFILES), str(scratch), "600", "7"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "AddressSanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr[-3000:]
    codes = {int(k): v for k, v in json.loads(proc.stdout).items()}
    # Most damage breaks the JSON (UNKNOWN); some leaves a valid profile that initialises.
    assert set(codes) <= {
        n.NVML_SUCCESS,
        n.NVML_ERROR_UNKNOWN,
        n.NVML_ERROR_DRIVER_NOT_LOADED,
        n.NVML_ERROR_LIB_RM_VERSION_MISMATCH,
        n.NVML_ERROR_MEMORY,
    }
    assert codes.get(n.NVML_ERROR_UNKNOWN, 0) > 0 and codes.get(n.NVML_SUCCESS, 0) > 0
