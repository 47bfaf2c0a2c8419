#!/usr/bin/env bash
# The one-shot CUDA check (bench/cuda_check.py) on a GPU machine without network: `bash bench/cuda_check.sh`.
#
# 1. For each wheel in .devwheels/ (git-ignored: carry it to the machine) whose module does not import, install
#    it with pip from that folder only (no index, no dependencies); where pip cannot, unpack it and put it on
#    PYTHONPATH. 2. Run the check under `timeout 330`. Report: $OUT/cuda_check.json; console: $OUT/cuda_check.log.
# The exit code is 0 unless the check could not start at all; the report says what failed.
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/cuda_check_out}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
SITE="$PWD/.devwheels/site"
EXTRA=""

module_of() {  # the module a wheel's distribution provides
  case "$1" in
    pyyaml|PyYAML) echo yaml ;;
    *) echo "$1" | tr '-' '_' ;;
  esac
}

run() {
  echo "== $(date -u +%FT%TZ) $($PY --version 2>&1) at $(command -v "$PY"), repository $PWD"
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv 2>&1 || echo "(no nvidia-smi)"
  for whl in .devwheels/*.whl; do
    [ -e "$whl" ] || { echo "no wheels in .devwheels/"; break; }
    dist=$(basename "$whl" | cut -d- -f1)
    mod=$(module_of "$dist")
    if $PY -c "import $mod" 2>/dev/null; then
      echo "$mod: present ($($PY -c "import $mod; print(getattr($mod, '__version__', '?'))" 2>/dev/null))"
    elif $PY -m pip install --no-index --no-deps --find-links .devwheels "$whl" >"$OUT/pip_$dist.log" 2>&1; then
      echo "$mod: installed from $whl"
      rm -f "$OUT/pip_$dist.log"
    else
      echo "$mod: pip failed (see pip_$dist.log); unpacking $whl onto PYTHONPATH"
      mkdir -p "$SITE" && $PY -m zipfile -e "$whl" "$SITE" && EXTRA="$SITE"
    fi
  done
  echo "== bench/cuda_check.py"
  PYTHONPATH="$PWD${EXTRA:+:$EXTRA}" timeout -k 20 330 $PY bench/cuda_check.py --out "$OUT/cuda_check.json"
  code=$?
  [ $code -eq 124 ] || [ $code -eq 137 ] && echo "== stopped by timeout; the report keeps the checks done before"
  echo "== cuda_check.py exit code $code; files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
}

run 2>&1 | tee "$OUT/cuda_check.log"
