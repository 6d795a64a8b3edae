"""The inventory schema (data/inventory_schema.yml) and its checker (_common/schema.py, _controller/inventory.py)."""

from pathlib import Path

import pytest
import yaml
from ansible.module_utils.common.yaml import SafeLoader
from ansible_collections.gpufleet.stack.plugins.module_utils._common import schema as sc
from ansible_collections.gpufleet.stack.plugins.module_utils._controller import inventory as inv
from ansible_collections.gpufleet.stack.plugins.module_utils._controller.data_files import read_yaml

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = yaml.safe_load((ROOT / "data/inventory_schema.yml").read_text())
ROLE_SPECS = {
    p.parents[1].name: yaml.safe_load(p.read_text())["argument_specs"]["main"]["options"]
    for p in sorted((ROOT / "roles").glob("*/meta/argument_specs.yml"))
}
STACK = {"driver": "570.133.20", "cuda": "12.8", "cudnn": "9.8.0", "nccl": "2.26.2"}


def specs(spec):
    """Every spec nested in spec (itself, its elements, keys, values)."""
    yield spec
    for child in [spec.get("elements"), spec.get("values"), *(spec.get("keys") or {}).values()]:
        if child:
            yield from specs(child)


def all_specs():
    for name, spec in {**SCHEMA["variables"], **SCHEMA["role_variables"]}.items():
        yield name, sc.resolve_like(SCHEMA, spec)


@pytest.mark.parametrize(("name", "spec"), list(all_specs()), ids=lambda x: x if isinstance(x, str) else "")
def test_every_spec_uses_known_types_and_formats(name, spec):
    for each in specs(spec):
        assert hasattr(sc._Check, "t_" + each.get("type", "str")), f"{name}: unknown type {each.get('type')}"
        for fmt in (each.get("format"), each.get("key_format")):
            assert fmt is None or fmt in SCHEMA["formats"], f"{name}: unknown format {fmt}"


def test_role_variables_are_real_role_variables_and_components_match_the_playbooks():
    options = {n for o in ROLE_SPECS.values() for n in o}
    assert set(SCHEMA["role_variables"]) <= options, set(SCHEMA["role_variables"]) - options
    needed = {v for needs in SCHEMA["component_needs"].values() for v in needs.values()}
    assert needed <= options, needed - options
    play_vars = yaml.safe_load((ROOT / "playbooks/vars/gpufleet.yml").read_text())
    default = SCHEMA["variables"]["gpufleet_components"]["default"]
    assert play_vars["__gpufleet_components"] == f"{{{{ gpufleet_components | default({default!r}) }}}}"
    assert set(SCHEMA["component_needs"]) <= set(SCHEMA["variables"]["gpufleet_components"]["elements"]["choices"])


# Formats whose example is a description, not a value.
PROSE_EXAMPLES = {"fingerprint", "slurm_node"}


def test_every_format_example_matches_its_own_pattern_where_it_is_a_value():
    import re

    checked = 0
    for name, fmt in SCHEMA["formats"].items():
        if name in PROSE_EXAMPLES:
            continue
        # The first quoted value, else the first of a comma-separated list (cuda-toolkit, cuda-compiler...).
        first = fmt["example"].split('"')[1] if '"' in fmt["example"] else fmt["example"].split(",")[0].strip()
        assert re.fullmatch(fmt["pattern"], first), f"{name}: example {first!r} fails its pattern"
        checked += 1
    assert checked == len(SCHEMA["formats"]) - len(PROSE_EXAMPLES)


