#!/usr/bin/env bash
# ansible-test sanity on a copy of this tree at ansible_collections/gpulab/cluster (the path and
# the git tree it needs). Works offline: ansible-test's pip bootstrap (a get-pip.py it would
# download) is stood in for by the interpreter's own ensurepip; packages come from pip's index.
set -euo pipefail
cd "$(dirname "$0")/.."
# ansible-test skips its shellcheck test where shellcheck is missing: install it (Debian has it).
command -v shellcheck >/dev/null || scripts/host-packages.sh shellcheck
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dest=$work/ansible_collections/gpulab/cluster
mkdir -p "$dest"
git ls-files --cached --others --exclude-standard -z | while IFS= read -r -d '' f; do
  [ -e "$f" ] && printf '%s\0' "$f"
done | xargs -0 cp --parents -t "$dest"
git -C "$dest" init -q
git -C "$dest" add -A
git -C "$dest" -c user.name=gpulab -c user.email=gpulab@localhost commit -qm sanity

pip_version=$(python3 - <<'PY'
import inspect, re
from ansible_test._internal import python_requirements
print(re.search(r"pip='([0-9.]+)'", inspect.getsource(python_requirements.get_venv_packages)).group(1))
PY
)
stand_in=~/.ansible/test/cache/get_pip_${pip_version//./_}.py
mkdir -p "$(dirname "$stand_in")"
# Written every run, so that a change here reaches machines that kept an older stand-in.
cat >"$stand_in" <<'PY'
# gpulab (scripts/sanity.sh): stands in for get-pip.py: pip from ensurepip, then what was asked for.
# ansible-test passes pip little of the environment: fall back to the system's CA bundle.
import ensurepip, os, subprocess, sys
ensurepip.bootstrap(upgrade=True)
bundle = os.environ.get("REQUESTS_CA_BUNDLE") or "/etc/ssl/certs/ca-certificates.crt"
cert = ["--cert", bundle] if os.path.exists(bundle) else []
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "pip", "install", *cert, *args])
PY
# ansible-test runs pip isolated from pip's config: hand it the CA bundle the machine uses.
ca=${REQUESTS_CA_BUNDLE:-${PIP_CERT:-${SSL_CERT_FILE:-}}}
[ -z "$ca" ] || export REQUESTS_CA_BUNDLE=$ca
python=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
cd "$dest"
ansible-test sanity --local --python "$python" --color no
