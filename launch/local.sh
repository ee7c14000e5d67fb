#!/usr/bin/env bash
# Runs one multi-process JAX job as N processes on this machine: what a cluster does over N
# hosts, here to test multi-host code paths on a laptop (CPU) or to run one process per GPU.
#
#   launch/local.sh -n N [-d DEVICES_PER_PROCESS] [-p cpu|gpu] [-m MODULE] [-P PORT] -- ARGS...
#
# Each process runs `${PYTHON:-python3} -m MODULE ARGS...` (MODULE default nupa_jax.train) with
# JAX_COORDINATOR_ADDRESS=localhost:PORT (a free port unless -P), JAX_NUM_PROCESSES=N and
# JAX_PROCESS_ID=i, which nupa_jax.distributed turns into jax.distributed.initialize().
#   cpu: each process gets DEVICES_PER_PROCESS fake CPU devices (XLA_FLAGS) and JAX_PLATFORMS=cpu.
#   gpu: process i gets GPUs [i*D, (i+1)*D) of those visible (CUDA_VISIBLE_DEVICES if set,
#        else all that nvidia-smi lists).
# -p defaults to gpu when nvidia-smi lists a GPU, else cpu; -d defaults to 1.
# Output lines are prefixed with [pI]. The script waits for all processes; as soon as one
# fails, the others are killed (they would otherwise wait for their peer until JAX's
# timeouts) and the script exits with the first failure's status. Ctrl-C (SIGINT) or SIGTERM
# is passed on to every process and the script waits for them: the trainer stops at a step
# they agree on, saves a checkpoint and exits with 130 / 143 (docs/faults.md), which the
# script then exits with.
#
# Example (2 processes x 4 CPU devices, the tiny preset):
#   launch/local.sh -n 2 -d 4 -- --config=configs/pe.py:size=tiny --workdir=/tmp/nupa2
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}

die() {
  echo "local.sh: $*" >&2
  exit 2
}

num=""
per_process=1
platform=auto
module=nupa_jax.train
port=""
while getopts ":n:d:p:m:P:h" opt; do
  case "$opt" in
    n) num=$OPTARG ;;
    d) per_process=$OPTARG ;;
    p) platform=$OPTARG ;;
    m) module=$OPTARG ;;
    P) port=$OPTARG ;;
    h) usage ;;
    :) die "-$OPTARG needs a value (see -h)" ;;
    *) die "unknown option -$OPTARG (see -h)" ;;
  esac
done
shift $((OPTIND - 1))

[[ "$num" =~ ^[1-9][0-9]*$ ]] || die "-n N: a positive number of processes is required"
[[ "$per_process" =~ ^[1-9][0-9]*$ ]] || die "-d $per_process: expected a positive integer"
python=${PYTHON:-python3}

if [[ "$platform" == auto ]]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    platform=gpu
  else
    platform=cpu
  fi
fi

case "$platform" in
  cpu) ;;
  gpu)
    if [[ -n "${CUDA_VISIBLE_DEVICES:-}" ]]; then
      IFS=, read -r -a gpus <<<"$CUDA_VISIBLE_DEVICES"
    else
      mapfile -t gpus < <(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null || true)
    fi
    needed=$((num * per_process))
    ((${#gpus[@]} >= needed)) ||
      die "-n $num -d $per_process needs $needed GPUs but ${#gpus[@]} are visible; lower -n or -d"
    ;;
  *) die "-p $platform: expected cpu or gpu" ;;
esac

if [[ -z "$port" ]]; then
  port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("localhost", 0)); print(s.getsockname()[1])')
fi

# Each process runs in its own process group (job control), so that killing the group stops
# both the Python process and its output prefixer.
set -m
pids=()
# After a failure the others cannot finish (their next collective waits for the failed
# process) and would treat SIGTERM as a request to stop at the next step: they are killed.
cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
}
stopping=""
# shellcheck disable=SC2329  # called by the traps below
forward() {  # a signal for the job: each process handles it (nupa_jax/training/stopping.py)
  local pid
  stopping=$1
  for pid in "${pids[@]}"; do
    kill "-$1" -- "-$pid" 2>/dev/null || true
  done
}
trap 'forward INT' INT
trap 'forward TERM' TERM
trap cleanup EXIT

for ((i = 0; i < num; i++)); do
  env_vars=(JAX_COORDINATOR_ADDRESS="localhost:$port" JAX_NUM_PROCESSES="$num" JAX_PROCESS_ID="$i")
  if [[ "$platform" == cpu ]]; then
    env_vars+=(JAX_PLATFORMS=cpu
      XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }--xla_force_host_platform_device_count=$per_process")
  else
    devices=$(IFS=,; echo "${gpus[*]:$((i * per_process)):$per_process}")
    env_vars+=(CUDA_VISIBLE_DEVICES="$devices")
  fi
  # The group's shells outlive a forwarded signal (a trap defers it; the prefixer ignores it),
  # so the process's last lines (its stop message) are still printed and its status kept.
  (
    trap ':' INT TERM
    env "${env_vars[@]}" PYTHONUNBUFFERED=1 "$python" -m "$module" "$@" 2>&1 |
      {
        trap '' INT TERM
        while IFS= read -r line || [[ -n "$line" ]]; do printf '[p%d] %s\n' "$i" "$line"; done
      }
    exit "${PIPESTATUS[0]}"
  ) &
  pids+=($!)
done
set +m  # groups are assigned; no job-status notices for the processes killed below

# Poll rather than `wait -n`, which cannot tell which process ended before bash 5.1.
status=0
running=$num
declare -A done_pids=()
while ((running > 0)); do
  for i in "${!pids[@]}"; do
    pid=${pids[$i]}
    [[ -n "${done_pids[$pid]:-}" ]] && continue
    kill -0 "$pid" 2>/dev/null && continue
    rc=0
    wait "$pid" || rc=$?
    done_pids[$pid]=1
    running=$((running - 1))
    if ((rc != 0 && status == 0)); then
      status=$rc
      if [[ -z "$stopping" ]]; then  # a failure; stopping processes are left to finish
        echo "local.sh: process $i exited with status $rc; stopping the others" >&2
        cleanup
      fi
    fi
  done
  ((running > 0)) && sleep 0.2
done
trap - EXIT
exit "$status"
