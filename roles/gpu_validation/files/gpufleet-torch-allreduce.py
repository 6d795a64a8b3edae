# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One rank of gpufleet's multi-node all-reduce: srun starts one per node (gpufleet.stack.multinode_validate).

torch.distributed over NCCL where CUDA is available, else Gloo (GPUFLEET_BACKEND overrides). Each rank fills a tensor
with rank + 1, all-reduces it (sum) and checks every element is world * (world + 1) / 2, then times GPUFLEET_ITERS
more all-reduces of GPUFLEET_BYTES bytes. It prints one line, "GPUFLEET-MULTINODE <json>", and exits 0 when correct.
The rendezvous is MASTER_ADDR:MASTER_PORT (rank 0 listens there); rank and world come from Slurm.
"""

import datetime
import json
import os
import socket
import sys
import time


def run(out):
    import torch
    import torch.distributed as dist

    out["torch"] = torch.__version__
    backend = os.environ.get("GPUFLEET_BACKEND", "auto")
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    out["backend"] = backend
    device = "cpu"
    if backend == "nccl":
        local = int(os.environ.get("SLURM_LOCALID", "0"))
        torch.cuda.set_device(local)
        device = f"cuda:{local}"
    world = out["world"]
    dist.init_process_group(
        backend,
        init_method=f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}",
        rank=out["rank"],
        world_size=world,
        timeout=datetime.timedelta(seconds=int(os.environ.get("GPUFLEET_TIMEOUT", "120"))),
    )
    count = max(1, int(os.environ.get("GPUFLEET_BYTES", str(16 << 20))) // 4)
    tensor = torch.full((count,), float(out["rank"] + 1), dtype=torch.float32, device=device)
    dist.all_reduce(tensor)
    expected = world * (world + 1) / 2
    out["expected"] = expected
    out["value"] = tensor[0].item()
    out["ok"] = bool(torch.all(tensor == expected).item())
    iters = max(1, int(os.environ.get("GPUFLEET_ITERS", "5")))
    dist.barrier()
    if device != "cpu":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _iteration in range(iters):
        dist.all_reduce(tensor)
    if device != "cpu":
        torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / iters
    algbw = count * 4 / seconds / 1e9
    # nccl-tests' bus bandwidth for all-reduce: algbw * 2 (n - 1) / n (NVIDIA/nccl-tests doc/PERFORMANCE.md).
    out.update(bytes=count * 4, seconds=round(seconds, 6), algbw_gbs=round(algbw, 3))
    out["busbw_gbs"] = round(algbw * 2 * (world - 1) / world, 3)
    dist.destroy_process_group()


def main():
    out = {
        "rank": int(os.environ.get("SLURM_PROCID", "0")),
        "world": int(os.environ.get("SLURM_NTASKS", "1")),
        "node": os.environ.get("SLURMD_NODENAME") or socket.gethostname(),
        "ok": False,
    }
    try:
        run(out)
    except Exception as exc:  # every failure is reported in the rank's line
        out["ok"] = False
        out["error"] = f"{type(exc).__name__}: {exc}"[:500]
    print("GPUFLEET-MULTINODE " + json.dumps(out, sort_keys=True), flush=True)
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
