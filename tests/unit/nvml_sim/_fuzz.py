"""Feed the simulator many damaged profiles (truncated, bytes replaced or cut) through nvmlInit and a few queries.

Run in a child process with the library on LD_LIBRARY_PATH: python _fuzz.py PROFILE_DIR SCRATCH COUNT SEED.
Prints the nvmlInit return codes seen; a crash or a sanitizer report is the failure the caller looks for.
"""

import ctypes
import json
import os
import random
import sys
from pathlib import Path


def mutate(rnd, text):
    data = bytearray(text)
    for _step in range(rnd.randint(1, 4)):
        if not data:
            break
        pos = rnd.randrange(len(data))
        roll = rnd.random()
        if roll < 0.3:
            del data[pos:]
        elif roll < 0.6:
            data[pos] = rnd.choice(b'{}[]",:\\0123456789eE.-+ntfu\x00\xff')
        else:
            del data[pos : pos + rnd.randint(1, 20)]
    return bytes(data)


def main(profile_dir, scratch, count, seed):
    lib = ctypes.CDLL("libnvidia-ml.so.1")
    lib.gpufleet_nvml_sim_host_json.restype = ctypes.c_char_p
    texts = [p.read_bytes() for p in sorted(Path(profile_dir).glob("*.json"))]
    rnd = random.Random(seed)
    codes = {}
    name = ctypes.create_string_buffer(96)
    for i in range(count):
        # A new path each time: the host JSON cache is keyed by path, so every mutation is parsed twice.
        path = Path(scratch) / f"p{i}.json"
        path.write_bytes(mutate(rnd, rnd.choice(texts)))
        os.environ["GPUFLEET_NVML_SIM_PROFILE"] = str(path)
        lib.gpufleet_nvml_sim_host_json()
        ret = lib.nvmlInit_v2()
        codes[ret] = codes.get(ret, 0) + 1
        if ret == 0:
            found = ctypes.c_uint()
            lib.nvmlDeviceGetCount_v2(ctypes.byref(found))
            for index in range(found.value):
                handle = ctypes.c_void_p()
                lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle))
                lib.nvmlDeviceGetName(handle, name, 96)
                procs = ctypes.c_uint(0)
                lib.nvmlDeviceGetComputeRunningProcesses_v3(handle, ctypes.byref(procs), None)
                mig = ctypes.c_void_p()
                lib.nvmlDeviceGetMigDeviceHandleByIndex(handle, 0, ctypes.byref(mig))
            lib.nvmlShutdown()
        path.unlink()
    print(json.dumps(codes))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
