"""Every rule's verdicts (ok, warning, violation, unknown) on real version combinations from the sources."""

import datetime
import re
from pathlib import Path

import pytest
import yaml
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import engine as rules
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import inputs as si
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import matrix as mx

MATRIX = Path(__file__).resolve().parents[3] / "data" / "compat_matrix.yml"
TODAY = "2026-12-02"  # branches' end of life are judged on a fixed day
SANDBOX = Path(__file__).resolve().parents[3] / "inventories" / "sandbox" / "group_vars" / "all.yml"


def run(matrix, versions, expect=None, rule=None):
    checks = rules.evaluate(matrix, si.from_versions(versions), expect, today=TODAY)
    return [c for c in checks if rule is None or c["rule"] == rule]


def statuses(checks):
    return [c["status"] for c in checks]


def test_sandbox_desired_stack_is_compatible(matrix):
    stack = yaml.safe_load(SANDBOX.read_text())["gpufleet_stack"]
    checks = run(matrix, stack)
    # R580 LTSB at the September 2026 fixes, toolkit 1.19.1: nothing to warn about (test_shipped_stacks.py holds it
    # to the matrix on the day the tests run; here, on TODAY).
    assert [c for c in checks if c["status"] != "ok"] == [], checks
    assert rules.verdict(checks) == (True, None)
    # every family the stack touches was evaluated
    assert {c["rule"] for c in checks} >= {
        "driver_cuda",
        "driver_branch",
        "cudnn_cuda",
        "nccl_cuda",
        "framework_driver",
        "framework_libraries",
    }


@pytest.mark.parametrize(
    ("driver", "cuda", "status", "words"),
    [
        ("570.133.20", "12.8", "ok", "needs >= 570.26"),
        ("570.26", "12.8", "ok", "fully supported"),  # exactly the Table 3 floor
        ("535.54.03", "12.2", "ok", "fully supported"),
        ("535.54.03", "12.8", "warning", "minor-version compatibility"),  # a 12.x toolkit on an older 12.x driver
        ("525.60.13", "12.4", "warning", "upgrade the driver to >= 550.54.14"),
        ("520.61.05", "12.0", "violation", "or choose CUDA <= 11.8"),  # below the 12.x minor-compat floor
        ("570.133.20", "13.0", "violation", "needs driver >= 580.65.06"),  # new major: no minor compat across
        ("580.65.06", "13.0", "ok", "fully supported"),
        ("470.42.01", "11.8", "warning", "minor-version"),
        ("535", "12.2", "ok", "branch 535"),  # a branch pin
        ("535", "12.4", "warning", "minor-version"),
        # Toolkits past the Table 3 rows (pip's nvidia-cuda-runtime 13.5.37): the other rows decide what they can.
        ("570.133.20", "13.5", "violation", "needs a driver >= 580 (CUDA 13.x minor-version compatibility"),
        ("570", "13.5", "violation", "upgrade the driver to >= 580"),
        ("610.43.02", "13.5", "warning", "its branch 610 reports CUDA 13.3"),
        ("580", "13.5", "warning", "only through CUDA minor-version compatibility (>= 580)"),
        ("999.1.2", "13.5", "unknown", "branch is not in the matrix either"),
        ("570.133.20", "12.7", "ok", "its branch 570 reports CUDA 12.8"),  # 12.7 was never released
    ],
)
def test_driver_vs_cuda(matrix, driver, cuda, status, words):
    (c,) = run(matrix, {"driver": driver, "cuda": cuda}, rule="driver_cuda")
    assert c["status"] == status, c
    assert words in c["message"] or words in c["source"], c


def test_driver_branch_reports_highest_cuda(matrix):
    (c,) = run(matrix, {"driver": "550.54.14"}, rule="driver_branch")
    assert c["status"] == "ok" and "reports CUDA 12.4" in c["message"] and "by branch" in c["message"]
    (c,) = run(matrix, {"driver": "615.10"}, rule="driver_branch")
    assert c["status"] == "unknown"


def test_driver_branch_prefers_libcuda(matrix):
    stack = si.from_installed(
        {
            "driver": {
                "loaded_version": "570.133.20",
                "max_cuda": "12.8",
                "max_cuda_source": "libcuda cuDriverGetVersion",
            }
        }
    )
    (c,) = [x for x in rules.evaluate(matrix, stack, today=TODAY) if x["rule"] == "driver_branch"]
    assert c["source"] == "libcuda cuDriverGetVersion"


