#!/usr/bin/env bash
# Fetches the unmodified HBase 2.6.0 client from Maven Central (through Maven's local cache,
# ~/.m2, so a second run is offline) and compiles tests/hbase/java/ against it.
# Usage: fetch-client.sh OUT_DIR   — writes OUT_DIR/classpath.txt (the client), OUT_DIR/classes/
# (tests/hbase/java/ compiled), OUT_DIR/pe-classpath.txt (HBase's PerformanceEvaluation,
# pe-pom.xml), OUT_DIR/shell-classpath.txt (the HBase shell, shell-pom.xml) and
# OUT_DIR/server-classpath.txt (a real HBase 2.6.0 server, server-pom.xml).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$1
mkdir -p "$out/classes"
for tool in mvn javac java; do
  command -v "$tool" >/dev/null || { echo "fetch-client: $tool is missing (deploy/install-deps.sh installs default-jdk-headless and maven)" >&2; exit 1; }
done
# Each pom's classpath: -o first (offline, when Maven's cache has it all), else from Maven Central.
resolve() {  # POM OUT_FILE WHAT
  local log="$out/maven-$(basename "$1" .xml).log"
  if ! mvn -B -q -o -f "$1" dependency:build-classpath -Dmdep.outputFile="$2" >"$log" 2>&1; then
    if ! mvn -B -q -f "$1" dependency:build-classpath -Dmdep.outputFile="$2" >"$log" 2>&1; then
      echo "fetch-client: Maven could not resolve $3 (log: $log):" >&2
      tail -n 20 "$log" >&2
      exit 1
    fi
  fi
}
resolve "$here/pom.xml" "$out/classpath.txt" "hbase-shaded-client 2.6.0"
resolve "$here/pe-pom.xml" "$out/pe-classpath.txt" "PerformanceEvaluation (hbase-mapreduce 2.6.0 tests)"
resolve "$here/shell-pom.xml" "$out/shell-classpath.txt" "the HBase shell (hbase-shell 2.4.17)"
resolve "$here/server-pom.xml" "$out/server-classpath.txt" "the HBase server (hbase-server 2.6.0)"
javac -nowarn -d "$out/classes" -cp "$(cat "$out/classpath.txt")" "$here"/java/*.java
echo "fetch-client: HBase client ready in $out ($(tr ':' '\n' < "$out/classpath.txt" | wc -l) jars)"
