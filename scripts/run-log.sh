# shellcheck shell=bash
# What an ansible-playbook log says, for scripts/lab.sh, rerun-bench.sh and scale-bench.sh (sourced).

changed_hosts() {  # $1 log: the hosts whose PLAY RECAP line reports changes, one per line
  awk '/PLAY RECAP/ {r=1; next} r && /changed=/ {split($4, c, "="); if (c[2] > 0) print $1}' "$1"
}

median_seconds() {  # run times in milliseconds as arguments: their median in seconds, one decimal
  printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {printf "%.1f", v[int((NR + 1) / 2)] / 1000}'
}
