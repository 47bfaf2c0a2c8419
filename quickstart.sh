#!/usr/bin/env bash
# Set up everything dganalysis needs on a fresh machine, then run the main job
# (every notebook with the quick profile into outputs/quick/).
#   bash quickstart.sh            # set up + run the quick profile
#   bash quickstart.sh --setup-only
set -euo pipefail
cd "$(dirname "$0")"
SETUP_ONLY=0
for a in "$@"; do
  case "$a" in
    --setup-only) SETUP_ONLY=1 ;;
    *) echo "quickstart.sh: unknown argument '$a' (expected --setup-only)" >&2; exit 2 ;;
  esac
done
PY=${PYTHON:-python3}

echo "== 1/4 system packages: Chinese fonts (apt) and stroke data / brush faces (npm) for PaHCC"
bash dganalysis/data/pahcc/install_fonts.sh

echo "== 1b/4 real images: Fashion-MNIST (Xiao et al. 2017) from Debian's dataset-fashion-mnist (apt)"
bash dganalysis/data/install_fashion_mnist.sh

echo "== 2/4 Python environment in .venv"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
# constraints.txt pins every package to the tested set (pyproject.toml states ranges; environment.yml installs the
# same extras with the same constraints: tests/project/test_packaging.py compares them). torch is also named with its
# pin on its own line first so pip never resolves an unpinned torch (that would pull GBs of CUDA wheels on a CPU
# machine); on this project's CPU machines 2.13.0 is a local CPU build, on CUDA machines the same pins give the CUDA
# builds from PyPI.
.venv/bin/python -m pip install -q -c constraints.txt "torch==2.13.0" "torchvision==0.28.0"
.venv/bin/python -m pip install -q -c constraints.txt -e ".[test,notebooks,wilds,docs]"
# An editable install leaves the package's bytecode to its first import, and where PYTHONDONTWRITEBYTECODE is set
# to every import (each `dganalysis` command then compiles its modules again: ~0.2 CPU-s): compile it once here.
.venv/bin/python -m compileall -q dganalysis >/dev/null
# torchvision imports on its own, before dganalysis and in DomainBed's scripts: a .pth hook in the venv registers
# the op schemas a CUDA torchvision wheel lacks beside a CPU torch, at the first `import torchvision` (a no-op
# where its C++ ops load; about 0.5 ms per interpreter start; see dganalysis/tvhook.py)
.venv/bin/python -c "from dganalysis.tvhook import install_pth; print('torchvision hook:', install_pth())"
.venv/bin/python -c "import torchvision, torchvision.models, torchvision.ops" </dev/null
.venv/bin/python -c "import dganalysis, torch, torchvision; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'torchvision', torchvision.__version__)"

echo "== 3/4 Jupyter kernel 'dganalysis' (shown as 'Python (dganalysis)' in JupyterLab)"
.venv/bin/python -m ipykernel install --user --name dganalysis --display-name "Python (dganalysis)" >/dev/null

if [ "$SETUP_ONLY" = 1 ]; then echo "setup done"; exit 0; fi
echo "== 4/4 main job: all notebooks, quick profile -> outputs/quick/ (index: outputs/quick/index.md)"
.venv/bin/dganalysis run --profile quick
