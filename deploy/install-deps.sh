#!/usr/bin/env bash
# Installs Basalt's build and test dependencies from Debian 12's packages. Idempotent; needs
# root (uses sudo when not root).
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config git
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libisal-dev libsnappy-dev zlib1g-dev
  clang libclang-rt-14-dev   # libFuzzer targets
  librocksdb-dev             # benchmark peer only
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc   # gRPC transport
  libre2-dev                 # regex comparator of server-side filters (linear time)
  libedit-dev                # shell line editing and history (BSD licence, unlike readline)
  libibverbs-dev librdmacm-dev ibverbs-providers rdma-core   # verbs transport (rdma-core)
  ibverbs-utils rdmacm-utils                                 # ibv_devinfo, rping: operator checks
  qemu-system-x86 qemu-system-data busybox-static cpio kmod xz-utils iproute2 perftest   # tests/rxe guest
  librados-dev libradospp-dev                   # shared storage: the Env on Ceph RADOS
  ceph-mon ceph-osd ceph-common                 # the tests' private Ceph cluster (deploy/ceph.sh)
  zookeeper libzookeeper-mt-dev                 # cluster coordination (server for tests, C client)
  libcpp-httplib-dev                            # tests: the HTTP(S) client of the daemons' HTTP port
  python3-prometheus-client                     # tests: Prometheus' own parser reads /metrics
  python3                                       # tests: the DESIGN.md request walks checked against the code
  chromium fonts-dejavu-core                    # tests: headless Chromium loads the status page
  debootstrap                                   # tests: the .deb packages go into a fresh Debian 12
  nftables iproute2                             # tests: partitions between network namespaces (ip netns, nft)
  file                                          # tests: cpack's DEB generator runs dpkg-shlibdeps on the ELF files it finds with file
  libssl-dev openssl                            # security: token hashes, the HTTP port's TLS; tests make certs
  default-jdk-headless maven                    # tests: the unmodified HBase client (Maven Central) drives the HBase port
  python3-kazoo python3-protobuf python3-pip    # tests: Python's hbase-driver (PyPI), a second HBase client
)
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "install-deps: all dependencies present"
