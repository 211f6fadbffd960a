#!/usr/bin/env bash
# What TLS costs HBase's own client on Basalt's HBase port (issue 52, BENCHMARKS.md section 25):
# PE 2.6.0's randomRead (hbase-mapreduce's tests jar, --nomapred, unmodified) against two servers
# of one build running at once: one plain, one with TLS, client certificates and auth=true (the
# client's certificate names a superuser, so every call passes the grants' check too). Each is
# loaded with sequentialWrite (ROWS rows of 100 bytes in 4 regions, 2 clients); then ROUNDS
# rounds, each running PE against plain, TLS with BoringSSL (HBase's hbase-shaded-netty-tcnative
# jar on the client's class path, which its client uses when it finds it) and TLS with the JDK's
# own, at x4 (ROWS/20 reads per client) and at x1 (ROWS/10 reads). Per run: PE's mean time per
# client and the server's CPU per read (/proc/PID/stat); at the end the on/off ratios, each
# round's and over all rounds.
#
#   src/tools/bench/hbase_pe_tls.sh BUILD [ROUNDS (5)]
#   src/tools/bench/hbase_pe_tls.sh BUILD --callgrind [READS (2000)]
# --callgrind: instead, each server alone under callgrind, instrumented only while PE reads
# READS rows (x1, after a load of 5000): its instructions per read, which the machine's noise does
# not move; the TLS server's total less its handshakes (TlsStream::Handshake, inclusive).
#
# Environment: ROWS (200000). Needs java, mvn (once, for the tcnative jar) and BUILD's HBase test
# client (BUILD/tests/hbase/client/pe-classpath.txt, made by the hbase tests' build).
set -euo pipefail
[ $# -ge 1 ] || { sed -n 2,21p "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
build=$(cd "$1" && pwd) rounds=${2:-5}
root=$(cd "$(dirname "$0")/../../.." && pwd)
pe_cp=$(cat "$build/tests/hbase/client/pe-classpath.txt")
m2=${M2_REPO:-$HOME/.m2/repository}
tcnative=$m2/org/apache/hbase/thirdparty/hbase-shaded-netty-tcnative/4.1.7/hbase-shaded-netty-tcnative-4.1.7.jar
[ -f "$tcnative" ] || mvn -q -B dependency:get -Dartifact=org.apache.hbase.thirdparty:hbase-shaded-netty-tcnative:4.1.7 >&2
ROWS=${ROWS:-200000}
. "$(dirname "$0")/servers.sh"
"$root/tests/security/make_certs.sh" "$dir/certs" admin >/dev/null
c=$dir/certs
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
tls_flags=(--tls_cert="$c/server.pem" --tls_key="$c/server.key" --tls_ca="$c/ca.pem" --auth=true --superusers=admin)

# pe NAME CLIENT PE-ARGS...: PE against server NAME as CLIENT (plain, tls: BoringSSL, jdk: the
# JDK's TLS), its output in $dir/pe.log.
pe() {
  local name=$1 client=$2 cp=$pe_cp tls=()
  shift 2
  if [ "$client" != plain ]; then
    tls=(-Dhbase.client.netty.tls.enabled=true -Dhbase.rpc.tls.truststore.type=PEM
      -Dhbase.rpc.tls.truststore.location="$c/ca.pem" -Dhbase.rpc.tls.keystore.type=PEM
      -Dhbase.rpc.tls.keystore.location="$c/admin-keystore.pem")
    [ "$client" = jdk ] || cp=$tcnative:$cp
  fi
  HADOOP_USER_NAME=admin java -cp "$cp" org.apache.hadoop.hbase.PerformanceEvaluation "${tls[@]}" \
    -Dhbase.client.registry.impl=org.apache.hadoop.hbase.client.RpcConnectionRegistry \
    -Dhbase.client.bootstrap.servers=127.0.0.1:"$(cat "$dir/$name.hbase")" --nomapred "$@" > "$dir/pe.log" 2>&1 ||
    { tail -20 "$dir/pe.log" >&2; exit 1; }
}
# serve NAME [FLAG...]: a server with an HBase port ($dir/NAME.hbase), optionally under $wrap.
serve() {
  local name=$1
  shift
  free_port > "$dir/$name.hbase"
  server_binary=${wrap:-} start_server "$name" --hbase_listen=127.0.0.1:"$(cat "$dir/$name.hbase")" "$@"
}

if [ "$rounds" = --callgrind ]; then
  reads=${3:-2000}
  printf 'server\tinstructions per read\n'
  for name in plain tls; do
    flags=(); [ $name = tls ] && flags=("${tls_flags[@]}")
    wrapper=$dir/valgrind-$name
    printf '#!/bin/sh\nexec valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=%s "%s" "$@"\n' \
      "$dir/$name.cg" "$build/src/server/basalt-server" > "$wrapper"
    chmod +x "$wrapper"
    wrap=$wrapper serve $name "${flags[@]}"
    pe $name $name --rows=5000 --valueSize=100 --presplit=4 sequentialWrite 1
    callgrind_control -i on "$(cat "$dir/$name.pid")" > /dev/null 2>&1
    pe $name $name --rows="$reads" randomRead 1
    callgrind_control -i off "$(cat "$dir/$name.pid")" > /dev/null 2>&1
    kill "$(cat "$dir/$name.pid")"
    while kill -0 "$(cat "$dir/$name.pid")" 2>/dev/null; do sleep 0.2; done
    total=$(callgrind_annotate "$dir/$name.cg" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
    hs=$(callgrind_annotate --inclusive=yes "$dir/$name.cg" |
      awk '/TlsStream::Handshake\(\) \[/ && !done { gsub(",", "", $1); print $1; done = 1 }')
    printf '%s\t%d\n' $name $(((total - ${hs:-0}) / reads))
  done
  exit 0
fi

serve plain
serve tls "${tls_flags[@]}"
for name in plain tls; do pe $name $name --rows="$ROWS" --valueSize=100 --presplit=4 sequentialWrite 2; done
tck=$(getconf CLK_TCK)
# run N ROWS CLIENT NAME: one PE randomRead; prints "mean-ms server-us-per-read"
run() {
  local n=$1 rows=$2 client=$3 name=$4 p s0 s1
  p=$(cat "$dir/$name.pid")
  s0=$(awk '{ print $14 + $15 }' "/proc/$p/stat")
  pe "$name" "$client" --rows="$rows" randomRead "$n"
  s1=$(awk '{ print $14 + $15 }' "/proc/$p/stat")
  grep -oE 'Finished TestClient-[0-9]+ in [0-9]+ms' "$dir/pe.log" | grep -oE '[0-9]+ms' | tr -d ms |
    awk -v s=$((s1 - s0)) -v hz="$tck" -v ops=$((n * rows)) '{ t += $1; k++ } END { printf "%.0f %.1f\n", t / k, s * 1e6 / hz / ops }'
}
for r in header $(seq "$rounds"); do
  if [ $r = header ]; then
    printf 'round\tclients\tplain ms\tTLS ms\tJDK TLS ms\tTLS/plain\tJDK/plain\tserver us/read plain, TLS, JDK TLS\n'
    continue
  fi
  for n in 4 1; do
    rows=$((ROWS / 20)); [ $n = 1 ] && rows=$((ROWS / 10))
    read -r pm pu < <(run $n $rows plain plain)
    read -r tm tu < <(run $n $rows tls tls)
    read -r jm ju < <(run $n $rows jdk tls)
    printf '%d\tx%d\t%d\t%d\t%d\t%.3f\t%.3f\t%s, %s, %s\n' "$r" $n "$pm" "$tm" "$jm" \
      "$(echo "$pm / $tm" | bc -l)" "$(echo "$pm / $jm" | bc -l)" "$pu" "$tu" "$ju"
  done
done | tee "$dir/rounds.tsv"
echo
echo "over all rounds (sum of plain's mean times over TLS's: on/off throughput):"
awk -F'\t' 'NR > 1 && $2 != "" { p[$2] += $3; t[$2] += $4; j[$2] += $5 }
  END { for (n in p) printf "%s\tTLS %.3f\tJDK TLS %.3f\n", n, p[n] / t[n], p[n] / j[n] }' "$dir/rounds.tsv"
