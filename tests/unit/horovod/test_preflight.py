"""The horovod role's preflight, run with ansible-playbook against localhost: it refuses what cannot build or run
with a message naming the variable, its value and the fix, and decides the build (patch, operations) otherwise."""

import json
import subprocess
import sys
import textwrap

import pytest

PLAYBOOK = textwrap.dedent(
    """\
    - name: Run the horovod role's preflight
      hosts: localhost
      connection: local
      gather_facts: false
      roles:
        - role: gpufleet.stack.horovod
      post_tasks:
        - name: Show the decisions
          ansible.builtin.debug:
            msg: "DECISION {{ {'operations': __horovod_operations, 'patched': __horovod_patched | bool,
                               'spec': __horovod_framework_spec} | to_json }}"
          tags: [horovod_preflight]
    """
)
STACK = {"gpufleet_stack": {"framework": {"name": "torch", "version": "2.13.0"}}, "horovod_framework_variant": "cpu"}


def preflight(tmp_path, env, extra):
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    proc = subprocess.run(
        # The test's own interpreter on localhost: interpreter discovery may find a shim without Ansible's needs.
        [
            *("ansible-playbook", "-i", "localhost,", "-e", f"ansible_python_interpreter={sys.executable}"),
            *("--tags", "horovod_preflight", "-e", json.dumps(extra), "play.yml"),
        ],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        pytest.param(
            {"horovod_framework": "tensorflow"},
            "horovod_framework is 'tensorflow': this role builds Horovod for torch only so far; "
            "set horovod_framework: torch",
            id="tensorflow-not-yet",
        ),
        pytest.param(
            {"horovod_framework": "caffe"},
            "horovod_framework is 'caffe', which Horovod does not support; set it to one of torch",
            id="unknown-framework",
        ),
        pytest.param(
            {"gpufleet_stack": {}},
            "horovod_framework_version is '': set it (or gpufleet_stack.framework.version) to a release like '2.7.1'",
            id="no-framework-version",
        ),
        pytest.param(
            {"horovod_framework_version": "2.13.0+cpu"},
            "horovod_framework_version is '2.13.0+cpu'",
            id="variant-in-version",
        ),
        pytest.param(
            {"horovod_patch_cxx17": False},
            "Horovod 0.28.1 compiles C++14 and torch 2.13.0 needs C++17 "
            "(https://github.com/horovod/horovod/issues/3996). "
            "Choose one: horovod_version 0.28.1 with horovod_patch_cxx17: true",
            id="torch-2.1-unpatched",
        ),
        pytest.param(
            {"horovod_version": "0.27.0"},
            "Horovod 0.27.0 compiles C++14 and torch 2.13.0 needs C++17",
            id="patch-is-for-0.28.1-only",
        ),
        pytest.param(
            {"horovod_wheelhouse": "/nonexistent/wheelhouse"},
            "horovod_wheelhouse is '/nonexistent/wheelhouse', which is not a directory on localhost",
            id="missing-wheelhouse",
        ),
        pytest.param(
            {"horovod_gpu_operations": "nccl"},
            "horovod_gpu_operations is 'nccl' but horovod_framework_variant is 'cpu' (a CPU-only framework build); "
            "set horovod_gpu_operations: gloo",
            id="nccl-with-cpu-torch",
        ),
        pytest.param(
            {
                "horovod_gpu_operations": "nccl",
                "horovod_framework_variant": "cu128",
                "horovod_nccl_home": "/nonexistent",
            },
            "horovod_gpu_operations is nccl but /nonexistent/include/nccl.h is missing",
            id="nccl-without-nccl",
        ),
        pytest.param(
            {"horovod_gpu_operations": "mpi"},
            "value of horovod_gpu_operations must be one of: auto, nccl, gloo, got: mpi",
            id="unknown-operations",
        ),
    ],
)
def test_refuses(tmp_path, ansible_env, extra, message):
    rc, out = preflight(tmp_path, ansible_env, {**STACK, **extra})
    assert rc != 0, out
    assert message in out, out


@pytest.mark.parametrize(
    ("extra", "decision"),
    [
        pytest.param({}, {"operations": "gloo", "patched": True, "spec": "torch==2.13.0+cpu"}, id="patched-gloo"),
        pytest.param(
            {"gpufleet_stack": {"framework": {"name": "torch", "version": "2.0.1", "cuda": "11.8"}}},
            {"operations": "gloo", "patched": False, "spec": "torch==2.0.1+cu118"},
            id="old-torch-unpatched-variant-from-stack",
        ),
    ],
)
def test_accepts(tmp_path, ansible_env, extra, decision):
    # This machine has no CUDA toolkit or NCCL, so auto picks Gloo even for a CUDA variant.
    (tmp_path / "wheels").mkdir()
    extra = {**STACK, "horovod_wheelhouse": str(tmp_path / "wheels"), **extra}
    if "cuda" in extra["gpufleet_stack"]["framework"]:
        extra.pop("horovod_framework_variant")
    rc, out = preflight(tmp_path, ansible_env, extra)
    assert rc == 0, out
    assert f"DECISION {json.dumps(decision)}" in out.replace('\\"', '"'), out


def test_refuses_a_host_whose_name_does_not_resolve(tmp_path, ansible_env):
    # Stands in for horovod_python on a host whose name has no address: the preflight asks the interpreter, which
    # prints the name and exits 2 (as the real check does when socket.gethostbyname fails).
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho ghost-node\nexit 2\n")
    fake.chmod(0o755)
    (tmp_path / "wheels").mkdir()
    extra = {**STACK, "horovod_wheelhouse": str(tmp_path / "wheels"), "horovod_python": str(fake)}
    rc, out = preflight(tmp_path, ansible_env, extra)
    assert rc != 0, out
    assert "this host's name 'ghost-node' does not resolve" in out, out
    assert "add '127.0.1.1 ghost-node' to /etc/hosts" in out, out
