#!/usr/bin/env bash
# Install real Fashion-MNIST (Xiao, Rasul & Vollgraf 2017; Zalando Research, MIT) from Debian's package
# dataset-fashion-mnist: four IDX files (70,000 28x28 images, 30 MB) in /usr/share/datasets/fashion-mnist/,
# read by dganalysis.data.fashion (RotatedFashionMNIST, ColoredFashionMNIST).
# Idempotent and tolerant: already installed -> nothing to do; without apt-get, or without root and password-less
# sudo, it prints what to run by hand and exits 0 (the notebooks that need the set then fail naming the path).
set -u
PKG=dataset-fashion-mnist
DIR=/usr/share/datasets/fashion-mnist
say() { echo "install_fashion_mnist.sh: $*"; }
if [ -f "$DIR/train-images-idx3-ubyte.gz" ] && [ -f "$DIR/t10k-labels-idx1-ubyte.gz" ]; then
  say "Fashion-MNIST already in $DIR"; exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  say "WARNING: apt-get not found: skipping $PKG; put Fashion-MNIST's four IDX files in a folder and pass fashion_dir=" >&2
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    say "WARNING: not root and no password-less sudo: skipping; run 'sudo apt-get install $PKG' by hand" >&2
    exit 0
  fi
fi
if ! apt-cache show "$PKG" >/dev/null 2>&1; then $SUDO apt-get update -qq || say "WARNING: apt-get update failed" >&2; fi
if $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$PKG"; then
  say "installed $PKG -> $DIR"
else
  say "WARNING: apt-get install $PKG failed; the Fashion-MNIST notebooks will name the missing path" >&2
fi
exit 0
