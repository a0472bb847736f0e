#!/bin/bash
# Record real nvidia-smi output and run the health modules on this machine's GPU.
# Usage: tests/device/run.sh OUTDIR   (from the repository root; wheels for ansible-core in .whl/
# when the machine has no ansible). Writes OUTDIR/gpu-check.tar.gz and OUTDIR/gpu-check.log, and
# exits non-zero when any expected verdict of tests/device/gpu_check.yml does not hold.
set -u
out=${1:?output directory}
work=$(mktemp -d)
rec=$work/recorded
mkdir -p "$rec"
exec > >(tee "$out/gpu-check.log") 2>&1
export LC_ALL=C.UTF-8 PYTHONUNBUFFERED=1

if ! python3 -c 'import ansible' 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$work/site" .whl/*.whl || exit 1
    export PYTHONPATH=$work/site PATH=$work/site/bin:$PATH
fi
mkdir -p "$work/collections/ansible_collections/gpulab"
ln -s "$PWD" "$work/collections/ansible_collections/gpulab/cluster"
# The repository's ansible.cfg names ansible.posix callbacks that machine may not have.
printf '[defaults]\ninject_facts_as_vars = False\nresult_format = yaml\n' >"$work/ansible.cfg"
export ANSIBLE_CONFIG=$work/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$work/collections ANSIBLE_LOCALHOST_WARNING=false ANSIBLE_INVENTORY_UNPARSED_WARNING=false

record() {  # record NAME COMMAND...: stdout, then the exit code, as the fixture files
    local name=$1; shift
    "$@" >"$rec/$name" 2>"$rec/$name.stderr"; echo $? >"$rec/$name.rc"
    echo "== $name: rc $(cat "$rec/$name.rc"), $(wc -c <"$rec/$name") bytes"
}
smi_py='from ansible_collections.gpulab.cluster.plugins.module_utils import nvidia_smi as s
print(s.query_fields()); print(s.query_fields(old_names=True)); print(s.REMAP_FIELDS)'
{ read -r fields; read -r old_fields; read -r remap; } < <(PYTHONPATH=$work/collections${PYTHONPATH:+:$PYTHONPATH} python3 -c "$smi_py")
echo "query fields: $fields"
record nvidia-smi.txt nvidia-smi
record nvidia-smi-L.txt nvidia-smi -L
record q_x.xml nvidia-smi -q -x
record q.txt nvidia-smi -q
record query.csv nvidia-smi --query-gpu="$fields" --format=csv,noheader,nounits
record query_old_names.csv nvidia-smi --query-gpu="$old_fields" --format=csv,noheader,nounits
record remapped_rows.csv nvidia-smi --query-remapped-rows="$remap" --format=csv,noheader,nounits
record nvlink_status.txt nvidia-smi nvlink --status
record help_query_gpu.txt nvidia-smi --help-query-gpu
record topo.txt nvidia-smi topo -m
record compute_apps.csv nvidia-smi --query-compute-apps=gpu_bus_id,pid,used_memory --format=csv,noheader,nounits
record memory.csv nvidia-smi --query-gpu=pci.bus_id,memory.used,memory.total --format=csv,noheader,nounits
# The same two while a process holds 1 GiB of GPU memory (gpu_health's memory_held check reads them).
python3 -c 'import time, torch; x = torch.ones(2**28, device="cuda"); print("holding", flush=True); time.sleep(60)' >"$work/hold.out" 2>&1 &
hold=$!
for _ in $(seq 60); do grep -q holding "$work/hold.out" && break; sleep 1; done
record compute_apps_busy.csv nvidia-smi --query-compute-apps=gpu_bus_id,pid,used_memory --format=csv,noheader,nounits
record memory_busy.csv nvidia-smi --query-gpu=pci.bus_id,memory.used,memory.total --format=csv,noheader,nounits
kill "$hold"; wait "$hold" 2>/dev/null
record dmesg.txt dmesg
# shellcheck disable=SC2016  # expanded by the inner sh
record pci_nvidia.txt sh -c 'grep -l 0x10de /sys/bus/pci/devices/*/vendor | while read f; do d=${f%/vendor}; echo "${d##*/} $(cat $d/class) $(cat $d/device)"; done'
record proc_driver_version.txt cat /proc/driver/nvidia/version
cat "$rec/nvidia-smi.txt" "$rec/query.csv" "$rec/remapped_rows.csv"

