"""Every role's meta/argument_specs.yml documents exactly the variables of its defaults/main.yml (STYLE.md "Roles")."""

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLES = sorted(p for p in (ROOT / "roles").glob("*") if (p / "defaults" / "main.yml").is_file())


def _load(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f) or {}


def test_there_are_roles_to_check():
    # Without this, an empty or moved roles/ would make every parametrised test below vanish silently.
    assert ROLES, f"no roles with defaults/main.yml under {ROOT / 'roles'}"


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_argument_specs_match_defaults(role):
    defaults = _load(role / "defaults" / "main.yml")
    spec_file = role / "meta" / "argument_specs.yml"
    assert spec_file.is_file(), f"{role.name}: add meta/argument_specs.yml documenting {sorted(defaults)}"
    options = _load(spec_file)["argument_specs"]["main"]["options"]
    assert sorted(options) == sorted(defaults), (
        f"{role.name}: only in defaults {sorted(set(defaults) - set(options))}, "
        f"only in argument_specs {sorted(set(options) - set(defaults))}"
    )
    for name, option in options.items():
        assert name.startswith(f"{role.name}_"), f"{role.name}: public variable {name} lacks the role prefix"
        missing = [k for k in ("description", "type", "default") if k not in option]
        assert not missing, f"{role.name}: option {name} lacks {missing}"
        # The documented default is the one users get.
        assert option["default"] == defaults[name], f"{role.name}: {name} default differs from defaults/main.yml"
        if "choices" in option:
            # A list option's choices are its elements' (Ansible's argument spec).
            chosen = defaults[name] if option["type"] == "list" else [defaults[name]]
            assert set(chosen) <= set(option["choices"]), f"{role.name}: {name} default not in its choices"


# What each role's preflight accepts (its os_family assert, or the OS data it has): meta/main.yml must not claim more.
PREFLIGHT_PLATFORMS = {"nvidia_repo": {"Debian", "Ubuntu", "EL"}}


@pytest.mark.parametrize("role", sorted((ROOT / "roles").glob("*")), ids=lambda p: p.name)
def test_meta_claims_what_preflight_accepts_and_runtime_allows(role):
    info = _load(role / "meta" / "main.yml")["galaxy_info"]
    runtime = _load(ROOT / "meta" / "runtime.yml")["requires_ansible"]
    assert runtime == f">={info['min_ansible_version']}.0", (
        f"{role.name}: min_ansible_version {info['min_ansible_version']} but meta/runtime.yml says {runtime}"
    )
    claimed = {p["name"] for p in info["platforms"]}
    accepted = PREFLIGHT_PLATFORMS.get(role.name, {"Debian", "Ubuntu"})
    assert claimed <= accepted, f"{role.name}: meta claims {sorted(claimed - accepted)}, which its preflight refuses"
