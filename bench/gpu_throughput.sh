#!/usr/bin/env bash
# Training images/s per quick-profile network on a CUDA machine: `bash bench/gpu_throughput.sh` (under 3 minutes).
#
# Installs nothing heavy: it uses the machine's own python and torch, and the repository through PYTHONPATH (no
# `pip install`). The light packages `import dganalysis` needs (numpy, pandas, tqdm) are installed only if missing,
# from .devwheels/ when it was carried there (no index, no dependencies). DomainBed's ERM is imported from
# $DOMAINBED_SRC or shared/reference/DomainBed when present; otherwise the bench uses the same update written in
# bench/_network_peak.py and says so (to bring DomainBed along: copy it under the git-ignored build/, carry
# build/DomainBed and run `DOMAINBED_SRC=build/DomainBed bash bench/gpu_throughput.sh`).
# Output: the console and $OUT/gpu_throughput.log.
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu_throughput_out}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"

run() {
  echo "== $(date -u +%FT%TZ) $($PY --version 2>&1) at $(command -v "$PY"), repository $PWD"
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv 2>&1 || echo "(no nvidia-smi)"
  $PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" || exit 1
  for mod in numpy pandas tqdm; do
    if ! $PY -c "import $mod" 2>/dev/null; then
      if ls .devwheels/"$mod"-*.whl >/dev/null 2>&1; then
        $PY -m pip install -q --no-index --no-deps --find-links .devwheels "$mod" || echo "$mod: pip failed"
      else
        echo "$mod: missing and not in .devwheels/ (import dganalysis will fail)"
      fi
    fi
  done
  # the profile's batch (32 per training domain) on every network, then 8x the batch on the small networks
  PYTHONPATH="$PWD" timeout -k 10 100 $PY bench/train_throughput.py --networks --device cuda --seconds 1 --rounds 3
  echo "== exit code $?"
  PYTHONPATH="$PWD" timeout -k 10 60 $PY bench/train_throughput.py --networks --device cuda --seconds 1 --rounds 3 \
    --batch-mult 8 --only smallcnn mlp
  echo "== exit code $?"
}

run 2>&1 | tee "$OUT/gpu_throughput.log"
