"""A stand-in for scontrol and squeue (one script, by its name) over a JSON state file, printing what Slurm 22.05
prints (tests/unit/slurm/fixtures are the recorded originals). State file: $FAKE_SLURM_STATE, with
{"name", "flags", "reason", "by", "gres", "jobs": [{"id", "user", "name", "until"}], "invalid": bool, "calls": []}.
A job runs until its "until" (epoch seconds); scontrol update records each call. Run as `python3 fake_slurm.py TOOL
ARGS...` (the test puts scontrol and squeue wrappers on PATH)."""

import json
import os
import sys
import time

PATH = os.environ["FAKE_SLURM_STATE"]
TEMPLATE = """NodeName={name} Arch=x86_64 CoresPerSocket=1
   CPUAlloc={alloc} CPUEfctv=1 CPUTot=1 CPULoad=0.49
   AvailableFeatures=(null)
   ActiveFeatures=(null)
   Gres={gres}
   NodeAddr=127.0.0.1 NodeHostName={name} Port=7818 Version=22.05.8
   OS=Linux 6.1.0-28-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1
   RealMemory=1000 AllocMem=0 FreeMem=23242 Sockets=1 Boards=1
   State={state} ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=gpu
   BootTime=2026-12-02T04:22:15 SlurmdStartTime={slurmd}
   LastBusyTime=2026-12-02T04:31:23
   CfgTRES=cpu=1,mem=1000M,billing=1
   AllocTRES=
   CapWatts=n/a
   CurrentWatts=0 AveWatts=0
   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s
"""


def load():
    with open(PATH, encoding="utf-8") as f:
        return json.load(f)


def save(data):
    with open(PATH, "w", encoding="utf-8") as f:
        json.dump(data, f)


def running(data):
    return [j for j in data.get("jobs", []) if j["until"] > time.time()]


def show(data):
    jobs = running(data)
    flags = list(data.get("flags", []))
    if data.get("invalid"):
        flags.append("INVALID_REG")
    state = "+".join([("ALLOCATED" if jobs else "IDLE"), *flags])
    text = TEMPLATE.format(name=data["name"], alloc=1 if jobs else 0, gres=data.get("gres", "(null)"), state=state,
                           slurmd=data.get("slurmd", "2026-12-02T04:31:10"))  # fmt: skip
    if data.get("reason"):
        text += f"   Reason={data['reason']} [{data.get('by', 'root')}@2026-12-02T04:33:34]\n"
    return text


def main(tool, args):
    data = load()
    data.setdefault("calls", []).append([tool, *args])
    save(data)
    if tool == "squeue":
        for job in running(data):
            print(
                f"{job['id']}|{job['user']}|{job['name']}|RUNNING|0:{int(time.time() - job.get('start', 0)) % 60:02d}"
            )
        return 0
    if args[:2] == ["show", "node"]:
        if args[2] != data["name"]:
            print(f"Node {args[2]} not found", file=sys.stderr)
            return 1
        print(show(data), end="")
        return 0
    if args[:1] == ["update"]:
        fields = dict(a.split("=", 1) for a in args[1:])
        if fields["State"] == "DRAIN":
            data["flags"] = sorted(set(data.get("flags", [])) | {"DRAIN"})
            data["reason"], data["by"] = fields["Reason"], "root"
        elif fields["State"] == "RESUME":
            if data.get("invalid"):
                print("slurm_update error: Invalid node state specified", file=sys.stderr)
                return 1
            data["flags"] = [f for f in data.get("flags", []) if f != "DRAIN"]
            data["reason"] = ""
        save(data)
        return 0
    print(f"fake scontrol: {args} not modelled", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
