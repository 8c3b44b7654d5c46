#!/usr/bin/env bash
# Installs the Debian packages static_runtime builds, tests and benchmarks with.
# Idempotent: does nothing (no apt-get update either) when every package is already installed.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache
  libtorch-dev python3-torch
  libdnnl-dev libopenblas-dev libfmt-dev libsleef-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  pybind11-dev python3-pytest python3-numpy python3-matplotlib
  python3-pip python3-setuptools python3-venv python3-distributed
  python3-torchvision python3-torchaudio
  clang libclang-rt-14-dev
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
