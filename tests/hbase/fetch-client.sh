#!/usr/bin/env bash
# Fetches the unmodified HBase 2.6.0 client from Maven Central (through Maven's local cache,
# ~/.m2, so a second run is offline) and compiles tests/hbase/java/ against it.
# Usage: fetch-client.sh OUT_DIR   — writes OUT_DIR/classpath.txt and OUT_DIR/classes/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$1
mkdir -p "$out/classes"
for tool in mvn javac java; do
  command -v "$tool" >/dev/null || { echo "fetch-client: $tool is missing (deploy/install-deps.sh installs default-jdk-headless and maven)" >&2; exit 1; }
done
log="$out/maven.log"
# -o first: offline when the cache has it all; otherwise from Maven Central.
if ! mvn -B -q -o -f "$here/pom.xml" dependency:build-classpath -Dmdep.outputFile="$out/classpath.txt" >"$log" 2>&1; then
  if ! mvn -B -q -f "$here/pom.xml" dependency:build-classpath -Dmdep.outputFile="$out/classpath.txt" >"$log" 2>&1; then
    echo "fetch-client: Maven could not resolve hbase-shaded-client 2.6.0 (log: $log):" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
fi
javac -nowarn -d "$out/classes" -cp "$(cat "$out/classpath.txt")" "$here"/java/*.java
echo "fetch-client: HBase client ready in $out ($(tr ':' '\n' < "$out/classpath.txt" | wc -l) jars)"