@pytest.mark.parametrize(
    ("versions", "status", "words"),
    [
        ({"cudnn": "8.9.7", "cuda": "13.0"}, "violation", "choose cuDNN >=9.13 for CUDA 13.0"),
        ({"cudnn": "8.9.7", "cuda": "12.2"}, "ok", "build for CUDA 12.2"),
        ({"cudnn": "9.8.0", "cuda": "12.8"}, "ok", "build for CUDA 12.8"),
        ({"cudnn": "9.6.0", "cuda": "13.0"}, "violation", "no build for CUDA 13.0"),  # CUDA 13 builds start at 9.13
        ({"cudnn": "9.13.0", "cuda": "13.0"}, "ok", ""),
        ({"cudnn": "9.12.0", "cuda": "11.8"}, "violation", "no build for CUDA 11.8"),  # CUDA 11 ends with 9.10
        ({"cudnn": "7.6.5", "cuda": "10.2"}, "unknown", "not in the matrix"),
    ],
)
def test_cudnn_vs_cuda(matrix, versions, status, words):
    (c,) = run(matrix, versions, rule="cudnn_cuda")
    assert c["status"] == status and words in c["message"], c


def test_cudnn_driver_floor(matrix):
    (c,) = run(matrix, {"driver": "520.61.05", "cudnn": "9.8.0", "cuda": "12.0"}, rule="cudnn_driver")
    assert c["status"] == "violation" and ">= 525.60.13" in c["message"]


def test_nccl(matrix):
    assert statuses(run(matrix, {"nccl": "2.26.2", "cuda": "12.8"}, rule="nccl_cuda")) == ["ok"]
    (c,) = run(matrix, {"nccl": "2.26.2", "cuda": "13.0"}, rule="nccl_cuda")
    assert c["status"] == "violation" and "CUDA 13.x" in c["message"]
    # a package build tag: "+cuda12.8" on a 13.0 toolkit is a different CUDA major
    (c,) = run(matrix, {"nccl": "2.27.7-1+cuda12.9", "cuda": "13.0"}, rule="nccl_cuda")
    assert c["status"] == "violation" and "built for CUDA 12.9" in c["message"]
    (c,) = run(matrix, {"driver": "535.54.03", "nccl": "2.26.2-1+cuda12.8", "cuda": "12.2"}, rule="nccl_driver")
    assert c["status"] == "warning"
    assert statuses(run(matrix, {"nccl": "2.3.5", "cuda": "10.0"}, rule="nccl_cuda")) == ["unknown"]


@pytest.mark.parametrize(
    ("framework", "driver", "status", "words"),
    [
        ({"name": "torch", "version": "2.7.1", "cuda": "12.8"}, "570.133.20", "ok", "cu128 wheel"),
        ("torch==2.7.1+cu128", "550.54.14", "warning", "minor-version"),
        ("torch==2.7.1", "550.54.14", "warning", "PyPI default cu126"),  # plain pip install gets cu126
        ("torch==2.8.0", "570.133.20", "ok", "PyPI default cu128"),
        ("torch==2.7.1+cu128", "520.61.05", "violation", "upgrade the driver"),
        ("torch==2.4.1", "535.54.03", "ok", "cu121"),
    ],
)
def test_framework_variant_vs_driver(matrix, framework, driver, status, words):
    (c,) = run(matrix, {"driver": driver, "framework": framework}, rule="framework_driver")
    assert c["status"] == status and words in c["message"], c


def test_framework_variant_that_does_not_exist(matrix):
    (c,) = run(matrix, {"framework": {"name": "torch", "version": "2.7.1", "cuda": "12.4"}}, rule="framework_cuda")
    assert c["status"] == "violation" and "no cu124 wheel" in c["message"] and "cu118, cu126, cu128" in c["message"]


def test_framework_unknown_and_cpu(matrix):
    assert statuses(run(matrix, {"framework": "torch==1.13.1"}, rule="framework_cuda")) == [
        "unknown"
    ]  # before the rows
    assert statuses(run(matrix, {"framework": "torch==2.13.0+cpu"}, rule="framework_cuda")) == ["ok"]


