"""The hold on an upgrade batch's nodes: Slurm's reservation as scontrol shows it (recorded from Debian 12's slurm-wlm
22.05 in fixtures/), and gpufleet.stack.slurm_reservation executed as Ansible runs it against the stand-in scontrol."""

import json
from pathlib import Path

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.slurm import scontrol as sl

FIXTURES = Path(__file__).with_name("fixtures")


def test_a_reservation_as_slurm_shows_it():
    held = sl.parse_reservation((FIXTURES / "reservation.txt").read_text())
    assert held == sl.parse_reservation((FIXTURES / "reservation.oneliner.txt").read_text())
    assert (held["name"], held["nodes"], held["users"], held["state"]) == (
        "gpufleet-upgrade-mn-gpu1",
        "mn-gpu[1-2]",
        ["root"],
        "ACTIVE",
    )
    assert {"MAINT", "IGNORE_JOBS"} <= set(held["flags"])
    assert held["end"].startswith("20")


@pytest.mark.parametrize("text", ["", "Reservation gpufleet-upgrade-x not found\n", "No reservations in the system\n"])
def test_no_reservation(text):
    assert sl.parse_reservation(text) is None


def test_the_hold_keeps_every_job_but_roots_off():
    fields = sl.reservation_fields("gpufleet-upgrade-gpu-1", ["gpu-1", "gpu-2"], 60, ["root"])
    assert fields == [
        "ReservationName=gpufleet-upgrade-gpu-1",
        "Nodes=gpu-1,gpu-2",
        "StartTime=now",
        "Duration=60",
        "Users=root",
        "Flags=MAINT,IGNORE_JOBS",
    ]


# --- gpufleet.stack.slurm_reservation through Ansible, against the stand-in -------------------------------------
@pytest.fixture
def hold(fake_slurm, exec_module, tmp_path):
    fake_slurm.write_text(json.dumps({"name": "gpu-1"}))

    def run(args, check_mode=False):
        args = {"name": "gpufleet-upgrade-gpu1", **args, "_ansible_check_mode": check_mode}
        result = exec_module("slurm_reservation", args, tmp_path, bin_dir=tmp_path / "bin")
        return (1 if result.get("failed") else 0), result

    def held():
        return json.loads(fake_slurm.read_text()).get("reservations", {})

    def calls():
        return [c[1:3] for c in json.loads(fake_slurm.read_text())["calls"]]

    return run, held, calls


def test_hold_move_and_end(hold):
    run, held, calls = hold
    rc, result = run({"nodes": ["gpu2", "gpu1"]})
    assert (rc, result["changed"]) == (0, True), result
    assert held()["gpufleet-upgrade-gpu1"]["nodes"] == ["gpu1", "gpu2"]
    assert result["reservation"]["nodes"] == "gpu[1-2]" and "MAINT" in result["reservation"]["flags"]
    # The same nodes again: Slurm's hostlist is expanded and compared, nothing is made twice.
    rc, result = run({"nodes": ["gpu1", "gpu2"]})
    assert (rc, result["changed"]) == (0, False), result
    # A batch whose first node is the same but whose others differ moves the hold.
    rc, result = run({"nodes": ["gpu1", "gpu3"]})
    assert (rc, result["changed"]) == (0, True)
    assert held()["gpufleet-upgrade-gpu1"]["nodes"] == ["gpu1", "gpu3"]
    assert ["update", "ReservationName=gpufleet-upgrade-gpu1"] in calls()
    rc, result = run({"state": "absent"})
    assert (rc, result["changed"], result["reservation"]) == (0, True, None)
    assert held() == {}
    rc, result = run({"state": "absent"})
    assert (rc, result["changed"]) == (0, False)


def test_check_mode_holds_nothing(hold):
    run, held, calls = hold
    rc, result = run({"nodes": ["gpu1", "gpu2"]}, check_mode=True)
    assert (rc, result["changed"]) == (0, True)
    assert held() == {}
    assert all(c[0] == "show" for c in calls())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"name": "a b"}, "name 'a b' is not a Slurm name"),
        ({"nodes": ["gpu1", "gpu2,gpu3"]}, "nodes 'gpu2,gpu3' is not a Slurm name"),
        ({"nodes": ["gpu1", "Nodes=ALL"]}, "nodes 'Nodes=ALL' is not a Slurm name"),
        ({"users": ["root", "-x"]}, "users '-x' is not a Slurm name"),
        ({"duration": 0}, "duration 0 is not 1 to 10080 minutes"),
        ({"nodes": []}, "nodes is empty: name the nodes to hold"),
    ],
)
def test_a_value_scontrol_would_read_otherwise_is_refused(hold, args, message):
    run, held, _calls = hold
    rc, result = run({"nodes": ["gpu1"], **args})
    assert rc != 0 and message in result["msg"], result
    assert held() == {}


def test_what_slurm_refuses_is_said(hold, fake_slurm):
    run, held, _calls = hold
    fake_slurm.write_text(json.dumps({"name": "gpu-1", "known": ["gpu1", "gpu2"]}))
    rc, result = run({"nodes": ["gpu1", "gpu9"]})
    assert rc != 0
    assert "create reservation ReservationName=gpufleet-upgrade-gpu1 Nodes=gpu1,gpu9" in result["msg"]
    assert result["msg"].endswith("failed (rc 1): Error creating the reservation: Invalid node name specified")
    assert held() == {}
