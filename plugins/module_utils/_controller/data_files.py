# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The data files the collection ships (data/compat_matrix.yml, data/inventory_schema.yml, the roles' argument
specs), read on the controller by stack_assert and inventory_check, and the matrix's two inventory variables.
PRIVATE to the collection.
"""

from __future__ import annotations

import functools
import os

from ansible.module_utils.common.yaml import yaml_load
from ansible_collections.gpufleet.stack.plugins.module_utils._compat.engine import MAX_AGE_DAYS

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
MATRIX_FILE = os.path.join(ROOT, "data", "compat_matrix.yml")
EXTRA_VAR = "gpufleet_compat_matrix_extra"
AGE_VAR = "gpufleet_compat_matrix_max_age"

# Ansible's yaml_load takes libyaml's parser where PyYAML has it: the same safe constructor, about 10x
# faster than the pure-Python one. Ansible forks a worker per task and host, so the data files are parsed once per task
# that reads them (the matrix by the play's preflight and by each stack_assert, the schema and the roles' argument
# specs by every role's own check).


class DataError(ValueError):
    """A shipped file that cannot be read, or a matrix variable outside its domain; the message names it."""


def read_yaml(path):
    """A data file shipped with the collection, parsed as yaml.safe_load would."""
    with open(path, encoding="utf-8") as f:
        return yaml_load(f)


@functools.lru_cache(maxsize=4)
def _read_matrix(path, mtime):  # pylint: disable=unused-argument  # mtime keys the cache: an edited file is re-read
    return read_yaml(path)


def matrix_data(path=MATRIX_FILE):
    """The shipped matrix file, parsed once per worker process (stack_assert runs per host in verification).
    engine.build_matrix copies what it takes, so the cached data is never changed."""
    try:
        return _read_matrix(path, os.stat(path).st_mtime_ns)
    except Exception as err:  # pylint: disable=broad-exception-caught  # I/O or PyYAML's YAMLError: the file is unusable
        raise DataError(f"cannot read the compatibility matrix {os.path.normpath(path)}: {err}") from err


def max_age_days(given, inventory):
    """The days after the matrix's as_of before verdicts warn (matrix_max_age, else the inventory's
    gpufleet_compat_matrix_max_age, else 180); the inventory schema checks the variable before any host."""
    value = given if given is not None else inventory
    if value in (None, ""):
        return MAX_AGE_DAYS
    if isinstance(value, bool) or not str(value).isascii() or not str(value).isdigit() or not 1 <= int(value) <= 3650:
        raise DataError(f"{AGE_VAR} (matrix_max_age) is {value!r}: give whole days from 1 to 3650, e.g. 180")
    return int(value)