@pytest.mark.parametrize(
    ("framework", "driver", "rule", "want"),
    [
        # jax[cuda12]: pip's newest nvidia-cuda-runtime-cu12 (12.9.79) is what the driver must run.
        ("jax[cuda12]==0.12.0", "575.57.08", "framework_driver", ("ok", "(cu129 wheel, CUDA from jax[cuda12])")),
        ("jax[cuda12]==0.4.38", "535.161.08", "framework_driver", ("warning", "full support needs >= 575.51.03")),
        ("jax[cuda12]==0.12.0", "520.61.05", "framework_driver", ("violation", "upgrade the driver")),
        # jax[cuda13]: nvidia-cuda-runtime 13.5.37, newer than the Table 3 rows; R580 is CUDA 13's floor.
        ("jax[cuda13]==0.10.2", "570.172.08", "framework_driver", ("violation", "upgrade the driver to >= 580")),
        ("jax[cuda13]==0.10.2", "595.45.04", "framework_driver", ("warning", "its branch 595 reports CUDA 13.2")),
        # Before jax 0.7.2 there is no CUDA 13 plugin.
        ({"name": "jax", "version": "0.6.2", "cuda": "13"}, "580.95.05", "framework_cuda", ("violation", "no cu130")),
        # jax[cuda12-local] loads the system's CUDA: the rows cannot say which; nor can a plain pin.
        ("jax[cuda12-local]==0.12.0", "580.95.05", "framework_cuda", ("unknown", "(jax[cuda12], jax[cuda13])")),
        ("jax==0.12.0", "580.95.05", "framework_cuda", ("unknown", "a plain `pip install jax` has no CUDA")),
    ],
)
def test_jax_builds(matrix, framework, driver, rule, want):
    (c,) = run(matrix, {"driver": driver, "framework": framework}, rule=rule)
    assert c["status"] == want[0] and want[1] in c["message"], c


def test_jax_loads_the_wheels_pip_installs_with_its_plugin(matrix):
    (c,) = run(matrix, {"cudnn": "9.8.0", "framework": "jax[cuda12]==0.12.0"}, rule="framework_libraries")
    assert "pip's newest when the row was read: cudnn 9.28.0.42, nccl 2.32.3" in c["message"], c
    assert "its plugin requires cudnn <10.0,>=9.10.2.21, nccl >=2.18.1" in c["message"], c
    assert "the system's (cudnn 9.8.0) is not used by it" in c["message"], c


def test_bundled_libraries_named(matrix):
    (c,) = run(matrix, {"cudnn": "9.8.0", "framework": "torch==2.7.1+cu128"}, rule="framework_libraries")
    assert "bundled cudnn 9.7.1.26, nccl 2.26.2" in c["message"] and "cudnn 9.8.0" in c["message"]


@pytest.mark.parametrize(
    ("versions", "status"),
    [
        ({"framework": "tensorflow==2.18.0", "cuda": "12.5", "cudnn": "9.3.0"}, ["ok", "ok"]),
        ({"framework": "tensorflow==2.18.0", "cuda": "12.5", "cudnn": "8.9.7"}, ["ok", "violation"]),
        ({"framework": "tensorflow==2.16.1", "cuda": "12.3", "cudnn": "8.9.4"}, ["ok", "ok"]),
        ({"framework": "tensorflow==2.18.0", "cuda": "12.5", "cudnn": "9.1.0"}, ["ok", "violation"]),  # XLA's rule
        ({"framework": "tensorflow==2.18.0", "cuda": "12.5", "cudnn": "9.3.0.75"}, ["ok", "ok"]),
        ({"framework": "tensorflow==2.18.0", "cuda": "12.3", "cudnn": "9.8.0"}, ["warning", "ok"]),
    ],
)
def test_tensorflow_uses_system_libraries(matrix, versions, status):
    assert statuses(run(matrix, versions, rule="framework_libraries")) == status


def test_horovod(matrix):
    (c,) = run(matrix, {"horovod": "0.28.1", "framework": "torch==2.1.0"}, rule="horovod_framework")
    assert c["status"] == "violation" and "C++17" in c["message"]
    (c,) = run(matrix, {"horovod": "0.28.1", "framework": "torch==2.0.1"}, rule="horovod_framework")
    assert c["status"] == "ok"
    assert statuses(run(matrix, {"horovod": "0.27.0", "framework": "torch==2.0.1"}, rule="horovod_framework")) == [
        "unknown"
    ]


