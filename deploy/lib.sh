# Shell helpers the deploy/ scripts share (sourced, not run).

# Whether a pid is running and not a zombie (daemons that fork are reaped by PID 1 only every
# few seconds, and kill -0 succeeds on a zombie).
alive() {
  local st
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ "$st" != Z ]
}
