"""A stand-in for scontrol and squeue (one script, by its name) over a JSON state file, printing what Slurm 22.05
prints (tests/unit/slurm/fixtures are the recorded originals). State file: $FAKE_SLURM_STATE, with
{"name", "flags", "reason", "by", "gres", "jobs": [{"id", "user", "name", "until"}], "invalid": bool, "calls": [],
"reservations": {name: {"nodes": [...], "flags", "users", "duration"}}}.
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


# As fixtures/reservation.txt (recorded from the sandbox cluster's slurmctld 22.05): Slurm adds SPEC_NODES.
RESERVATION = """ReservationName={name} StartTime=2026-12-07T12:49:53 EndTime=2026-12-07T13:49:53 Duration=01:00:00
   Nodes={nodes} NodeCnt={count} CoreCnt={count} Features=(null) PartitionName=(null) Flags={flags}
   TRES=cpu={count}
   Users={users} Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a
   MaxStartDelay=(null)

"""


def hostlist(nodes):
    """Slurm's compressed form of names that share a prefix: mn-gpu1,mn-gpu2 -> mn-gpu[1-2] (others joined)."""
    stems = {n.rstrip("0123456789") for n in nodes}
    numbers = sorted(int(n[len(n.rstrip("0123456789")) :]) for n in nodes if n[-1:].isdigit())
    if len(stems) == 1 and len(numbers) == len(nodes) > 1 and numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"{stems.pop()}[{numbers[0]}-{numbers[-1]}]"
    return ",".join(nodes)


def hostnames(text):
    if "[" not in text:
        return text.split(",")
    stem, rest = text.split("[", 1)
    low, high = rest.rstrip("]").split("-")
    return [f"{stem}{i}" for i in range(int(low), int(high) + 1)]


def reservation(data, args):  # noqa: PLR0911 - one return per command modelled
    """scontrol show/create/update/delete reservation, and show hostnames."""
    held = data.setdefault("reservations", {})
    if args[:2] == ["show", "hostnames"]:
        print("\n".join(hostnames(args[2])))
        return 0
    if args[:2] == ["show", "reservation"]:
        found = held.get(args[2])
        if not found:
            print(f"Reservation {args[2]} not found", file=sys.stderr)
            return 1
        print(RESERVATION.format(name=args[2], nodes=hostlist(found["nodes"]), count=len(found["nodes"]),
                                 flags=found["flags"], users=found["users"]), end="")  # fmt: skip
        return 0
    fields = dict(a.split("=", 1) for a in args if "=" in a)
    name = fields["ReservationName"]
    if args[0] == "create":
        unknown = [n for n in fields["Nodes"].split(",") if n not in data.get("known", [n])]
        if unknown:
            print("Error creating the reservation: Invalid node name specified", file=sys.stderr)
            return 1
        if name in held:
            print("Error creating the reservation: Duplicate reservation name", file=sys.stderr)
            return 1
        flags = fields["Flags"].replace("IGNORE_JOBS", "IGNORE_JOBS,SPEC_NODES")
        held[name] = {"nodes": fields["Nodes"].split(","), "flags": flags, "users": fields["Users"]}
        print(f"Reservation created: {name}")
    elif args[0] == "update":
        held[name]["nodes"] = fields["Nodes"].split(",")
        print("Reservation updated.")
    elif args[0] == "delete" and held.pop(name, None) is None:
        print(f"delete_reservation ReservationName={name}: Requested reservation is invalid", file=sys.stderr)
        return 1
    save(data)
    return 0


def main(tool, args):  # noqa: PLR0911 - one return per command modelled
    data = load()
    data.setdefault("calls", []).append([tool, *args])
    save(data)
    if tool == "squeue":
        for job in running(data):
            print(
                f"{job['id']}|{job['user']}|{job['name']}|RUNNING|0:{int(time.time() - job.get('start', 0)) % 60:02d}"
            )
        return 0
    if "reservation" in args[:2] or "hostnames" in args[:2] or any(a.startswith("ReservationName=") for a in args):
        return reservation(data, args)
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
