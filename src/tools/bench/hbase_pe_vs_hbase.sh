#!/usr/bin/env bash
# HBase's own PerformanceEvaluation (PE, hbase-mapreduce 2.6.0's tests jar, --nomapred) against a
# real HBase 2.6.0 run standalone and against Basalt's HBase port: one machine, one run, one after
# the other, same PE jars and options, both reached through the RPC connection registry.
#
#   src/tools/bench/hbase_pe_vs_hbase.sh [BASALT_SERVER]      (default: build/src/server/basalt-server)
#
# HBase: tests/hbase/server-pom.xml's jars (Maven Central), `HMaster start` in local mode (master,
# region server and ZooKeeper in one JVM, hbase.rootdir a local directory). Basalt: the binary
# given, on a fresh data directory, durable by default. For each, in order:
#   sequentialWrite, 1 client, --rows=ROWS --presplit=PRESPLIT --valueSize=VALUE_SIZE (buffered:
#     PE's default BufferedMutator; its latencies are of the client's mutate() calls, the ops/s
#     include the final flush)
#   randomRead warm-up, 1 client, --rows=WARMUP_ROWS (not reported; both servers start cold)
#   randomRead, 1 client, --rows=ROWS
#   randomRead, READ_CLIENTS clients, --rows=ROWS/READ_CLIENTS each (PE reads over all ROWS keys)
# then the server's VmRSS (/proc/PID/status), then it is stopped.
# p50/p99 are PE's per-client percentiles (us), averaged over the clients; ops/s is PE's
# "[ Avg TPS/QPS]" (the sum over the clients of rows/duration).
#
# Environment: ROWS (100000) VALUE_SIZE (100) PRESPLIT (4) READ_CLIENTS (4) WARMUP_ROWS (ROWS/10)
#   HEAP (1g, the HBase server's and each PE JVM's -Xmx) JAVA (java) KEEP=1 keeps the data dirs.
#   SERVER_CPUS, CLIENT_CPUS (taskset -c lists, e.g. 1 and 0): each server, and each PE, runs on
#   those CPUs only, so that the client does not take the server's cores (the same for both).
# Needs: java 17, mvn, python3 (to pick free ports). Logs stay in the mktemp directory printed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."

BASALT=${1:-build/src/server/basalt-server}
SERVER_ON=(); CLIENT_ON=()
[[ -z ${SERVER_CPUS:-} ]] || SERVER_ON=(taskset -c "$SERVER_CPUS")
[[ -z ${CLIENT_CPUS:-} ]] || CLIENT_ON=(taskset -c "$CLIENT_CPUS")
ROWS=${ROWS:-100000}
VALUE_SIZE=${VALUE_SIZE:-100}
PRESPLIT=${PRESPLIT:-4}
READ_CLIENTS=${READ_CLIENTS:-4}
WARMUP_ROWS=${WARMUP_ROWS:-$((ROWS / 10))}
HEAP=${HEAP:-1g}
JAVA=${JAVA:-java}
[[ -x $BASALT ]] || { echo "basalt-server not found or not executable: $BASALT" >&2; exit 2; }
BASALT="$(cd "$(dirname "$BASALT")" && pwd)/$(basename "$BASALT")"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/hbase-pe-vs-hbase.XXXXXX")
# A copy: a rebuild during the run must not change the binary between the header and the test.
cp -p "$BASALT" "$WORK/basalt-server"
ORIG_BASALT=$BASALT; BASALT="$WORK/basalt-server"
SERVER_PID=
cleanup() {
  if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -KILL "$SERVER_PID" 2>/dev/null || true
  fi
  if [[ ${KEEP:-0} != 1 ]]; then rm -rf "$WORK/hbase-data" "$WORK/basalt-data" "$WORK/basalt-server"; fi
}
trap cleanup EXIT

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
PHASES=()
phase() { PHASES+=("$(printf '%-44s %6s s  %s' "$1" "$2" "${3:-}")"); }
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# CPU accounting, in clock ticks: the machine's busy time, a process's own (+ waited-for children's).
HZ=$(getconf CLK_TCK); NCPU=$(nproc)
cpu_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
proc_cpu() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
hwm_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }

