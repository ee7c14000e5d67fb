#!/usr/bin/env bash
# The README's CPU demo for several seeds, each run on 1 and on 2 CPU cores at once, on disjoint
# cores: XLA's CPU backend sizes its thread pool from the cores a process may use, so the two
# settings reduce in different orders -- as another CPU would.
#
#   docs/results/cpu_demo/run.sh OUT_DIR FIRST_CORE [CONFIG_ARGUMENT] [extra nupa_jax.train flags]
#
# CONFIG_ARGUMENT defaults to the README's (configs/pe.py:...); SEEDS (default 0,1,2,3,4) and
# THREADS (default 1,2) select runs. Each run trains in OUT_DIR/seed-S_threads-T and its wall
# time goes to OUT_DIR/seed-S_threads-T.time; `summary.py OUT_DIR` tabulates them.
set -uo pipefail
out=${1:?usage: run.sh OUT_DIR FIRST_CORE [CONFIG_ARGUMENT] [flags]}
core=${2:?missing FIRST_CORE}
arg=${3:-pe=rope,size=tiny,reverse=int}
shift $(( $# < 3 ? $# : 3 ))
cd "$(dirname "$0")/../../.."
mkdir -p "$out"
pids=()
IFS=, read -r -a seeds <<<"${SEEDS:-0,1,2,3,4}"
IFS=, read -r -a threads <<<"${THREADS:-1,2}"
for seed in "${seeds[@]}"; do
  for t in "${threads[@]}"; do
    cores=$(seq -s, "$core" $((core + t - 1)))
    core=$((core + t))
    name="seed-${seed}_threads-${t}"
    ( start=$(date +%s)
      taskset -c "$cores" "${PYTHON:-python3}" -m nupa_jax.train \
        --config="configs/pe.py:$arg,seed=$seed" --workdir="$out/$name" "$@" \
        >"$out/$name.log" 2>&1
      echo "$? $(( $(date +%s) - start )) cores=$cores" >"$out/$name.time" ) &
    pids+=("$!")
  done
done
wait "${pids[@]}"