def check(name, value, playbook="facts", **more):
    return inv.check_host(SCHEMA, ROLE_SPECS, {name: value, **more}, playbook)


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("gpufleet_stack", {**STACK, "cuda": 12.1}, ["gpufleet_stack.cuda is the YAML number 12.1", "quote it"]),
        ("gpufleet_stack", {**STACK, "driver": 570}, ["gpufleet_stack.driver is the YAML number 570", "quote it"]),
        ("gpufleet_stack", {**STACK, "cudaa": "12.8"}, ["gpufleet_stack.cudaa is not a key", "did you mean cuda?"]),
        ("gpufleet_stack", {**STACK, "cuda": ["12.8", "12.8.1"]}, ['lists "12.8" more than once']),
        ("gpufleet_stack", {**STACK, "nccl": "2.26.2\n"}, ["gpufleet_stack.nccl", "control character"]),
        ("gpufleet_stack", {**STACK, "driver_flavor": "opne"}, ['"opne"', "did you mean open?"]),
        ("gpufleet_stack", {**STACK, "framework": "torch=2.7"}, ["gpufleet_stack.framework", "NAME==VERSION"]),
        ("gpufleet_stack", {**STACK, "framework": {"name": "torch"}}, ["gpufleet_stack.framework has no version"]),
        ("gpufleet_stack", {}, ["gpufleet_stack is {}: empty"]),
        ("gpufleet_stack", None, ["gpufleet_stack is null"]),
        ("gpufleet_components", ["driver", "cdua"], ['gpufleet_components[1] is "cdua"', "did you mean cuda?"]),
        ("gpufleet_components", "driver", ['gpufleet_components is "driver": not a list']),
        ("gpufleet_upgrade_serial", 0, ["would put the whole fleet (or none) in one batch"]),
        ("gpufleet_upgrade_serial", "150%", ['"150%" would put the whole fleet']),
        ("gpufleet_upgrade_serial", "abc", ['"abc" is not a host count or a percentage']),
        ("gpufleet_upgrade_serial", [1, "0%"], ['"0%" would put']),
        ("gpufleet_upgrade_max_fail_percentage", 101, ["out of range (0 to 100)"]),
        ("gpufleet_upgrade_drain_timeout", "soon", ["not a whole number"]),
        ("gpufleet_upgrade_reboot_ok", "ture", ["not a boolean", "use true or false"]),
        ("gpufleet_upgrade_on_blocked", "skip", ['"skip": not one of the choices', '"continue" (it is skipped']),
        ("gpufleet_expected_gpus", -1, ["out of range", "the GPUs each node of the group has"]),
        # Digits of other scripts that int() reads as numbers, and the matrix age's bounds.
        ("gpufleet_compat_matrix_max_age", "\u0661\u0668\u0660", ["not a whole number", "days after the matrix"]),
        ("gpufleet_compat_matrix_max_age", "\uff11\uff18\uff10", ["not a whole number"]),
        ("gpufleet_compat_matrix_max_age", 0, ["out of range (1 to 3650)"]),
        ("gpufleet_compat_matrix_max_age", 3651, ["out of range (1 to 3650)"]),
        ("gpufleet_compat_matrix_max_age", "180; rm -rf /", ["not a whole number"]),
        ("gpufleet_compat_matrix_max_age", True, ["not a whole number"]),
        ("gpufleet_upgrade_drain_timeout", "\u0663\u0666\u0660\u0660", ["not a whole number"]),
        ("gpufleet_slurm_gres", "yes please", ["not a boolean"]),
        ("node_drain_on_timeout", "wait", ['"wait": not one of the choices']),  # from the role's argument_specs
        ("gpufleet_nvidia_repo_url", "http://m.example.org/a b", ["whitespace"]),
        ("gpufleet_nvidia_repo_url", "mirror.example.org", ["scheme must be http, https or file"]),
        ("gpufleet_nvidia_repo_url", "https://u:hunter2@m.example.org/\n", ["u:***@", "control character"]),
        (
            "gpufleet_nvidia_repo_key",
            {"url": "https://m.example.org/k"},
            ["gpufleet_nvidia_repo_key has no fingerprint"],
        ),
        ("gpufleet_nvidia_repo_key", {"url": "https://m/k", "fingerprint": "3BF863CC"}, ['.fingerprint is "3BF863CC"']),
        ("nccl_settings", {"NCCL_DEBUG": "WARN\nNCCL_X=1"}, ["nccl_settings.NCCL_DEBUG", "control character"]),
        ("nccl_settings", {"NCCL_IB_DISABLE": True}, ["nccl_settings.NCCL_IB_DISABLE is true", "not a one-line"]),
        ("nccl_settings", {"NCCL_X\n": "1"}, ['nccl_settings has the key "NCCL_X\\n"']),
        ("nccl_setings", {}, ["nccl_setings is not a variable of this collection", "did you mean nccl_settings?"]),
        ("gpufleet_sheduler", "slurm", ["did you mean gpufleet_scheduler?"]),
        ("container_toolkit_cdi_spec", "/etc/cdi/", ["ends in /"]),
        ("horovod_gpu_operations", "mpi", ['"mpi": not one of the choices']),  # from the role's argument_specs
        ("horovod_wheel_cache", "wheels", ["not an absolute path", 'or "" to compile']),
        ("horovod_wheel_cache", "/srv/wheels\n/etc", ["control character"]),
        ("gpufleet_stack", {**STACK, "dcgm": "4.4"}, ['gpufleet_stack.dcgm is "4.4"', '"4.4.1" (DCGM 4']),
        ("dcgm_cuda", "12.8", ['"12.8": not one of the choices', 'the "CUDA Version" nvidia-smi prints']),
    ],
)
def test_each_bad_value_is_named_with_its_value_and_fix(name, value, expected):
    problems = check(name, value)
    assert problems, f"{name}={value!r} passed"
    for text in expected:
        assert any(text in p for p in problems), f"{text!r} not in {problems}"
    assert not any("hunter2" in p for p in problems)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("gpufleet_stack", {**STACK, "cuda": ["12.8", "12.4"], "framework": "torch==2.7.1+cu128"}),
        ("gpufleet_upgrade_serial", [1, "10%", "25%"]),
        ("gpufleet_upgrade_serial", "2"),  # -e gpufleet_upgrade_serial=2 arrives as a string
        ("horovod_wheel_cache", ""),
        ("horovod_wheel_cache", "/srv/gpufleet/horovod-wheels"),
        ("gpufleet_upgrade_reboot_ok", "true"),
        ("gpufleet_nvidia_repo_url", "https://ci:token@mirror.example.org:8443/nvidia"),
        (
            "gpufleet_nvidia_repo_key",
            {
                "url": "file:///srv/key.asc",
                "fingerprint": "EB69 3B30 35CD 5710 E231  E123 A4B4 6996 3BF8 63CC".replace("  ", " "),
            },
        ),
        ("nccl_settings", {"NCCL_SOCKET_IFNAME": "^docker,lo", "NCCL_IB_TIMEOUT": 22}),
        ("nvidia_driver_fabricmanager", True),
        ("nvidia_driver_fabricmanager", "AUTO"),
        ("gpufleet_nvidia_repo_key", {"fingerprint": "EB69 3B30 35CD 5710 E231  E123 A4B4 6996 3BF8 63CC"}),
        ("gpufleet_nvidia_repo_key", {"url": "https://m.example.org/k?v=2", "fingerprint": "EB69" * 10}),
        ("cudnn_cuda_version", "12"),
        ("gpufleet_compat_matrix_max_age", 365),
        ("gpufleet_compat_matrix_max_age", "90"),  # -e arrives as a string
        ("gpufleet_gpu", {"anything": "a fact"}),  # set by the collection: not checked
    ],
)
def test_good_values_pass(name, value):
    assert check(name, value) == []


