#!/usr/bin/env bash
# One experiment's grid, run here one run after another: `launch/sweep.py --runner local` from
# the repository root, with NUM_WORKERS grain workers a run (default 6); a run that fails is
# started again from its last checkpoint up to RETRIES times (default 1). An experiment's
# sweep.sh names its recipe (a config with its arguments) and grid through this.
#
#   docs/results/local_sweep.sh CONFIG GRID SWEEP_DIR [extra launch/sweep.py flags]
set -euo pipefail
usage="usage: local_sweep.sh CONFIG GRID SWEEP_DIR [sweep.py flags]"
config=${1:?$usage}
grid=${2:?$usage}
out=${3:?$usage}
shift 3
cd "$(dirname "$0")/../.."
exec "${PYTHON:-python3}" launch/sweep.py --config="$config" --grid "$grid" --out "$out" \
  --runner local --retries="${RETRIES:-1}" --config.data.num_workers="${NUM_WORKERS:-6}" "$@"
