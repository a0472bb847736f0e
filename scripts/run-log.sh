# shellcheck shell=bash
# What an ansible-playbook log says, for scripts/lab.sh, rerun-bench.sh and scale-bench.sh (sourced).

changed_hosts() {  # $1 log: the hosts whose PLAY RECAP line reports changes, one per line
  awk '/PLAY RECAP/ {r=1; next} r && /changed=/ {split($4, c, "="); if (c[2] > 0) print $1}' "$1"
}

median_seconds() {  # run times in milliseconds as arguments: their median in seconds, one decimal
  printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {printf "%.1f", v[int((NR + 1) / 2)] / 1000}'
}

failures() {  # $1 log: each failed task (not ignored) with its host's error, then the PLAY RECAP lines
  awk '
    /^TASK \[/ { task = $0 }
    /^(fatal|failed): \[/ { if (pending != "") print pending; pending = task "\n  " substr($0, 1, 2000); next }
    pending != "" { if ($0 != "...ignoring") print pending; pending = "" }
    /^PLAY RECAP/ { recap = 1 }
    recap && NF == 0 { recap = 0 }
    recap { print }
  ' "$1"
}