def test_site_needs_a_stack_key_for_every_listed_component_unless_the_role_variable_is_set():
    problems = inv.check_host(SCHEMA, ROLE_SPECS, {}, "site")
    assert [p.split(", which", maxsplit=1)[0] for p in problems] == [
        f"gpufleet_stack is not set, so it has no {key}" for key in ("driver", "cuda", "cudnn", "cuda", "nccl", "cuda")
    ]
    # A stack is not needed where nothing listed installs from one, or the roles' own variables are set.
    assert inv.check_host(SCHEMA, ROLE_SPECS, {"gpufleet_components": ["container_toolkit"]}, "site") == []
    alone = {"gpufleet_components": ["cuda"], "cuda_toolkit_versions": ["12.8"]}
    assert inv.check_host(SCHEMA, ROLE_SPECS, alone, "site") == []
    # Debian's libnccl2 names no CUDA build: no gpufleet_stack.cuda needed for nccl on the distro channel.
    distro = {"gpufleet_components": ["nccl"], "gpufleet_stack": {"nccl": "2.22.3"}, "nccl_channel": "distro"}
    assert inv.check_host(SCHEMA, ROLE_SPECS, distro, "site") == []
    assert "has no cuda" in inv.check_host(SCHEMA, ROLE_SPECS, dict(distro, nccl_channel="network"), "site")[0]
    no_nccl = {k: v for k, v in STACK.items() if k != "nccl"}
    problems = inv.check_host(SCHEMA, ROLE_SPECS, {"gpufleet_stack": no_nccl}, "site")
    assert problems == [
        "gpufleet_stack has no nccl, which the component nccl (gpufleet_components) installs from: add "
        "gpufleet_stack.nccl (or set nccl_version), or leave nccl out of gpufleet_components"
    ]
    assert inv.check_host(SCHEMA, ROLE_SPECS, {"gpufleet_stack": no_nccl, "nccl_version": "2.26.2"}, "site") == []
    horovod = {"gpufleet_stack": STACK, "gpufleet_components": ["driver", "horovod"]}
    assert "gpufleet_stack has no framework" in inv.check_host(SCHEMA, ROLE_SPECS, horovod, "site")[0]
    # An unknown component is reported once, by its choices, not tripped over here.
    typo = inv.check_host(SCHEMA, ROLE_SPECS, {"gpufleet_stack": STACK, "gpufleet_components": ["cdua"]}, "site")
    assert len(typo) == 1 and 'gpufleet_components[0] is "cdua"' in typo[0], typo
    # rollback returns to the recorded stack; facts.yml needs none
    assert inv.check_host(SCHEMA, ROLE_SPECS, {"gpufleet_upgrade_mode": "rollback"}, "upgrade") == []
    assert inv.check_host(SCHEMA, ROLE_SPECS, {}, "facts") == []


