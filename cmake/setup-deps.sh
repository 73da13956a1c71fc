#!/usr/bin/env bash
# Installs the Debian packages autosync needs to build, test and benchmark.
# Idempotent: packages already present are skipped, and nothing is printed for them.
#
#   cmake/setup-deps.sh            core: compiler, CMake, Boost (Hana, Graph), Eigen, doctest,
#                                  nlohmann-json, CLI11, OpenMPI, Google Benchmark, clang (libFuzzer)
#   cmake/setup-deps.sh --xgboost  also XGBoost's C library (optional training component)
#   cmake/setup-deps.sh --torch    also python3-torch (PyTorch DDP comparison benchmark)
#
# CUDA and NCCL are not Debian packages here; CMake finds them under /usr/local/cuda when present.
set -euo pipefail

core=(
  build-essential cmake ninja-build pkg-config git python3
  libboost-dev libeigen3-dev doctest-dev nlohmann-json3-dev libcli11-dev
  libopenmpi-dev openmpi-bin libbenchmark-dev
  clang libclang-rt-14-dev
  iproute2  # tests/testbed: ip and tc (emulated hosts in network namespaces, shaped links)
)
extra=()
for arg in "$@"; do
  case "$arg" in
    --xgboost) extra+=(libxgboost-dev xgboost python3-numpy) ;;
    --torch) extra+=(python3-torch) ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "setup-deps.sh: unknown option '$arg' (known: --xgboost --torch)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${core[@]}" "${extra[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup-deps.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "setup-deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