# Stops SERVER_PID: SIGTERM (both run their shutdown), SIGKILL after 90 s.
stop_server() {
  local t0; t0=$(now)
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  for _ in $(seq 900); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    log "still running after 90 s: SIGKILL"; kill -KILL "$SERVER_PID" 2>/dev/null || true
  fi
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=
  phase "$1 stop" "$(since "$t0")"
}

# --- machine ---------------------------------------------------------------------------------
{
  echo "nproc: $(nproc); CPUs: servers ${SERVER_CPUS:-any}, PE ${CLIENT_CPUS:-any}"
  echo "cpu: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
  echo "memory: $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
  echo "kernel: $(uname -r)"
  echo "java: $("$JAVA" -version 2>&1 | head -1)"
  echo "basalt-server: $ORIG_BASALT ($(stat -c %s "$BASALT") bytes, $(date -r "$BASALT" '+%F %T'), sha256 $(sha256sum "$BASALT" | cut -c1-12)); run from a copy"
  echo "data/logs: $WORK ($(df -T "$WORK" | awk 'NR == 2 { print $2 }'))"
  echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$WORK/machine.txt" >&2

# --- classpaths (Maven Central; ~/.m2 afterwards) --------------------------------------------
t0=$(now)
mvn -q -B -f tests/hbase/pe-pom.xml dependency:build-classpath -Dmdep.outputFile="$WORK/pe-cp.txt" >&2
mvn -q -B -f tests/hbase/server-pom.xml dependency:build-classpath -Dmdep.outputFile="$WORK/hbase-cp.txt" >&2
PE_CP=$(cat "$WORK/pe-cp.txt")
HBASE_CP=$(cat "$WORK/hbase-cp.txt")
hb_jars=$(tr ':' '\n' <"$WORK/hbase-cp.txt" | grep -c .)
hb_bytes=$(tr ':' '\n' <"$WORK/hbase-cp.txt" | xargs du -cb | tail -1 | cut -f1)
log "HBase server classpath: $hb_jars jars, $((hb_bytes / 1048576)) MiB"
phase "classpaths (mvn)" "$(since "$t0")"

# --- PE ----------------------------------------------------------------------------------------
RESULTS=()   # "system|command|clients|p50|p99|ops"
NOTES=()
# run_pe SYSTEM LABEL REPORT(0/1) CLIENTS REGISTRY_ADDR PE-ARGS...
run_pe() {
  local system=$1 label=$2 report=$3 clients=$4 addr=$5; shift 5
  local out="$WORK/$system-$label.log" t0; t0=$(now)
  local cmd=("${CLIENT_ON[@]}" "$JAVA" "-Xmx$HEAP" "-Xlog:gc:file=$out.gc" --add-opens java.base/java.nio=ALL-UNNAMED
    -cp "$PE_CP" org.apache.hadoop.hbase.PerformanceEvaluation
    -Dhbase.client.registry.impl=org.apache.hadoop.hbase.client.RpcConnectionRegistry
    "-Dhbase.client.bootstrap.servers=$addr" --nomapred "$@")
  echo "${cmd[*]}" | sed "s|$PE_CP|\$(cat pe-cp.txt)|" >>"$WORK/commands.txt"
  log "$system: PE $* ..."
  local busy0 srv0 self0 busy1 srv1 self1 elapsed
  busy0=$(cpu_busy); srv0=$(proc_cpu "$SERVER_PID"); self0=$(proc_cpu $$)
  if ! "${cmd[@]}" >"$out" 2>&1; then
    NOTES+=("$system $label: PE exited with an error (see $out)")
    tail -20 "$out" >&2
  fi
  busy1=$(cpu_busy); srv1=$(proc_cpu "$SERVER_PID"); self1=$(proc_cpu $$)
  elapsed=$(since "$t0")
  # server and PE CPU seconds; "others": what the rest of the machine used, in % of all its CPUs
  phase "$system PE $label" "$elapsed" "$(awk -v b="$((busy1 - busy0))" -v s="$((srv1 - srv0))" \
    -v p="$((self1 - self0))" -v hz="$HZ" -v n="$NCPU" -v t="$elapsed" 'BEGIN {
      o = (b - s - p) / (t * hz * n) * 100; if (o < 0) o = 0
      printf "server %5.1f s CPU, PE %5.1f s CPU, others %4.1f%% of the machine", s / hz, p / hz, o }')"
  local errors; errors=$(grep -c -E 'Exception|ERROR' "$out" || true)
  [[ $errors == 0 ]] || NOTES+=("$system $label: $errors lines with Exception/ERROR in $out")
  grep -q 'Finished class org.apache.hadoop.hbase.PerformanceEvaluation\$' "$out" ||
    NOTES+=("$system $label: PE did not finish its test")
  local gc; gc=$(awk '/Pause/ { v = $NF; sub(/ms$/, "", v); n++; t += v; if (v > m) m = v }
      END { printf "%d pauses, max %.1f ms, total %.1f ms", n, m, t }' "$out.gc")
  NOTES+=("$system $label: PE client GC: $gc")
  [[ $report == 1 ]] || return 0
  local lat; lat=$(grep -o 'Latency (us) : .*' "$out" || true)
  local n p50 p99 ops
  n=$(grep -c . <<<"$lat" || true)
  [[ -n $lat ]] || n=0
  p50=$(grep -o ' 50th=[0-9.]*' <<<"$lat" | cut -d= -f2 | awk '{ s += $1; n++ } END { if (!n) print "-"; else printf (s / n < 10 ? "%.1f" : "%.0f"), s / n }')
  p99=$(grep -o ' 99th=[0-9.]*' <<<"$lat" | cut -d= -f2 | awk '{ s += $1; n++ } END { if (!n) print "-"; else printf (s / n < 10 ? "%.1f" : "%.0f"), s / n }')
  ops=$(awk -F'\t' '/\[ Avg TPS\/QPS\]/ { print $2 }' "$out" | tail -1)
  [[ $n == "$clients" ]] || NOTES+=("$system $label: $n client latency lines for $clients clients")
  RESULTS+=("$system|$(sed 's/-.*//' <<<"$label")|$clients|$p50|$p99|${ops:--}")
}

# run_suite SYSTEM ADDR
run_suite() {
  local system=$1 addr=$2
  run_pe "$system" sequentialWrite 1 1 "$addr" \
    --rows="$ROWS" --presplit="$PRESPLIT" --valueSize="$VALUE_SIZE" sequentialWrite 1
  if ((WARMUP_ROWS > 0)); then
    run_pe "$system" randomRead-warmup 0 1 "$addr" --rows="$WARMUP_ROWS" randomRead 1
  fi
  run_pe "$system" randomRead-1 1 1 "$addr" --rows="$ROWS" randomRead 1
  run_pe "$system" "randomRead-$READ_CLIENTS" 1 "$READ_CLIENTS" "$addr" \
    --rows="$((ROWS / READ_CLIENTS))" randomRead "$READ_CLIENTS"
}
declare -A RSS HWM

# --- HBase 2.6.0 standalone --------------------------------------------------------------------
HB="$WORK/hbase-data"; mkdir -p "$HB" "$WORK/hbase-conf"
ZK_PORT=$(free_port); MASTER_PORT=$(free_port); RS_PORT=$(free_port)
cat >"$WORK/hbase-conf/hbase-site.xml" <<EOF
<configuration>
  <property><name>hbase.cluster.distributed</name><value>false</value></property>
  <property><name>hbase.rootdir</name><value>file://$HB/root</value></property>
  <property><name>hbase.tmp.dir</name><value>$HB/tmp</value></property>
  <property><name>hbase.zookeeper.quorum</name><value>127.0.0.1</value></property>
  <property><name>hbase.zookeeper.property.clientPort</name><value>$ZK_PORT</value></property>
  <property><name>hbase.zookeeper.property.dataDir</name><value>$HB/zk</value></property>
  <property><name>hbase.master.port</name><value>$MASTER_PORT</value></property>
  <property><name>hbase.regionserver.port</name><value>$RS_PORT</value></property>
  <property><name>hbase.master.info.port</name><value>-1</value></property>
  <property><name>hbase.regionserver.info.port</name><value>-1</value></property>
  <property><name>hbase.unsafe.stream.capability.enforce</name><value>false</value></property>
</configuration>
EOF
cat >"$WORK/hbase-conf/log4j.properties" <<'EOF'
log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2}: %m%n
EOF
# The JDK 11+ flags of HBase's bin/hbase.
HBASE_CMD=("${SERVER_ON[@]}" "$JAVA" "-Xmx$HEAP" "-Xlog:gc:file=$WORK/hbase-server.gc"
  -Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true --add-modules jdk.unsupported
  --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
  --add-opens java.base/java.lang.reflect=ALL-UNNAMED --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
  -cp "$WORK/hbase-conf:$HBASE_CP" org.apache.hadoop.hbase.master.HMaster start)
