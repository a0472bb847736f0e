# gpulab: `make lab` builds the 4-node container lab and runs site.yml on it;
# `make test` runs lint, unit tests, every Molecule scenario and the lab (scripts/test.sh).
SHELL := /bin/bash
VENV := .venv
PY := python3.11
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
# `make test` runs scripts/test.sh: setup, then lint, unit tests, every Molecule scenario and
# the lab in lanes side by side, and a table of where the time went. GPULAB_SKIP_KERNEL=1 leaves
# the QEMU scenario `kernel` out for quick local runs; GPULAB_TEST_LANES chooses other lanes.
S ?= common
# The package cache of the test containers and VMs (scripts/package-cache.sh), unless the caller started it.
WITH_CACHE = [ -n "$${GPULAB_PIP_CACHE+set}" ] || eval "$$(scripts/package-cache.sh start)"; export GPULAB_PIP_CACHE GPULAB_APT_CACHE;

.PHONY: setup engine image ee lab lab-destroy doctor test test-lab test-ee lint test-unit molecule clean

setup: $(VENV)/.installed $(VENV)/.compile-cache .collections/ansible_collections/gpulab/cluster .cache/tools/promtool

$(VENV)/.installed: pyproject.toml
	@command -v $(PY) >/dev/null || { echo "setup: $(PY) is required (ansible 12 supports Python 3.11)"; exit 1; }
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' > $(VENV)/requirements.txt
	$(VENV)/bin/pip install -q -r $(VENV)/requirements.txt
	touch $@

# Ansible's workers keep what they compile (Jinja templates, collection plugins) in ~/.cache/gpulab-compile
# and load this collection's filters before forking: see scripts/gpulab_compile_cache.py and docs/speed.md.
$(VENV)/.compile-cache: scripts/gpulab_compile_cache.py $(VENV)/.installed
	site=$$($(VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') && \
	  cp scripts/gpulab_compile_cache.py "$$site/" && echo 'import gpulab_compile_cache' > "$$site/gpulab-compile-cache.pth"
	touch $@

.collections/ansible_collections/gpulab/cluster:
	mkdir -p .collections/ansible_collections/gpulab
	ln -sfn ../../.. $@

# promtool (alert rule tests, the metrics format) from Debian's prometheus package, unpacked:
# nothing is installed on this machine and no Prometheus starts here.
.cache/tools/promtool:
	mkdir -p .cache/tools/deb
	cd .cache/tools/deb && { apt-get download -q prometheus || { apt-get update -q && apt-get download -q prometheus; }; }
	dpkg-deb --fsys-tarfile .cache/tools/deb/prometheus_*.deb | tar -x -O ./usr/bin/promtool > $@.part
	chmod 755 $@.part && mv $@.part $@
	rm -rf .cache/tools/deb

engine:
	scripts/ensure-docker.sh

image: engine
	tests/images/build.sh

lab: setup image
	scripts/lab.sh

# The execution environment for AWX / Automation Platform, from the test image (no registry).
ee: setup image
	scripts/ee.sh

lab-destroy: setup
	ansible-playbook playbooks/lab-destroy.yml

# What changed on the lab since its last good run (make doctor ARGS='-e doctor_accept=true' records one).
doctor: setup
	ansible-playbook playbooks/doctor.yml $(ARGS)

# The lab from scratch (check mode, converge without the benchmarks, no-change rerun with them),
# then its validation report, read back and looked at in headless Chromium.
test-lab: setup image
	scripts/lab.sh --fresh
	pytest tests/lab --durations=15
	ansible-playbook playbooks/lab-destroy.yml >/dev/null

# The execution environment built, then a playbook run in it through ansible-runner.
test-ee: ee
	pytest tests/ee

test:
	scripts/test.sh

lint: setup
	yamllint -s .
	ruff check plugins tests molecule roles scripts
	ruff format --check plugins tests molecule roles scripts
	ansible-lint
	scripts/sanity.sh

test-unit: setup
	pytest tests/unit tests/playbooks --durations=10

molecule: setup image
	$(WITH_CACHE) molecule test -s $(S)

clean: lab-destroy
	rm -rf .cache
