"""The engine's own checks at their edges: desired pins against a host, a driver loaded beside another, the verdict's
words and the day evaluate judges on."""

import datetime

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import engine as rules
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import inputs as si

FIX = ": converge the host (playbooks/site.yml) or change the desired stack"
HOST = si.from_installed(
    {
        "driver": {"package_version": "570.133.20"},
        "cuda": {
            "toolkits": [
                {"path": "/usr/local/cuda-12.8", "version": "12.8.1"},
                {"path": "/usr/local/cuda-12.4", "version": "12.4.1"},
            ],
            "default": "/usr/local/cuda-12.8",
        },
        "frameworks": {"torch": [{"version": "2.7.1+cu128", "cuda": "12.8"}, {"version": "2.6.0+cu124"}]},
    }
)


def expect(**pins):
    return [(c["status"], c["message"]) for c in rules.rule_expect(HOST, pins)]


def test_every_pin_is_checked_and_named_whole():
    assert expect(driver="570", cuda=["12.8", "12.4"]) == [
        ("ok", "desired driver 570, host has 570.133.20"),
        ("ok", "desired cuda 12.8, 12.4, host has 12.8.1, 12.4.1"),
    ]
    assert expect(cuda=["12.8", "13.0"], nccl="2.26") == [
        ("violation", "desired cuda 12.8, 13.0, host has 12.8.1, 12.4.1" + FIX),
        ("violation", "desired nccl 2.26, host has absent" + FIX),
    ]
    assert rules.rule_expect(HOST, None) == []


def test_a_framework_pin_matches_any_install_without_its_local_tag():
    assert expect(framework="torch==2.6") == [("ok", "desired torch 2.6, host has 2.7.1+cu128, 2.6.0+cu124")]
    assert expect(framework="torch==2.5") == [
        ("violation", "desired torch 2.5, host has 2.7.1+cu128, 2.6.0+cu124" + FIX)
    ]
    assert expect(framework="jax==0.6.2") == [("violation", "desired jax 0.6.2, host has absent" + FIX)]
    (check,) = rules.rule_expect(HOST, {"framework": "torch==2.7.1"})
    assert check == {"rule": "expect", "status": "ok", "message": "desired torch 2.7.1, host has 2.7.1+cu128, "
                     "2.6.0+cu124", "source": ""}  # fmt: skip


def test_a_bad_framework_pin_is_named_as_an_expect_value():
    with pytest.raises(si.InputError, match=r"^expect\.framework 'torch 2\.7' is not NAME==VERSION"):
        rules.rule_expect(HOST, {"framework": "torch 2.7"})


def test_a_loaded_driver_that_differs_is_one_violation_with_its_source():
    mismatch = {"loaded_version": "570.124.06", "library_version": "570.133.20", "loaded_source": "/proc/x"}
    assert rules.rule_driver_loaded({"notes": [mismatch]}) == [
        {
            "rule": "driver_loaded",
            "status": "violation",
            "message": "the loaded driver 570.124.06 differs from the installed 570.133.20 (driver/library version "
            "mismatch): reboot the host, or unload and reload the nvidia kernel modules",
            "source": "/proc/x",
        }
    ]
    # The package's version is the one installed; the library's only stands in when no package is known.
    both = {"loaded_version": "580.65.06", "package_version": "580.95.05", "library_version": "580.76.05"}
    (check,) = rules.rule_driver_loaded({"notes": [both]})
    assert check["message"].startswith("the loaded driver 580.65.06 differs from the installed 580.95.05 (")
    assert check["source"] == ""
    assert rules.rule_driver_loaded({}) == []


def test_the_verdict_counts_in_words():
    violation = {"rule": "x", "status": "violation", "message": "m"}
    unknown = {"rule": "y", "status": "unknown", "message": "u"}
    warning = {"rule": "z", "status": "warning", "message": "w"}
    assert rules.verdict([violation, unknown, warning]) == (False, "1 incompatibility in the GPU stack:\n- [x] m")
    assert rules.verdict([unknown, warning], strict=True, what="host gpu-01") == (
        False,
        "1 incompatibility in host gpu-01:\n- [y] u",
    )
    assert rules.verdict([violation, unknown], strict=True) == (
        False,
        "2 incompatibilities in the GPU stack:\n- [x] m\n- [y] u",
    )
    assert rules.verdict([unknown, warning]) == (True, None)
    assert rules.verdict([]) == (True, None)


def test_evaluate_judges_on_today_unless_told():
    matrix = rules.build_matrix({"as_of": "2000-01-01", "rows": []})
    stack = si.from_versions({})
    (age,) = [c for c in rules.evaluate(matrix, stack) if c["rule"] == "matrix_age"]
    assert age["status"] == "warning"
    today = datetime.date.today().isoformat()
    assert rules.evaluate(matrix, stack) == rules.evaluate(matrix, stack, today=today)
    assert rules.MAX_AGE_DAYS == 180
    fresh = [c for c in rules.evaluate(matrix, stack, today="2000-06-29") if c["rule"] == "matrix_age"]
    stale = [c for c in rules.evaluate(matrix, stack, today="2000-06-30") if c["rule"] == "matrix_age"]
    assert (fresh, [c["status"] for c in stale]) == ([], ["warning"])  # 180 days old is current, 181 is not
