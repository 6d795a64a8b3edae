"""Make a node's simulated GPU report what a damaged or hostile node can: a name whose bytes are not UTF-8 (a damaged
InfoROM) holding HTML, a serial with terminal escapes, and a kernel log line (the simulator's stand-in for dmesg) a
megabyte long, with markup where the process name goes. NVML's own strings stay within NVML's buffer sizes (96 bytes
for a name, 30 for a serial: nvml.h), as the simulator enforces; the kernel log has no such bound.
Prints "changed" when it changed the profile, "ok" when it already was so (Molecule's idempotence step)."""

import json

PATH = "/etc/gpufleet/nvml-sim/profile.json"
XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=<script>alert(1)</script>|*x*, GPU has fallen off the bus. "

with open(PATH, encoding="utf-8") as f:
    profile = json.load(f)
gpu, host = profile["gpus"][0], profile["host"]
want_gpu = {"name": "Tesla T4 \udcff<img src=x onerror=alert(1)>", "serial": "\u001b[31m1324\u0007"}
want_xid = [XID + "A" * (1 << 20)]
if all(gpu.get(k) == v for k, v in want_gpu.items()) and host.get("xid_lines") == want_xid:
    print("ok")
else:
    gpu.update(want_gpu)
    host["xid_lines"] = want_xid
    with open(PATH, "w", encoding="utf-8") as f:
        json.dump(profile, f)
    print("changed")
