"""A small stand-in for NVIDIA's dcgm-exporter, shipped as /usr/bin/dcgm-exporter by the test mirror's
datacenter-gpu-manager-exporter package.

What the collection and its alert rules depend on, as the real exporter does it (NVIDIA/dcgm-exporter: pkg/cmd/app.go,
etc/default-counters.csv, README): `-f` names the counters file (`DCGM field, Prometheus type, help` lines, `#`
comments), `-a` the listen address (default `:9400`), GET /metrics answers the Prometheus text format, one sample
per GPU and field with the labels gpu, UUID, pci_bus_id, device, modelName, Hostname, and each `label`-type field
(DCGM_FI_DRIVER_VERSION) as a label on every sample. The values come from the NVML simulator's profile, which is
what DCGM would read through NVML. Fields it cannot model are left out (the real exporter exports every field
DCGM knows); an unknown field name stops it at start, as the real one does.
"""

import argparse
import json
import re
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROFILE = "/etc/gpufleet/nvml-sim/profile.json"


def remapped(gpu, key):
    return (
        int(bool((gpu.get("remapped_rows") or {}).get(key)))
        if key == "failure"
        else int((gpu.get("remapped_rows") or {}).get(key) or 0)
    )


def fb_free(gpu):
    memory = gpu.get("memory") or {}
    return max(0, memory.get("total_mib", 0) - memory.get("reserved_mib", 0) - memory.get("used_mib", 0))


XID = re.compile(r"Xid \(PCI:([0-9a-fA-F]+:[0-9a-fA-F]+:[0-9a-fA-F]+)\): (\d+)")


def last_xids(profile):
    """{pci bus "0000:18:00": the last Xid the kernel log names for it}, from the profile's kernel log lines."""
    found = {}
    for line in (profile.get("host") or {}).get("xid_lines") or []:
        match = XID.search(line)
        if match:
            found[match.group(1).lower()[-10:]] = int(match.group(2))
    return found


def bus(gpu):
    """NVML's "00000000:18:00.0" -> "0000:18:00", as the kernel's Xid lines name a GPU."""
    return str((gpu.get("pci") or {}).get("bus_id", "")).lower().rsplit(".", 1)[0][-10:]


# DCGM field -> value from a GPU of the profile.
FIELDS = {
    "DCGM_FI_DEV_SM_CLOCK": lambda g: (g.get("clocks") or {}).get("sm", 0),
    "DCGM_FI_DEV_MEM_CLOCK": lambda g: (g.get("clocks") or {}).get("memory", 0),
    "DCGM_FI_DEV_GPU_TEMP": lambda g: (g.get("temperature") or {}).get("gpu", 0),
    "DCGM_FI_DEV_SLOWDOWN_TEMP": lambda g: (g.get("temperature") or {}).get("slowdown", 0),
    "DCGM_FI_DEV_POWER_USAGE": lambda g: (g.get("power") or {}).get("usage_w", 0),
    "DCGM_FI_DEV_GPU_UTIL": lambda g: (g.get("utilization") or {}).get("gpu", 0),
    "DCGM_FI_DEV_FB_FREE": fb_free,
    "DCGM_FI_DEV_FB_USED": lambda g: (g.get("memory") or {}).get("used_mib", 0),
    "DCGM_FI_DEV_XID_ERRORS": lambda g: g.get("_last_xid", 0),
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": lambda g: remapped(g, "uncorrectable"),
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": lambda g: remapped(g, "correctable"),
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": lambda g: remapped(g, "failure"),
}
LABEL_FIELDS = {"DCGM_FI_DRIVER_VERSION": lambda profile: profile.get("driver_version", "")}
# Fields DCGM has that this stand-in does not model: accepted in the file, not exported.
KNOWN_UNMODELLED = {
    "DCGM_FI_DEV_MEMORY_TEMP",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_ENC_UTIL",
    "DCGM_FI_DEV_DEC_UTIL",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
}


def read_counters(path):
    counters = []
    with open(path) as handle:
        for raw in handle:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            name, kind, help_text = (part.strip() for part in line.split(",", 2))
            if name not in FIELDS and name not in LABEL_FIELDS and name not in KNOWN_UNMODELLED:
                sys.exit(f'level=fatal msg="Could not find DCGM field" field={name}')
            counters.append((name, kind, help_text))
    return counters


def render(counters, profile, hostname):
    xids = last_xids(profile)
    gpus = [
        dict(g, _last_xid=xids.get(bus(g), 0))
        for g in profile.get("gpus", [])
        if g.get("nvml_visible", True) is not False
    ]
    extra = "".join(f',{n}="{LABEL_FIELDS[n](profile)}"' for n, kind, _h in counters if kind == "label")
    lines = []
    for name, kind, help_text in counters:
        if kind == "label" or name not in FIELDS:
            continue
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
        for index, gpu in enumerate(gpus):
            labels = (
                f'gpu="{index}",UUID="{gpu.get("uuid", "")}",pci_bus_id="{(gpu.get("pci") or {}).get("bus_id", "")}",'
                f'device="nvidia{gpu.get("minor_number", index)}",modelName="{gpu.get("name", "")}",'
                f'Hostname="{hostname}"{extra}'
            )
            lines.append(f"{name}{{{labels}}} {FIELDS[name](gpu)}")
    return "\n".join(lines) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(prog="dcgm-exporter")
    parser.add_argument("-f", "--collectors", default="/etc/dcgm-exporter/default-counters.csv")
    parser.add_argument("-a", "--address", default=":9400")
    args, _rest = parser.parse_known_args(argv)
    counters = read_counters(args.collectors)
    host, _sep, port = args.address.rpartition(":")
    hostname = socket.gethostname()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            try:
                with open(PROFILE) as handle:
                    profile = json.load(handle)
            except OSError:
                profile = {"gpus": []}
            body = render(counters, profile, hostname).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer((host or "0.0.0.0", int(port)), Handler)
    print(f'level=info msg="Starting webserver" address={args.address}', flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
