#!/usr/bin/env bash
# What TLS and auth cost a Get (docs/DESIGN.md §12: at most 10 % more at p50 over gRPC): basalt-bench's
# Get/Put latency against three servers of one build running at once on this machine: plain
# (the loopback default), TLS only, and TLS with client certificates and auth=true (the client a
# user with RW on the table, not a superuser, so every call is authenticated and authorised), in
# alternating rounds so that the machine's drift hits them alike.
#
#   src/tools/bench/security_overhead.sh BUILD [ROUNDS (3)] [extra basalt-bench flags...]
#   src/tools/bench/security_overhead.sh BUILD --callgrind N1 N2
#   e.g. src/tools/bench/security_overhead.sh build-release 3
# --callgrind: instead, each server alone under callgrind for N1 and for N2 Puts and Gets
# (metrics_callgrind.sh): the difference over N2 - N1 is its instructions per Put + Get, which
# the machine's noise does not move.
set -euo pipefail
[ $# -ge 1 ] || { sed -n 2,15p "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
build=$1 rounds=${2:-3}
shift; [ $# -gt 0 ] && shift
callgrind=()
if [ "$rounds" = --callgrind ]; then callgrind=("$1" "$2"); fi
root=$(cd "$(dirname "$0")/../../.." && pwd)
bench=$build/src/tools/bench/basalt-bench
shell=$build/src/tools/shell/basalt
. "$(dirname "$0")/servers.sh"
"$root/tests/security/make_certs.sh" "$dir/certs" admin bencher >/dev/null
c=$dir/certs
if [ ${#callgrind[@]} -gt 0 ]; then
  here=$(cd "$(dirname "$0")" && pwd)
  n1=${callgrind[0]} n2=${callgrind[1]}
  for which in plain tls secure; do
    server=() client=()
    case $which in
      tls) server=(--tls_cert="$c/server.pem" --tls_key="$c/server.key" --tls_ca="$c/ca.pem"); client=(--tls_ca="$c/ca.pem") ;;
      secure) server=(--tls_cert="$c/server.pem" --tls_key="$c/server.key" --tls_ca="$c/ca.pem" --auth=true
                      --superusers=bencher)
              client=(--tls_ca="$c/ca.pem" --tls_cert="$c/bencher.pem" --tls_key="$c/bencher.key") ;;
    esac
    a=$("$here/metrics_callgrind.sh" "$build" "$n1" "$dir/$which.$n1.cg" "${server[@]}" -- "${client[@]}" | awk '{print $2}')
    b=$("$here/metrics_callgrind.sh" "$build" "$n2" "$dir/$which.$n2.cg" "${server[@]}" -- "${client[@]}" | awk '{print $2}')
    echo "$which: $(( (b - a) / (n2 - n1) )) instructions per Put + Get (N=$n1: $a, N=$n2: $b)"
  done
  exit 0
fi
start_server plain
start_server tls --tls_cert="$c/server.pem" --tls_key="$c/server.key" --tls_ca="$c/ca.pem"
start_server secure --tls_cert="$c/server.pem" --tls_key="$c/server.key" --tls_ca="$c/ca.pem" --auth=true --superusers=admin
secure=127.0.0.1:$(cat "$dir/secure.port")
"$shell" --server="$secure" --tls-ca="$c/ca.pem" --tls-cert="$c/admin.pem" --tls-key="$c/admin.key" --no-timing \
  -e "create 'bench_latency', 'f'; grant 'bencher', 'RW', 'bench_latency'" >/dev/null
for r in $(seq "$rounds"); do
  for which in plain tls secure; do
    echo "== round $r, $which"
    tls=()
    [ "$which" = tls ] && tls=(--tls_ca="$c/ca.pem")
    [ "$which" = secure ] && tls=(--tls_ca="$c/ca.pem" --tls_cert="$c/bencher.pem" --tls_key="$c/bencher.key")
    "$bench" server latency --server="127.0.0.1:$(cat "$dir/$which.port")" --sizes=1024 --ops=5000 --warmup=500 \
      --rounds=4 --no_floor "${tls[@]}" "$@" | grep -E "^(Get|Put)|p50" || true
  done
done