def test_fabricmanager_exact(matrix):
    (c,) = run(matrix, {"driver": "570.133.20", "fabricmanager": "570.124.06"}, rule="fabricmanager_driver")
    assert c["status"] == "violation" and "nvidia-fabricmanager-570=570.133.20-1" in c["message"]
    assert (
        statuses(run(matrix, {"driver": "570.133.20", "fabricmanager": "570.133.20"}, rule="fabricmanager_driver"))[0]
        == "ok"
    )


def test_expect_pins_against_host():
    host = si.from_installed(
        {
            "driver": {
                "loaded_version": "570.124.06",
                "package_version": "570.133.20",
                "mismatch": True,
                "loaded_source": "/proc/driver/nvidia/version",
            },
            "cuda": {
                "toolkits": [{"path": "/usr/local/cuda-12.8", "version": "12.8.1"}],
                "default": "/usr/local/cuda-12.8",
            },
            "cudnn": {"version": "9.8.0", "findings": [{"version": "9.8.0", "source": "header", "scope": "system"}]},
            "frameworks": {"torch": [{"version": "2.7.1+cu128", "cuda": "12.8"}]},
        }
    )
    checks = rules.rule_expect(
        host, {"driver": "570.133.20", "cuda": "12.8", "cudnn": ">=9,<10", "nccl": "2.26", "framework": "torch==2.7.1"}
    )
    assert statuses(checks) == ["violation", "ok", "ok", "violation", "ok"]
    assert "host has absent" in checks[3]["message"]
    (loaded,) = rules.rule_driver_loaded(host)
    assert "reboot" in loaded["message"] and "570.124.06" in loaded["message"]


def test_wheel_only_libraries_are_not_system_libraries():
    host = si.from_installed(
        {"nccl": {"version": "2.19.3", "findings": [{"version": "2.19.3", "scope": "wheel", "cuda": "12"}]}}
    )
    assert host["nccl"] is None and host["nccl_cuda"] is None


def test_verdict_lists_every_violation_and_strict_unknowns(matrix):
    checks = run(matrix, {"driver": "535.54.03", "cuda": "13.0", "cudnn": "8.9.7", "framework": "torch==2.99"})
    ok, message = rules.verdict(checks)
    assert not ok
    assert message.startswith("2 incompatibilities")
    assert "CUDA toolkit 13.0 needs driver >= 580.65.06 but the driver is 535.54.03" in message
    assert "cuDNN 8.9.7 has no build for CUDA 13.0" in message
    assert rules.verdict(checks, strict=True)[1].startswith("3 incompatibilities")
    assert rules.verdict(run(matrix, {"framework": "torch==2.99"}))[0] is True


@pytest.mark.parametrize(
    ("versions", "message"),
    [
        ({"driver": "latest"}, "versions.driver 'latest' is not a version"),
        ({"framework": "torch 2.7"}, "is not NAME==VERSION"),
        ({"framework": {"name": "torch"}}, "needs name and version"),
        ({"cuda": {"a": 1}}, "must be a version string"),
    ],
)
def test_bad_versions_name_the_key(versions, message):
    with pytest.raises(si.InputError, match=message):
        si.from_versions(versions)


def test_bad_expect_is_named():
    with pytest.raises(si.InputError, match=re.escape("expect.cudnn '~9'")):
        si.check_expect({"cudnn": "~9"})
    with pytest.raises(si.InputError, match=re.escape("expect.cudn is not one of")):
        si.check_expect({"cudn": "9"})


@pytest.mark.parametrize(
    ("driver", "today", "status", "words"),
    [
        ("580.95.05", "2026-12-02", "ok", "580 (LTSB) is supported until 2028-06"),
        ("570.133.20", "2026-02-27", "ok", "supported until 2026-02"),  # through its last month
        ("570.133.20", "2026-03-01", "warning", "570 (PB) reached its end of life in 2026-02"),
        ("550.54.15", "2026-12-02", "warning", "550 reached its end of life: no more security or bug fixes"),
        ("535.261.03", "2026-12-02", "warning", "move to 580 (LTSB, until 2028-06), 595 (PB, until 2027-03)"),
        ("610.43.02", "2026-12-02", "warning", "610 (NFB) reached its end of life in 2026-08"),
    ],
)
def test_driver_branch_end_of_life(matrix, driver, today, status, words):
    (c,) = [x for x in rules.evaluate(matrix, si.from_versions({"driver": driver}), today=today)
            if x["rule"] == "driver_lifecycle"]  # fmt: skip
    assert c["status"] == status and words in c["message"], c


