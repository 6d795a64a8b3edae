"""Stand-in for the get-pip.py that ansible-test downloads to bootstrap pip in its sanity venvs.

ansible-test fetches get-pip from ci-files.testing.ansible.com, which our CI cannot reach
(https://github.com/ansible/ansible/issues/77304). tests/lint/test_lint.py copies this file to
ansible-test's cache path; it gives the empty venv pip with the interpreter's own ensurepip, then
runs `pip install` with the arguments ansible-test passes (e.g. pip==24.2) from PyPI as usual.
"""

import runpy
import subprocess
import sys

subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"], stdout=subprocess.DEVNULL)
# get-pip.py's own flags; plain `pip install` does not know them.
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.argv = ["pip", "install", *args]
runpy.run_module("pip", run_name="__main__", alter_sys=True)
