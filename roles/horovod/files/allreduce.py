"""Two-process smoke check shipped by gpufleet.stack.horovod: every rank sums the ranks with hvd.allreduce.

Each rank prints one line, GPUFLEET_ALLREDUCE {"rank", "size", "sum"}; the role checks that every rank reports
size * (size - 1) / 2, i.e. that the processes really exchanged tensors.
"""

import json

import horovod.torch as hvd
import torch

hvd.init()
total = hvd.allreduce(torch.tensor([float(hvd.rank())]), op=hvd.Sum, name="gpufleet_smoke")
print("GPUFLEET_ALLREDUCE " + json.dumps({"rank": hvd.rank(), "size": hvd.size(), "sum": total.item()}), flush=True)
