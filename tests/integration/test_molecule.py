"""Every Molecule scenario in molecule/, each a full `molecule test` (converge, idempotence, verify) on sandbox nodes.

`make molecule SCENARIO=name` runs one of them by hand.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted(p.parent.name for p in (ROOT / "molecule").glob("*/molecule.yml"))
SERVE = ROOT / "sandbox" / "mirror" / "serve"


@pytest.fixture(scope="module", autouse=True)
def mirror_stopped_afterwards():
    """Scenarios that install packages start the offline mirror (molecule/_shared/mirror.yml) and share it; stop
    it after the last one, unless it was already serving before (someone's `make demo`)."""
    serving_before = subprocess.run([SERVE, "status"], capture_output=True, check=False).returncode == 0
    yield
    if not serving_before:
        subprocess.run([SERVE, "stop"], capture_output=True, check=False)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_molecule_scenario(scenario):
    env = dict(os.environ, NO_COLOR="1", PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    proc = subprocess.run(
        [Path(sys.executable).parent / "molecule", "test", "-s", scenario],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"molecule test -s {scenario} failed ({proc.returncode}):\n{output[-20000:]}"
    # A scenario that ran no converge or verify has proved nothing.
    for step in ("converge", "idempotence", "verify"):
        assert f"{scenario} > {step}: Executed: Successful" in output, f"{step} did not run:\n{output[-5000:]}"


def test_every_scenario_is_found():
    assert "sandbox" in SCENARIOS
