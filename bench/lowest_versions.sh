#!/usr/bin/env bash
# Are pyproject.toml's floors true? Install dganalysis with every direct dependency at the LOWEST version its range
# allows (uv's `--resolution lowest-direct`, the equivalent of a lowest-versions resolution in pip; the packages
# those pull in get their highest compatible versions), then run a set of tests against that environment.
#
#   bash bench/lowest_versions.sh                # venv in /tmp/dga-lowest, writes bench/results/lowest_versions.md
#   DGA_LOWEST_VENV=/path DGA_LOWEST_TESTS="tests/audit tests/dro" bash bench/lowest_versions.sh
#   DGA_LOWEST_EXTRA="scipy==1.14.1" bash bench/lowest_versions.sh   # also force a version (is a floor too low?)
#
# torch and torchvision are NOT lowered: they are pinned to the tested pair (torch==2.13.0+cpu, the local CPU build
# in /opt/wheels where it exists, else 2.13.0 from PyPI), because an unpinned or old torch would pull GBs of CUDA
# wheels. Their floors in pyproject.toml are therefore not proved by this script (the results file says so).
# Needs network access to PyPI (uv does not read pip.conf: the local wheel folder is passed with --find-links).
# Takes ~5-15 min on 2 cores, most of it the download of the low versions and the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${DGA_LOWEST_VENV:-/tmp/dga-lowest}
PY=${PYTHON:-python3}
OUT=${DGA_LOWEST_OUT:-bench/results/lowest_versions.md}
TESTS=${DGA_LOWEST_TESTS:-tests/audit tests/stats tests/protocols tests/dro tests/shift tests/algorithms tests/nets tests/test_cli.py tests/test_collect.py tests/studies/test_runner.py tests/test_plots.py tests/test_latex.py tests/studies/test_report.py tests/test_io.py tests/records/test_selection.py tests/records/test_read.py tests/project/test_notebooks_style.py}
EXTRA=${DGA_LOWEST_EXTRA:-}
TORCH="torch==2.13.0"
if ls /opt/wheels/torch-2.13.0+cpu-*.whl >/dev/null 2>&1; then TORCH="torch==2.13.0+cpu"; fi

rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q uv
FIND=()
[ -d /opt/wheels ] && FIND=(--find-links /opt/wheels)
t0=$(date +%s)
# shellcheck disable=SC2086
"$VENV/bin/python" -m uv pip install --python "$VENV/bin/python" "${FIND[@]}" --resolution lowest-direct \
  "$TORCH" "torchvision==0.28.0" ".[test]" $EXTRA 2>&1 | tail -5
t1=$(date +%s)
mkdir -p "$(dirname "$OUT")"
{
  echo "# Lowest allowed versions: last result"
  echo
  echo "Written by \`bench/lowest_versions.sh\` on $(date -u +%Y-%m-%d\ %H:%M) UTC ($(uname -m), $("$VENV/bin/python" -V 2>&1)," \
       "$(nproc) cores; install $((t1 - t0)) s). Direct dependencies of \`.[test]\` at the lowest version pyproject.toml"
  echo "allows (uv \`--resolution lowest-direct\`); torch and torchvision pinned to $TORCH / torchvision==0.28.0, so"
  echo "their floors are not tested here.${EXTRA:+ Forced on top: \`$EXTRA\`.}"
  echo
  echo "## Installed direct dependencies"
  echo
  echo '```'
  "$VENV/bin/python" - <<'EOF'
import re, tomllib
from importlib import metadata
p = tomllib.load(open("pyproject.toml", "rb"))["project"]
reqs = p["dependencies"] + p["optional-dependencies"]["test"]
for r in reqs:
    name = re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0]
    try:
        v = metadata.version(name)
    except metadata.PackageNotFoundError:
        v = "NOT INSTALLED"
    print(f"{name:24s} {v:14s} (pyproject: {r})")
EOF
  echo '```'
  echo
  echo "## Tests"
  echo
  echo "\`$TESTS\`"
  echo
  echo '```'
} > "$OUT.tmp"
set +e
# shellcheck disable=SC2086
timeout 1500 "$VENV/bin/python" -m pytest -q -p no:cacheprovider -m "not slow and not paper_smoke" $TESTS 2>&1 \
  | tail -40 >> "$OUT.tmp"
rc=${PIPESTATUS[0]}
set -e
echo '```' >> "$OUT.tmp"
echo >> "$OUT.tmp"
echo "pytest exit status: $rc" >> "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "lowest_versions: pytest exit $rc; result in $OUT"
exit "$rc"
