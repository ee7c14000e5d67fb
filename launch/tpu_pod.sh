#!/usr/bin/env bash
# One nupa_jax training run on a Cloud TPU VM slice (one host or a pod slice), run from your
# own machine with gcloud, following Cloud TPU's "Run JAX code on TPU slices" guide:
#
#   launch/tpu_pod.sh --name NAME --zone ZONE [--project ID] [--accelerator-type v4-32]
#       [--version RUNTIME] [--spot] [--no-install] [--dry-run] -- TRAIN_ARGS...
#   launch/tpu_pod.sh --name NAME --zone ZONE --attach      # stream a running job's log again
#
# 1. reuses the TPU VM NAME if `gcloud compute tpus tpu-vm describe` finds it, else creates it
#    (`tpu-vm create --accelerator-type --version`; the runtime defaults to the one Cloud TPU
#    recommends for JAX on that TPU generation: v6e v2-alpha-tpuv6e, v5p v2-alpha-tpuv5,
#    v5e v2-alpha-tpuv5-lite, v4 and older tpu-ubuntu2204-base);
# 2. copies this checkout (tracked and untracked, non-ignored files) to every worker and
#    installs it there with jax[tpu] (`tpu-vm scp/ssh --worker=all`; skipped with --no-install);
# 3. starts `python3 -m nupa_jax.train TRAIN_ARGS` on all workers at once (`--worker=all`),
#    detached, so a dropped connection does not stop the run; JAX finds the slice's hosts
#    itself (nupa_jax.distributed);
# 4. streams worker 0's log (process 0 is the one that prints) until the run ends, and exits
#    with its status.
# The workdir must be shared by all workers (checkpoints are written by all processes
# together): an NFS / Filestore mount or a bucket mounted with gcsfuse.
# --dry-run prints the commands instead of running them (no gcloud call, no file written).
set -euo pipefail

die() {
  echo "tpu_pod.sh: $*" >&2
  exit 2
}

name=""
zone=""
project=""
accelerator=""
runtime=""
spot=0
install=1
dry_run=0
attach=0
while (($# > 0)); do
  case "$1" in
    --name=*) name=${1#*=} ;;
    --zone=*) zone=${1#*=} ;;
    --project=*) project=${1#*=} ;;
    --accelerator-type=*) accelerator=${1#*=} ;;
    --version=*) runtime=${1#*=} ;;
    --name | --zone | --project | --accelerator-type | --version)
      (($# >= 2)) || die "$1 needs a value"
      set -- "$1=$2" "${@:3}"
      continue
      ;;
    --spot) spot=1 ;;
    --no-install) install=0 ;;
    --dry-run) dry_run=1 ;;
    --attach) attach=1 ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    --)
      shift
      break
      ;;
    *) die "unknown option $1 (train arguments go after --; see --help)" ;;
  esac
  shift
done
[[ -n "$name" && -n "$zone" ]] || die "--name and --zone are required"
((attach || $# > 0)) || die "no train arguments: tpu_pod.sh ... -- --config=... --workdir=..."

repo=$(cd "$(dirname "$0")/.." && pwd)
remote_dir=nupa_jax  # in each worker's home directory
log=run.log
status_file=run.status
pid_file=run.pid
archive=nupa_jax_src.tar.gz
location=(--zone="$zone")
[[ -n "$project" ]] && location+=(--project="$project")

# Its arguments as one shell-quoted line: '...' around any argument (or --flag= value) that
# needs quoting.
quote() {
  local arg flag value quoted=()
  for arg in "$@"; do
    flag=""
    value=$arg
    if [[ "$arg" =~ ^(--[A-Za-z0-9_.-]+=)(.*)$ ]]; then
      flag=${BASH_REMATCH[1]}
      value=${BASH_REMATCH[2]}
    fi
    if [[ "$value" =~ ^[A-Za-z0-9_./:=,@%+-]+$ ]]; then
      quoted+=("$arg")
    else
      quoted+=("$flag'${value//\'/\'\\\'\'}'")
    fi
  done
  echo "${quoted[*]}"
}

# Prints the command (dry run) or runs it.
run() {
  if ((dry_run)); then
    quote "$@"
  else
    "$@"
  fi
}

default_runtime() {
  case "$1" in
    v6e-*) echo v2-alpha-tpuv6e ;;
    v5p-*) echo v2-alpha-tpuv5 ;;
    v5litepod-* | v5e-*) echo v2-alpha-tpuv5-lite ;;
    v2-* | v3-* | v4-*) echo tpu-ubuntu2204-base ;;
    *) die "no default runtime for accelerator type '$1': pass --version" ;;
  esac
}

ensure_tpu() {
  local describe=(gcloud compute tpus tpu-vm describe "$name" "${location[@]}"
    --format='value(state)')
  if ((dry_run)); then
    run "${describe[@]}"
    echo "# only if describe finds no TPU VM $name:"
  elif "${describe[@]}" >/dev/null 2>&1; then
    echo "tpu_pod.sh: reusing TPU VM $name" >&2
    return
  fi
  [[ -n "$accelerator" ]] || die "TPU VM $name does not exist: pass --accelerator-type to create it"
  local create=(gcloud compute tpus tpu-vm create "$name" "${location[@]}"
    --accelerator-type="$accelerator" --version="${runtime:-$(default_runtime "$accelerator")}")
  ((spot)) && create+=(--spot)
  run "${create[@]}"
}

ssh_all() {
  run gcloud compute tpus tpu-vm ssh "$name" "${location[@]}" --worker="$1" --command="$2"
}

install_project() {
  local local_archive
  local_archive=$(mktemp -u "${TMPDIR:-/tmp}/nupa_jax_src.XXXXXX.tar.gz")
  if ((dry_run)); then
    echo "(cd $(quote "$repo") && git ls-files -z --cached --others --exclude-standard |" \
      "tar -czf $(quote "$local_archive") --null -T -)"
  else
    (cd "$repo" && git ls-files -z --cached --others --exclude-standard |
      tar -czf "$local_archive" --null -T -)
  fi
  run gcloud compute tpus tpu-vm scp "$local_archive" "$name:$archive" "${location[@]}" --worker=all
  ((dry_run)) || rm -f "$local_archive"
  ssh_all all "rm -rf $remote_dir && mkdir -p $remote_dir && tar -xzf $archive -C $remote_dir \
&& python3 -m pip install -q -U 'jax[tpu]' && python3 -m pip install -q -e $remote_dir"
}

start_run() {
  local train inner
  train="python3 -m nupa_jax.train $(quote "$@")"
  inner="echo \$\$ > $pid_file; $train > $log 2>&1; echo \$? > $status_file"
  ssh_all all "cd $remote_dir && rm -f $log $status_file $pid_file \
&& nohup bash -c $(quote "$inner") > /dev/null 2>&1 < /dev/null &"
}

stream_log() {
  # Waits for the log, follows it until the run's process exits, then returns its status.
  ssh_all 0 "cd $remote_dir && while [ ! -s $pid_file ]; do sleep 1; done \
&& touch $log && tail -n +1 -f $log --pid=\$(cat $pid_file) \
&& while [ ! -s $status_file ]; do sleep 1; done && exit \$(cat $status_file)"
}

if ((!attach)); then
  ensure_tpu
  ((install)) && install_project
  start_run "$@"
fi
stream_log