def test_container_toolkit_cves(matrix):
    (c,) = run(matrix, {"container_toolkit": "1.17.3"}, rule="container_toolkit_cve")
    assert c["status"] == "violation"
    assert (
        "CVE-2025-23359 (container escape, a bypass of the CVE-2024-0132 fix, bulletin 5616, fixed in 1.17.4)"
        in (c["message"])
    )
    assert "CVE-2024-0132" not in c["message"].split("bypass")[0] and c["message"].endswith(
        "upgrade it to 1.19.1 or newer (gpufleet_stack.container_toolkit)"
    )
    (c,) = run(matrix, {"container_toolkit": "1.19.1"}, rule="container_toolkit_cve")
    assert c["status"] == "ok" and "none of the 7 CVEs" in c["message"]
    # Already installed on a host: a finding (warning), not a failed verification.
    stack = si.from_installed({"container_toolkit": {"version": "1.17.8"}})
    (c,) = [x for x in rules.evaluate(matrix, stack, today=TODAY) if x["rule"] == "container_toolkit_cve"]
    assert c["status"] == "warning" and c["message"].startswith("nvidia-container-toolkit 1.17.8 has CVE-2026-24260")


@pytest.mark.parametrize(
    ("driver", "status", "words"),
    [
        # The sandbox's old driver: below R570's fixes of 5670, 5703 and 5747, and R570 is in neither 5821 nor 5861.
        ("570.133.20", "warning", "fixed in 570.172.08); bulletin 5703 of 2025-10-09"),
        (
            "570.133.20",
            "warning",
            "upgrade to 570.211.01 or newer (gpufleet_stack.driver); it has no fix in bulletins 5821 of 2026-05-19",
        ),
        # R570's last build: every fix its branch got, and none for May 2026's CVSS 8.8 (R570 had ended).
        ("570.211.01", "warning", "has no fix in bulletins 5821 of 2026-05-19 (CVE-2026-24187 and 12 more, CVSS 8.8)"),
        ("570.211.01", "warning", "move to a branch 5861 fixes (615.71.09, 610.57.04, 595.91.07, 580.178.04 or newer)"),
        ("580.95.05", "warning", "fixed in 580.126.09); bulletin 5821 of 2026-05-19"),
        (
            "580.126.09",
            "warning",
            "lacks the fixes of bulletin 5821 of 2026-05-19 (CVE-2026-24187 and 12 more, CVSS 8.8; "
            "fixed in 580.159.03); bulletin 5861 of 2026-09-30",
        ),
        (
            "580.159.03",
            "warning",
            "lacks the fixes of bulletin 5861 of 2026-09-30 (CVE-2026-47601 and 79 more, CVSS 7.8; "
            "fixed in 580.178.04): upgrade to 580.178.04 or newer",
        ),
        ("580.178.04", "ok", "has the fixes of the 7 GPU Display Driver bulletins in the matrix (the newest: 5861"),
        ("595.71.05", "warning", "fixed in 595.91.07): upgrade to 595.91.07 or newer"),
        ("595.91.07", "ok", "has the fixes of the 7"),
        # R535 ended in June 2026: its last fix is 5821's, and 5861 lists no R535 row.
        ("535.309.01", "warning", "has no fix in bulletin 5861 of 2026-09-30"),
        # R590 was fixed in January 2026; May 2026 replaced it with R595 (revision 2 of bulletin 5821).
        ("590.48.01", "warning", "no fix in bulletins 5821 of 2026-05-19"),
        # Newer than every branch a bulletin lists (released after it): not judged by it.
        ("620.70.06", "ok", "has the fixes of the 7"),
    ],
)
def test_driver_security_bulletins(matrix, driver, status, words):
    (c,) = run(matrix, {"driver": driver}, rule="driver_security")
    assert c["status"] == status and words in c["message"], c
    if status == "warning":
        assert "driver-bulletin-" in c["source"] and "github.com/NVIDIA/product-security" in c["source"]


