# gpufleet.stack — developer entry points. Every target sets up what it needs.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV ?= .venv
PY := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
NODES ?= 2
PROFILE ?= a100-sxm4-40gb-x8-nvswitch
SCENARIO ?= sandbox

.PHONY: demo setup venv engine images tools wheels test lint sanity unit integration molecule mutation build lock clean

## demo: the README's first command — toolchain, engine, images, the offline NVIDIA mirror, NODES sandbox nodes
## with simulated GPUs (PROFILE from sandbox/nvml-sim/profiles) and no driver; site.yml builds the stack, then
## playbooks/upgrade.yml rolls the fleet to sandbox/upgrade-target.yml; both refresh reports/fleet-report.html
demo: setup
	sandbox/mirror/build
	sandbox/mirror/serve start
	sandbox/fleet up $(NODES) --profile $(PROFILE) --no-driver
	ansible-playbook site.yml
	ansible-playbook playbooks/upgrade.yml -e @sandbox/upgrade-target.yml
	@echo "fleet report: $(CURDIR)/reports/fleet-report.html"

## setup: toolchain (.venv), Docker engine, node images, the browser that checks the HTML report, redis-server
## (the shared fact cache's test starts its own), promtool (Debian's prometheus: the alert rules' tests) and qemu
## (sandbox/bootcheck boots a node's own kernel)
setup: venv engine images tools wheels

tools:
	@command -v chromium >/dev/null && command -v pdftotext >/dev/null && command -v redis-server >/dev/null && command -v promtool >/dev/null || { \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium poppler-utils redis-server prometheus >/dev/null; }
	@# sandbox/bootcheck: qemu boots a node's own kernel (software emulation); its root disk is made with mkfs.ext4 -d.
	@command -v qemu-system-x86_64 >/dev/null && command -v mkfs.ext4 >/dev/null || { \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-system-x86 e2fsprogs >/dev/null; }

## wheels: the CPU torch wheel that the stack-facts unit tests read and the horovod and multinode scenarios install,
## in .cache/wheels: linked from the machine's /opt/wheels where it has it (these CI machines do), else downloaded
## from PyTorch's CPU index (PyPI has no +cpu build)
TORCH_CPU_WHEEL := torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl
wheels: .cache/wheels/$(TORCH_CPU_WHEEL)
.cache/wheels/$(TORCH_CPU_WHEEL): | venv
	mkdir -p .cache/wheels
	if [ -f /opt/wheels/$(TORCH_CPU_WHEEL) ]; then ln -f /opt/wheels/$(TORCH_CPU_WHEEL) $@ 2>/dev/null || cp /opt/wheels/$(TORCH_CPU_WHEEL) $@; \
	else $(PY) -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 --platform manylinux_2_28_x86_64 \
	  --index-url https://download.pytorch.org/whl/cpu -d .cache/wheels torch==2.13.0+cpu; fi

venv: $(VENV)/.stamp $(VENV)/.harness
$(VENV)/.stamp: requirements.in requirements.lock
	python3 -m venv $(VENV) || { apt-get update -qq && apt-get install -y -qq python3-venv && python3 -m venv $(VENV); }
	$(PY) -m pip install -q -r requirements.in -c <(grep -v '^#' requirements.lock)
	touch $@

## the test harness's speed-ups for the venv's Ansible, each loaded only where its variable is set (tests/conftest.py
## sets both): ansible-core's import walk per module (tests/harness/gpufleet_ansiballz_cache.py) and, for the modules
## the controller runs on itself (-c local), the compiled module_utils the nodes keep too (sandbox/pycode/)
$(VENV)/.harness: $(VENV)/.stamp tests/harness/gpufleet_ansiballz_cache.py sandbox/pycode/gpufleet_pycode.py
	printf '%s\n' '$(CURDIR)/tests/harness' '$(CURDIR)/sandbox/pycode' \
	  'import os; os.environ.get("GPUFLEET_ANSIBALLZ_CACHE") and __import__("gpufleet_ansiballz_cache")' \
	  'import os; os.environ.get("GPUFLEET_PYCODE_CACHE") and __import__("gpufleet_pycode")' \
	  > "$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/gpufleet_harness.pth"
	touch $@

engine:
	sandbox/fleet engine

images: engine
	sandbox/fleet images

## test: the README's second command — every check, one pytest summary at the end. TEST_WORKERS xdist workers
## (tests/conftest.py): one takes tests/integration whole, the others the lint and unit tests; 0 runs in one process.
TEST_WORKERS ?= 2
test: setup
	$(PY) -m pytest -n $(TEST_WORKERS) tests/lint tests/unit tests/integration

lint: venv
	$(PY) -m pytest tests/lint

sanity: venv
	$(PY) -m pytest tests/lint -k sanity

unit: venv
	$(PY) -m pytest tests/unit

integration: setup
	$(PY) -m pytest tests/integration

## molecule: one scenario (make molecule SCENARIO=sandbox)
molecule: setup
	molecule test -s $(SCENARIO)

## mutation: how many one-line bugs the unit tests catch in the pure module_utils (benchmarks/mutation.py, mutmut on a
## copy of the tree; not in CI: tens of minutes). MODULES="_common/versions.py ..." runs a few.
MODULES ?=
mutation: venv
	$(PY) benchmarks/mutation.py $(MODULES)

build: venv
	ansible-galaxy collection build --force --output-path build

lock:
	rm -rf /tmp/gpufleet-lock && python3 -m venv /tmp/gpufleet-lock
	/tmp/gpufleet-lock/bin/pip install -q -r requirements.in
	{ echo '# Full lock of the toolchain (pip freeze of a venv made from requirements.in). Regenerate with `make lock`.'; \
	  /tmp/gpufleet-lock/bin/pip freeze; } > requirements.lock

clean:
	sandbox/fleet down --all
	rm -rf build .cache