echo "${HBASE_CMD[*]}" | sed "s|$HBASE_CP|\$(cat hbase-cp.txt)|" >>"$WORK/commands.txt"
log "starting HBase 2.6.0 standalone (ZooKeeper :$ZK_PORT, master :$MASTER_PORT, region server :$RS_PORT)"
t0=$(now)
"${HBASE_CMD[@]}" >"$WORK/hbase-server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1800); do
  grep -q 'Master has completed initialization' "$WORK/hbase-server.log" && break
  kill -0 "$SERVER_PID" 2>/dev/null || { tail -40 "$WORK/hbase-server.log" >&2; echo "HBase exited" >&2; exit 1; }
  sleep 0.1
done
grep -q 'Master has completed initialization' "$WORK/hbase-server.log" ||
  { tail -40 "$WORK/hbase-server.log" >&2; echo "HBase did not start in 180 s" >&2; exit 1; }
phase "HBase start (to 'completed initialization')" "$(since "$t0")"
run_suite HBase "127.0.0.1:$MASTER_PORT"
RSS[HBase]=$(rss_kib "$SERVER_PID"); HWM[HBase]=$(hwm_kib "$SERVER_PID")
hb_lines=$(wc -l <"$WORK/hbase-server.log")
stop_server HBase
NOTES+=("HBase server GC: $(awk '/Pause/ { v = $NF; sub(/ms$/, "", v); n++; t += v; if (v > m) m = v }
    END { printf "%d pauses, max %.1f ms, total %.1f ms", n, m, t }' "$WORK/hbase-server.gc")")
# WARN/ERROR lines until the stop (those of the shutdown itself are only counted).
warn_re='^[0-9-]+ [0-9:,]+ (WARN|ERROR)'
hb_warn=$(head -n "$hb_lines" "$WORK/hbase-server.log" | grep -c -E "$warn_re" || true)
hb_warn_stop=$(tail -n +"$((hb_lines + 1))" "$WORK/hbase-server.log" | grep -c -E "$warn_re" || true)
NOTES+=("HBase server log: $hb_warn WARN/ERROR lines up to the stop ($hb_warn_stop more while stopping); distinct ones:")
while IFS= read -r line; do NOTES+=("    $line"); done < <(
  head -n "$hb_lines" "$WORK/hbase-server.log" | grep -E "$warn_re" |
    sed -E 's/^[0-9-]+ [0-9:,]+ //; s/\[[^]]*\] //; s/[0-9]+/N/g' | cut -c1-150 | sort | uniq -c | sort -rn | head -12)

# --- Basalt ----------------------------------------------------------------------------------
mkdir -p "$WORK/basalt-data"
BASALT_CMD=("${SERVER_ON[@]}" "$BASALT" --data_dir="$WORK/basalt-data" --listen=127.0.0.1:0 --http_listen=off
  --hbase_listen=127.0.0.1:0 --hbase_port_file="$WORK/basalt-hbase.port")
echo "${BASALT_CMD[*]}" >>"$WORK/commands.txt"
log "starting basalt-server"
t0=$(now)
"${BASALT_CMD[@]}" >"$WORK/basalt-server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 600); do
  [[ -s $WORK/basalt-hbase.port ]] && break
  kill -0 "$SERVER_PID" 2>/dev/null || { tail -40 "$WORK/basalt-server.log" >&2; echo "basalt-server exited" >&2; exit 1; }
  sleep 0.05
done
[[ -s $WORK/basalt-hbase.port ]] || { echo "basalt-server did not open its HBase port" >&2; exit 1; }
phase "Basalt start (to the HBase port)" "$(since "$t0")"
run_suite Basalt "127.0.0.1:$(tr -d '\n' <"$WORK/basalt-hbase.port")"
RSS[Basalt]=$(rss_kib "$SERVER_PID"); HWM[Basalt]=$(hwm_kib "$SERVER_PID")
stop_server Basalt
NOTES+=("Basalt server log ($(wc -l <"$WORK/basalt-server.log") lines), distinct ones:")
while IFS= read -r line; do NOTES+=("    $line"); done < <(
  sed -E 's/[0-9]+/N/g' "$WORK/basalt-server.log" | cut -c1-150 | sort | uniq -c | sort -rn | head -12)

# --- report ----------------------------------------------------------------------------------
echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$WORK/machine.txt" >&2
{
  echo
  cat "$WORK/machine.txt"
  echo "PE: --nomapred, rows=$ROWS valueSize=$VALUE_SIZE presplit=$PRESPLIT, randomRead warm-up of $WARMUP_ROWS rows first;"
  echo "    HBase server and PE JVMs -Xmx$HEAP; HBase server classpath $hb_jars jars, $((hb_bytes / 1048576)) MiB (tests/hbase/server-pom.xml)"
  echo
  printf '%-7s %-16s %7s %9s %9s %10s %8s\n' system command clients "p50 us" "p99 us" "ops/s" "RSS MiB"
  for r in "${RESULTS[@]}"; do
    IFS='|' read -r s c n p50 p99 ops <<<"$r"
    printf '%-7s %-16s %7s %9s %9s %10s %8s\n' "$s" "$c" "$n" "$p50" "$p99" "$ops" "$((${RSS[$s]} / 1024))"
  done
  echo
  echo "Basalt/HBase (p50, p99: lower is better for Basalt below 1; ops/s: higher is better above 1)"
  printf '%-16s %7s %9s %9s %10s %8s\n' command clients p50 p99 ops/s RSS
  for r in "${RESULTS[@]}"; do
    IFS='|' read -r s c n hp50 hp99 hops <<<"$r"
    [[ $s == HBase ]] || continue
    for q in "${RESULTS[@]}"; do
      IFS='|' read -r s2 c2 n2 bp50 bp99 bops <<<"$q"
      [[ $s2 == Basalt && $c2 == "$c" && $n2 == "$n" ]] || continue
      awk -v c="$c" -v n="$n" -v a="$bp50" -v b="$hp50" -v d="$bp99" -v e="$hp99" -v f="$bops" -v g="$hops" \
        -v r1="${RSS[Basalt]}" -v r2="${RSS[HBase]}" '
        function ratio(x, y) { return (y + 0 > 0 && x != "-") ? sprintf("%.2f", x / y) : "-" }
        BEGIN { printf "%-16s %7s %9s %9s %10s %8s\n", c, n, ratio(a, b), ratio(d, e), ratio(f, g), ratio(r1, r2) }'
    done
  done
  echo
  echo "Server memory: VmRSS after the last PE run (VmHWM, the peak: HBase $((${HWM[HBase]} / 1024)) MiB, Basalt $((${HWM[Basalt]} / 1024)) MiB)."
  echo "p50/p99: PE's per-client percentiles averaged over the clients. sequentialWrite is buffered"
  echo "(BufferedMutator): its latencies time the client's mutate() calls; its ops/s includes the flushes."
  echo "Durability: Basalt fsyncs (fdatasync) every acknowledged write (--durability=sync, its default)."
  echo "HBase standalone on a local filesystem does not: its WAL goes through Hadoop's LocalFileSystem,"
  echo "whose hflush/hsync stop at the JVM (no fsync), which is why it has to run with"
  echo "hbase.unsafe.stream.capability.enforce=false. The comparison favours HBase on writes."
  echo
  echo "Time per phase:"
  printf '  %s\n' "${PHASES[@]}"
  echo
  echo "Notes:"
  printf '  %s\n' "${NOTES[@]}"
  echo
  echo "Commands: $WORK/commands.txt; logs: $WORK"
} | tee "$WORK/report.txt"
