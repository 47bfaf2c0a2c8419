#!/usr/bin/env bash
# The main job's three timings on one CPU machine, in one command: `bash bench/cpu_kind_check.sh [OUT]`.
#
# What the README promises for a 2-core CPU of either kind (fp32 on an AMD without AMX, bf16 autocast on an Intel
# with AMX-bf16), measured on this machine, each from a fresh clone of this repository's HEAD:
#   1. `bash quickstart.sh` (set-up and the main job: every notebook, quick profile), wall time, with the precision
#      its jobs ran in and the findings reproduced;
#   2. training images/s of the quick profile's networks against the CPU's peak, DomainBed's ERM update beside ours
#      (bench/train_throughput.py --networks in the environment step 1 set up; one thread, idle and with every
#      core busy);
#   3. `bash .ci/run` (set-up, ruff, the README's test command), wall time.
# Run it on an otherwise idle machine (it says the load average at each step). Results: OUT (default
# bench/results/cpu_kind_<host>_<date>/): lscpu.txt, throughput.log, quickstart.log, ci.log and summary.txt with
# the three figures and the precision the quick profile chose. Takes about an hour on 2 cores. $THROUGHPUT_ARGS
# replaces the throughput bench's arguments.
#
# EMULATE=avx2 (root, Linux) runs all three as an AVX2-only CPU would, on a CPU with more: the kernels' dispatch
# capped at AVX2 (ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA, MKL_ENABLE_INSTRUCTIONS), training in fp32
# (DGANALYSIS_CPU_PRECISION) and, in a private mount namespace, a /proc/cpuinfo without the AVX-512 and AMX flags
# (so the tests and the quick profile see the CPU as an AVX2-only one). It reproduces a Zen 3's instruction set,
# not its clock or caches: the summary says EMULATED, and its times are this CPU's at AVX2.
set -u
cd "$(dirname "$0")/.."
REPO="$PWD"
if [ "${EMULATE:-}" = avx2 ] && [ -z "${_DGA_EMULATED:-}" ]; then
  fake="$(mktemp /tmp/dga_cpuinfo_avx2.XXXXXX)"
  sed -E -e 's/ (avx512[a-z_0-9]*|amx[a-z_0-9]*)//g' \
      -e 's/^(model name[[:space:]]*: .*)$/\1 [EMULATED: dispatch capped at AVX2]/' /proc/cpuinfo > "$fake"
  export _DGA_EMULATED=1 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 \
    DGANALYSIS_CPU_PRECISION=fp32
  exec unshare -m bash -c 'mount --bind "$1" /proc/cpuinfo && shift && exec bash "$@"' _ "$fake" "$0" "$@"
fi
OUT="${1:-$REPO/bench/results/cpu_kind_$(hostname -s)_$(date -u +%Y%m%d)${_DGA_EMULATED:+_avx2emu}}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/dga_kind.XXXXXX)"
SUMMARY="$OUT/summary.txt"
load() { cut -d' ' -f1-3 /proc/loadavg; }
say() { echo "$*" | tee -a "$SUMMARY"; }

: > "$SUMMARY"
lscpu > "$OUT/lscpu.txt"
kind() {  # dganalysis.provenance.cpu_kind(): model name (family F model M; instruction sets)
  "$REPO/.venv/bin/python" -c "from dganalysis.provenance import cpu_kind; print(cpu_kind())" 2>/dev/null \
    || grep -m1 'Model name' "$OUT/lscpu.txt" | sed 's/.*: *//'
}
[ -n "${_DGA_EMULATED:-}" ] && say "EMULATED AVX2-only CPU (EMULATE=avx2): dispatch capped at AVX2, fp32, AVX-512/AMX flags hidden"
say "machine: $(kind), $(nproc) CPUs; AMX-bf16: $(grep -qw amx_bf16 /proc/cpuinfo && echo yes || echo no); commit $(git -C "$REPO" rev-parse --short HEAD); $(date -u +%FT%TZ)"

git clone -q "$REPO" "$WORK/main" && git clone -q "$REPO" "$WORK/ci" || { say "git clone failed"; exit 1; }

say "== 1. bash quickstart.sh (fresh clone; load before: $(load))"
start=$(date +%s)
(cd "$WORK/main" && bash quickstart.sh) > "$OUT/quickstart.log" 2>&1
rc=$?
say "quickstart.sh: rc=$rc, $(( ($(date +%s) - start) / 60 )) min $(( ($(date +%s) - start) % 60 )) s wall (load after: $(load))"
say "precision of the quick profile's jobs: $(grep -rhom1 '"precision": *"[a-z0-9]*"' "$WORK/main/outputs/quick/store" 2>/dev/null | sort | uniq -c | tr '\n' ' ')"
say "minutes per notebook: $("$WORK/main/.venv/bin/python" -c "import json, sys; r = json.load(open(sys.argv[1])); print(' '.join(f'{k[:2]} {v.get(\"seconds\", 0) / 60:.1f}' for k, v in r.items()))" "$WORK/main/outputs/quick/runs.json" 2>&1)"
say "findings: $("$WORK/main/.venv/bin/python" -c "import json, pathlib, sys; v = [json.loads(p.read_text()).get('verdict') for p in pathlib.Path(sys.argv[1]).glob('*.json')]; print(v.count('reproduced'), 'of', len(v), 'reproduced')" "$WORK/main/outputs/quick/findings" 2>&1)"

say "== 2. bench/train_throughput.py --networks (one thread; load before: $(load))"
DOMAINBED_SRC="${DOMAINBED_SRC:-$(cd "$REPO/../shared/reference/DomainBed" 2>/dev/null && pwd)}" \
  "$WORK/main/.venv/bin/python" "$WORK/main/bench/train_throughput.py" ${THROUGHPUT_ARGS:---networks --threads 1 --seconds 1.5 --rounds 3} \
  > "$OUT/throughput.log" 2>&1
say "throughput: rc=$? (tables in throughput.log)"

say "== 3. bash .ci/run (fresh clone; load before: $(load))"
start=$(date +%s)
(cd "$WORK/ci" && bash .ci/run) > "$OUT/ci.log" 2>&1
rc=$?
say ".ci/run: rc=$rc, $(( ($(date +%s) - start) / 60 )) min $(( ($(date +%s) - start) % 60 )) s wall (load after: $(load))"
grep -E "passed|failed" "$OUT/ci.log" | tail -1 | tee -a "$SUMMARY"
say "slowest tests (pytest --durations, from ci.log):"
grep -E "^[0-9.]+s (call|setup|teardown) " "$OUT/ci.log" | head -25 | tee -a "$SUMMARY"
echo "results: $OUT (the clones in $WORK can be removed)"
