# Sourced by the benchmarks that run servers side by side (security_overhead.sh,
# quota_overhead.sh), with $build set. Makes a scratch directory $dir, removed with every server
# it started when the script exits. start_server NAME [FLAG...]: starts $build's basalt-server (or
# $server_binary's, when set) on loopback with its data in $dir/NAME and its log in $dir/NAME.log, and returns once it listens
# (its port in $dir/NAME.port, its pid in $dir/NAME.pid); exits the script if it does not start.
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
start_server() {
  local name=$1
  shift
  "${server_binary:-$build/src/server/basalt-server}" --data_dir="$dir/$name" --listen=127.0.0.1:0 --port_file="$dir/$name.port" \
    --http_listen=off "$@" > "$dir/$name.log" 2>&1 &
  pids+=($!)
  echo $! > "$dir/$name.pid"
  for _ in $(seq 300); do [ -s "$dir/$name.port" ] && return 0; sleep 0.1; done
  echo "$(basename "$0"): $name did not start; see $dir/$name.log" >&2
  exit 1
}
