#!/usr/bin/env bash
# Install the Debian packages penny needs, only those missing.
#   tests/install-deps.sh build   compilers and -dev libraries
#   tests/install-deps.sh test    + what the test suite and the lab use (the
#                                 lab's Slurm and MUNGE are started by the tests
#                                 themselves, in private namespaces; on a host
#                                 run by systemd their packages also enable
#                                 munge.service and the Slurm units)
#   tests/install-deps.sh deb     build + what make deb and its test use
#                                 (debhelper, lintian: heavy, so not in test)
set -eu
want=${1:-build}
case $want in build | test | deb) ;; *) echo "usage: $0 build|test|deb" >&2; exit 2 ;; esac
pkgs=(gcc make pkg-config libibverbs-dev libibumad-dev libibmad-dev libhwloc-dev libncurses-dev libxml2-dev)
if [ "$want" = deb ]; then
	pkgs+=(dpkg-dev debhelper lintian)
fi
if [ "$want" = test ]; then
	pkgs+=(clang python3 openmpi-bin libopenmpi-dev iproute2 procps tmux man-db zsh
		hwloc-nox rdma-core ibverbs-providers ibverbs-utils infiniband-diags perftest
		qemu-system-x86 busybox-static cpio kmod xz-utils librsvg2-bin libxml2-utils
		prometheus shellcheck python3-yaml slurm-wlm munge util-linux)
fi
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
	"${missing[@]}" >/dev/null
