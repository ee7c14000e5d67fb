#!/usr/bin/env bash
# The README's CPU demo for several seeds, each run on 1 and on 2 CPU cores: XLA's CPU backend
# sizes its thread pool from the cores a process may use (taskset), so the two settings reduce
# in different orders, as another CPU would.
#
#   docs/results/cpu_demo/run.sh OUT_DIR [CONFIG_ARGUMENT] [extra nupa_jax.train flags]
#
# CONFIG_ARGUMENT defaults to the README's (configs/pe.py:...). SEEDS (default 0,1,2,3,4) and
# THREADS (default 1,2) select runs; CORES (default 0,1) are the cores they share: runs start
# as soon as enough of them are free, 1-thread runs first. Each run trains in
# OUT_DIR/seed-S_threads-T; `S T exit-status seconds cores` lines go to OUT_DIR/times.txt.
set -uo pipefail
out=${1:?usage: run.sh OUT_DIR [CONFIG_ARGUMENT] [flags]}
arg=${2:-pe=abacus,offset=0,reverse=int,size=tiny}
shift $(( $# < 2 ? $# : 2 ))
cd "$(dirname "$0")/../../.."
mkdir -p "$out"
IFS=, read -r -a seeds <<<"${SEEDS:-0,1,2,3,4}"
IFS=, read -r -a threads <<<"${THREADS:-1,2}"
IFS=, read -r -a free <<<"${CORES:-0,1}"
declare -A held=()

reap() {  # frees the cores of finished runs
  local pid
  for pid in "${!held[@]}"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      read -r -a cores <<<"${held[$pid]}"
      free+=("${cores[@]}")
      unset "held[$pid]"
    fi
  done
}

for t in $(printf '%s\n' "${threads[@]}" | sort -n); do
  for seed in "${seeds[@]}"; do
    while [ "${#free[@]}" -lt "$t" ]; do wait -n 2>/dev/null; reap; sleep 1; done
    mine=("${free[@]:0:t}")
    free=("${free[@]:t}")
    name="seed-${seed}_threads-${t}"
    cores=$(IFS=,; echo "${mine[*]}")
    ( start=$(date +%s)
      taskset -c "$cores" "${PYTHON:-python3}" -m nupa_jax.train \
        --config="configs/pe.py:$arg,seed=$seed" --workdir="$out/$name" "$@" \
        >"$out/$name.log" 2>&1
      echo "$seed $t $? $(( $(date +%s) - start )) $cores" >>"$out/times.txt" ) &
    held[$!]="${mine[*]}"
  done
done
wait