def test_one_report_names_every_host_once_per_distinct_problem():
    problems = {f"gpu-{i:02}": ['gpufleet_scheduler is "slrum": ...'] for i in range(1, 8)}
    problems["gpu-09"] = ["gpufleet_stack.cuda is the YAML number 12.1: ..."]
    problems["gpu-10"] = []
    text = inv.report(problems)
    assert text.splitlines() == [
        "2 problems in the inventory of 8 hosts (checked on the controller; no host was contacted):",
        '- gpu-01, gpu-02, gpu-03, gpu-04 and 3 more: gpufleet_scheduler is "slrum": ...',
        "- gpu-09: gpufleet_stack.cuda is the YAML number 12.1: ...",
    ]
    assert inv.report({"gpu-01": []}) is None


def test_passwords_never_show():
    assert (
        sc.redact("https://ci:hunter2@m.example.org/x and http://tok@h/")
        == "https://ci:***@m.example.org/x and http://***@h/"
    )
    # An unencoded / or @ in the password must not end the match and leave the rest showing.
    assert sc.redact("https://u:p/ss@h/x") == "https://u:***@h/x"
    assert sc.redact("https://u:p@ss@h/x") == "https://u:***@h/x"
    assert sc.secrets("https://u:p@ss@h/x") == ["p@ss"] and sc.secrets("https://tok@h/") == ["tok"]
    assert sc.secrets("https://h/x") == []
    assert sc.shown({"url": "https://a:b@c/"}) == '{"url": "https://a:***@c/"}'


def test_a_role_names_the_inventory_variable_only_when_its_default_was_used():
    assert inv.role_variable_where(SCHEMA, "nccl_version", True) == "nccl_version (from gpufleet_stack.nccl)"
    assert inv.role_variable_where(SCHEMA, "nccl_version", False) == "nccl_version"
    assert inv.role_variable_where(SCHEMA, "nccl_cuda", True) == "nccl_cuda (from gpufleet_stack.cuda)"
    assert inv.role_variable_where(SCHEMA, "nccl_settings", True) == "nccl_settings"  # no inventory source


