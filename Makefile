# gpulab: `make lab` builds the 4-node container lab and runs site.yml on it;
# `make test` runs lint, unit tests and every Molecule scenario.
SHELL := /bin/bash
VENV := .venv
PY := python3.11
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
# Scenarios in the order `make test` runs them (cheap ones first). `kernel` boots two QEMU
# VMs (about 14 minutes on two cores, 16 when it builds their image); GPULAB_SKIP_KERNEL=1 leaves it out for quick local runs.
SCENARIOS ?= preflight common network storage ceph gpu_stack slurm $(if $(GPULAB_SKIP_KERNEL),,kernel)
S ?= common

.PHONY: setup engine image lab lab-destroy test test-lab lint test-unit molecule molecule-all clean

setup: $(VENV)/.installed .collections/ansible_collections/gpulab/cluster

$(VENV)/.installed: pyproject.toml
	@command -v $(PY) >/dev/null || { echo "setup: $(PY) is required (ansible 12 supports Python 3.11)"; exit 1; }
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' > $(VENV)/requirements.txt
	$(VENV)/bin/pip install -q -r $(VENV)/requirements.txt
	touch $@

.collections/ansible_collections/gpulab/cluster:
	mkdir -p .collections/ansible_collections/gpulab
	ln -sfn ../../.. $@

engine:
	scripts/ensure-docker.sh

image: engine
	tests/images/build.sh

lab: setup image
	scripts/lab.sh

lab-destroy: setup
	ansible-playbook playbooks/lab-destroy.yml

# The lab from scratch: check mode on fresh nodes, converge, a rerun that changes nothing.
# The lab from scratch (check mode, converge, no-change rerun), then its validation report,
# read back and looked at in headless Chromium.
test-lab: setup image
	scripts/lab.sh --fresh
	pytest tests/lab
	ansible-playbook playbooks/lab-destroy.yml >/dev/null

test: lint test-unit molecule-all test-lab

lint: setup
	yamllint -s .
	ruff check plugins tests molecule roles
	ruff format --check plugins tests molecule roles
	ansible-lint

test-unit: setup
	pytest tests/unit tests/playbooks

molecule: setup image
	molecule test -s $(S)

molecule-all: setup image
	@set -e; for s in $(SCENARIOS); do echo "== molecule test -s $$s"; molecule test -s $$s; done

clean: lab-destroy
	rm -rf .cache
