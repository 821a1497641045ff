# The set-up that bench/ceiling.sh and bench/swarm_matrix.sh share (sourced, not run): their common options, the
# check of the two programs, the runs' folder, and one dlio-bench-swarm run.
#
#   source "$(dirname "$0")/lib_swarm.sh"
#   swarm_defaults                 # bin, swarm, out and the extra-argument array `swarm_args`
#   swarm_option "$@" && shift $swarm_shift   # 1 when $1 is a shared option (it consumed swarm_shift words)
#   swarm_setup NAME PREFIX        # the programs exist (else exit 2, naming them), out is a folder
#   swarm_run LABEL N C STEPS || { echo "| ... failed: see $log |"; continue; }
# Globals: bin (folder of dlio-coordinator), swarm (the dlio-bench-swarm program), agents, computes, steps, label,
# out, swarm_args (passed to every run), and of the last run json (its JSON document), log (its output) and load
# (the 1-min load average before it).

swarm_defaults() {
  bin=build/bin
  swarm=build/bin/dlio-bench-swarm
  out=
  swarm_args=()
}

# The options both scripts take; sets swarm_shift to the words consumed, or returns 1 when $1 is not one of them.
swarm_option() {
  swarm_shift=2
  case "$1" in
    --bin-dir) bin=$2 ;;
    --swarm) swarm=$2 ;;
    --agents) agents=$2 ;;
    --computes) computes=$2 ;;
    --steps) steps=$2 ;;
    --label) label=$2 ;;
    --out) out=$2 ;;
    *) return 1 ;;
  esac
}

# NAME: the script's name in messages; PREFIX: of the runs' temporary folder under /tmp.
swarm_setup() {
  [[ -x $swarm ]] || { echo "$1: $swarm not found (build dlio-bench-swarm first)" >&2; exit 2; }
  [[ -x $bin/dlio-coordinator ]] || { echo "$1: $bin/dlio-coordinator not found" >&2; exit 2; }
  out=${out:-$(mktemp -d "/tmp/$2-XXXXXX")}
  mkdir -p "$out"
}

# One run of LABEL at N sessions, C s of compute, STEPS steps, with swarm_args: its JSON document in $json, its
# output in $log; the 1-min load average just before it in $load. Returns the run's failure.
swarm_run() {
  load=$(cut -d' ' -f1 /proc/loadavg)
  json=$out/$1-$2-$3.json
  log=$out/$1-$2-$3.log
  "$swarm" --agents "$2" --steps "$4" --compute "$3" --bin-dir "$bin" "${swarm_args[@]}" --json "$json" > "$log" 2>&1
}