# The monitoring role's GPU metrics from this GPU, checked by promtool where it was carried here
# (.cache/tools/promtool, from `make setup`), and the NVML calls this GPU does not answer.
PYTHONPATH=$work/collections${PYTHONPATH:+:$PYTHONPATH} record gpu_metrics.json python3 tests/device/gpu_metrics.py "$rec"
metrics_rc=$(cat "$rec/gpu_metrics.json.rc")
if [ -x .cache/tools/promtool ] && [ -e "$rec/gpulab_gpu.prom" ]; then
    # shellcheck disable=SC2016  # expanded by the inner sh
    record promtool_check_metrics.txt sh -c '.cache/tools/promtool check metrics <"$1" 2>&1' _ "$rec/gpulab_gpu.prom"
    [ "$(cat "$rec/promtool_check_metrics.txt.rc")" = 0 ] || metrics_rc=1
    cat "$rec/promtool_check_metrics.txt"
fi

# The training role's DDP example on this GPU with NCCL, one node: its step time and epochs to
# target (digits from tests/device/digits.npz: the machine may have no scikit-learn).
record train_digits_nccl.txt timeout 300 torchrun --standalone --nproc-per-node=1 roles/training/files/train_digits.py \
    --data tests/device/digits.npz --stop-at-target --epochs 30 --checkpoint-dir=
grep -E '^(ranks|epoch|GPULAB_RESULT)' "$rec/train_digits_nccl.txt"
grep -q '"device": "cuda"' "$rec/train_digits_nccl.txt" && grep -q '"reached": true' "$rec/train_digits_nccl.txt" || metrics_rc=1

branch=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1 | cut -d. -f1)
# Twice, as the doctor runs: the first records the baseline, the second is compared with it.
rc=0
for run in 1 2; do
    start=$(date +%s)
    GPU_CHECK_BRANCH=$branch GPU_CHECK_OUT=$work timeout 300 ansible-playbook -i localhost, tests/device/gpu_check.yml -e ansible_python_interpreter="$(command -v python3)" || rc=$?
    echo "playbook run $run rc $rc in $(( $(date +%s) - start )) s"
    cp "$work/results.json" "$work/results-$run.json"
done
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(json.dumps({k: r[k] for k in ("gpu_health_status","report_verdict","versions","changed_since")}, indent=1))' "$work/results.json"
# A regression on real numbers: the second run against a baseline whose step time was half of what it measured.
# shellcheck disable=SC2016
PYTHONPATH=$work/collections${PYTHONPATH:+:$PYTHONPATH} python3 -c '
import json, sys
from ansible_collections.gpulab.cluster.plugins.module_utils import baseline
old, now = (json.load(open(p)) for p in sys.argv[1:])
for check in old["cluster"]["collective"]["checks"]:
    if check["check"] == "collective.step_time":
        check["value"] /= 2
found = [r for r in baseline.compare(old, now)["regressions"] if r["check"] == "cluster collective.step_time"]
print("injected regression:", found[0]["message"] if found else "NOT FOUND")
sys.exit(0 if found else 1)' "$work/baseline.json" "$work/reports/latest/report.json" || rc=1
tar -C "$work" -czf "$out/gpu-check.tar.gz" recorded results-1.json results-2.json baseline.json reports
ls -la "$out"
# The playbook asserts every expected verdict; the metrics must be readable and pass promtool, and
# the DDP example must reach its target on the GPU.
echo "gpu metrics rc $metrics_rc"
[ "$rc" -ne 0 ] && exit "$rc"
exit "$metrics_rc"