def test_every_role_variable_source_is_a_variable_of_the_schema():
    for name, spec in SCHEMA["role_variables"].items():
        source = spec.get("from") or spec.get("like")
        if source:
            top, _dot, key = source.partition(".")
            assert top in SCHEMA["variables"], f"{name}: {source}"
            assert not key or key in SCHEMA["variables"][top].get("keys", {}), f"{name}: {source}"


def test_dcgm_component_needs_its_version_and_the_driver_or_dcgm_cuda():
    values = {"gpufleet_components": ["dcgm"], "gpufleet_stack": {"cuda": "12.8"}}
    problems = inv.check_host(SCHEMA, ROLE_SPECS, values, "site")
    assert [p.split(", which", maxsplit=1)[0] for p in problems] == [
        "gpufleet_stack has no dcgm",
        "gpufleet_stack has no driver",
    ]
    assert "(or set dcgm_cuda)" in problems[1]
    fine = {"gpufleet_components": ["dcgm"], "gpufleet_stack": {"dcgm": "4.4.1"}, "dcgm_cuda": "13"}
    assert inv.check_host(SCHEMA, ROLE_SPECS, fine, "site") == []


@pytest.mark.parametrize(
    "path",
    [
        "data/inventory_schema.yml",
        "data/compat_matrix.yml",
        *sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("roles/*/meta/argument_specs.yml")),
    ],
)
def test_controller_reads_data_files_as_safe_load_does(path):
    """The action plugins parse the shipped data with libyaml's loader where PyYAML has it (about 10x faster, once per
    task that reads them): the same data as yaml.safe_load, YAML 1.1 booleans and quoted versions included."""
    assert yaml.__with_libyaml__, "the toolchain's PyYAML has no libyaml: the controller falls back to the slow loader"
    assert SafeLoader is yaml.CSafeLoader  # what Ansible's yaml_load, which read_yaml calls, parses with
    assert read_yaml(ROOT / path) == yaml.safe_load((ROOT / path).read_text())


# The schema is the one source of a role variable's domain; each role's argument_specs (what a role run alone checks)
# is held to it here, not kept in step by hand.
ARGSPEC_TYPES = {
    "str": {"str", "raw"},
    "version": {"str", "raw"},
    "url": {"str"},
    "pattern": {"str"},
    "serial": {"raw", "str"},
    "framework": {"str", "raw"},
    "path": {"path", "str"},
    "bool": {"bool"},
    "int": {"int", "raw"},
    "list": {"list"},
    "dict": {"dict"},
    "matrix_rows": {"list"},
    "any": {"raw"},
}


def role_option(name):
    return next(options[name] for options in ROLE_SPECS.values() if name in options)


@pytest.mark.parametrize("name", sorted(SCHEMA["role_variables"]))
def test_each_role_variable_s_argument_spec_agrees_with_the_schema(name):
    spec, option = sc.resolve_like(SCHEMA, SCHEMA["role_variables"][name]), role_option(name)
    kind = "raw" if spec.get("bool_ok") or spec.get("scalar_ok") else option.get("type", "str")
    assert kind in ARGSPEC_TYPES[spec.get("type", "str")] | {"raw"}, f"{name}: {option.get('type')} vs {spec}"
    if spec.get("choices") and option.get("choices"):
        assert {str(c).lower() for c in option["choices"]} <= {str(c).lower() for c in spec["choices"]}, name
    # The role's documented default is a value the schema accepts (an unset inventory gives the role its default);
    # a templated default takes the inventory's value, which the schema checks where it is set.
    if option.get("default") not in (None, "", [], {}) and "{{" not in str(option["default"]):
        assert sc.check(spec, option["default"], name, SCHEMA["formats"]) == [], (
            f"{name}: default {option['default']!r}"
        )