def test_driver_security_is_a_finding_on_hosts_too_and_skips_a_bare_branch(matrix):
    stack = si.from_installed({"driver": {"loaded_version": "580.95.05", "package_version": "580.95.05"}})
    (c,) = [x for x in rules.evaluate(matrix, stack, today=TODAY) if x["rule"] == "driver_security"]
    assert c["status"] == "warning"
    # "580" asks for the branch's newest build: nothing to judge; the matrix's other rules still run.
    assert run(matrix, {"driver": "580"}, rule="driver_security") == []
    # A bulletin the site adds before the collection has it (gpufleet_compat_matrix_extra) counts at once.
    extra = {"id": "site-bulletin", "kind": "driver_cve", "bulletin": "9999", "date": "2026-11-20", "cve": "CVE-2026-9",
             "cvss": 7.8, "what": "w", "fixed_in": {"620": "620.80.01", "580": "580.190.01"}, "source": "site",
             "read": "2026-12-05"}  # fmt: skip
    with_site = mx.build(yaml.safe_load(MATRIX.read_text()), [extra])
    (c,) = run(with_site, {"driver": "580.159.03"}, rule="driver_security")
    assert (
        c["status"] == "warning"
        and "bulletin 9999 of 2026-11-20 (CVE-2026-9, CVSS 7.8; fixed in 580.190.01)" in c["message"]
    )


def test_a_superseded_new_feature_branch_and_the_newest_one(matrix):
    (c,) = run(matrix, {"driver": "590.48.01"}, rule="driver_lifecycle")
    assert c["status"] == "warning" and "590 (NFB) is a new feature branch superseded by 595" in c["message"]
    assert "move to 580 (LTSB, until 2028-06), 595 (PB, until 2027-03), 620 (LTSB, until 2029-09)" in c["message"]
    extra = {"id": "branch-630", "kind": "branch", "branch": "630", "max_cuda": "13.6", "lifecycle": "NFB",
             "source": "site", "read": "2027-03-01"}  # fmt: skip
    newest = mx.build(yaml.safe_load(MATRIX.read_text()), [extra])
    (c,) = run(newest, {"driver": "630.10.01"}, rule="driver_lifecycle")
    assert c["status"] == "ok" and "630 (NFB) is the newest branch" in c["message"]
    # A branch with neither lifecycle nor end of life (an old one only Table 3 knows): no finding.
    assert run(matrix, {"driver": "545.23.06"}, rule="driver_lifecycle") == []


def test_r620_ships_only_the_open_modules(matrix):
    (c,) = run(matrix, {"driver": "620.70.06", "driver_flavor": "proprietary"}, rule="driver_flavor")
    assert c["status"] == "violation" and 'driver_flavor (or nvidia_driver_flavor) to "open"' in c["message"]
    assert "branch-620" in c["source"] and "Proprietary Kernel Modules" in c["source"]
    assert run(matrix, {"driver": "620.70.06", "driver_flavor": "open"}, rule="driver_flavor") == []
    assert run(matrix, {"driver": "580.159.03", "driver_flavor": "proprietary"}, rule="driver_flavor") == []
    (c,) = run(matrix, {"driver": "620.70.06"}, rule="driver_lifecycle")
    assert c["status"] == "ok" and "620 (LTSB) is supported until 2029-09" in c["message"]


def test_a_matrix_older_than_its_max_age_warns_on_every_verdict(matrix):
    as_of = matrix["as_of"]
    day = datetime.date.fromisoformat(as_of)
    stack = si.from_versions({"driver": "580.159.03"})
    in_time = (day + datetime.timedelta(days=180)).isoformat()
    assert [c for c in rules.evaluate(matrix, stack, today=in_time) if c["rule"] == "matrix_age"] == []
    late = (day + datetime.timedelta(days=181)).isoformat()
    (c,) = [c for c in rules.evaluate(matrix, stack, today=late) if c["rule"] == "matrix_age"]
    assert c["status"] == "warning" and f"as of {as_of}, 181 days before today (more than 180)" in c["message"]
    assert "gpufleet_compat_matrix_max_age" in c["message"]
    # The site's own limit; the verdict itself stays compatible (a warning).
    (c,) = [c for c in rules.evaluate(matrix, stack, today=in_time, max_age=30) if c["rule"] == "matrix_age"]
    assert rules.verdict([c]) == (True, None)
    assert [c for c in rules.evaluate(dict(matrix, as_of=None), stack, today=late) if c["rule"] == "matrix_age"] == []
