#!/usr/bin/env bash
# The coordinator under load: N fake ranks (bench/load/kiln-load, the real protocol with MACs) against
# one `kiln run --launcher none`, on this machine. Prints one table row per N: results acknowledged
# per second (durable: one fdatasync per pass, acks after it), ack latency, the coordinator's peak
# RSS and CPU seconds, and the idle cost of N heartbeating ranks.
#
#   bench/load_bench.sh [N ...]          default: 1000 10000 100000
#   PER_CONN=1 bench/load_bench.sh 1000  one connection per rank instead of one per node of 8
#   TOTAL=2000000 RATE=200000 BATCH=256 WINDOW=4 bench/load_bench.sh 1000
#
# Runs as root to raise the open-file limit (each rank is a descriptor on both sides).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${KILN_BIN:-$ROOT/build/bin}
TOTAL=${TOTAL:-2000000}   # results in the saturated run (two checks)
PER_CONN=${PER_CONN:-8}   # ranks per connection (a node agent's; 1 = one connection per rank)
BATCH=${BATCH:-256}       # records per frame at most
WINDOW=${WINDOW:-4}       # unacknowledged frames per connection
IDLE_S=${IDLE_S:-10}
RATE=${RATE:-200000}      # the offered load for the latency column, results/s
RATE_S=${RATE_S:-8}       # how long the offered load lasts
[ $# -gt 0 ] && SIZES=("$@") || SIZES=(1000 10000 100000)
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true  # each side holds one descriptor per rank
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# sample PID FILE: while PID lives, keeps "cpu_seconds rss_peak_mib" of it in FILE.
sample() {
  local hz; hz=$(getconf CLK_TCK)
  while kill -0 "$1" 2>/dev/null; do
    local c r
    c=$(awk -v hz="$hz" '{print ($14 + $15) / hz}' "/proc/$1/stat" 2>/dev/null) || break
    r=$(awk '/VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$1/status" 2>/dev/null) || break
    [ -n "$c" ] && [ -n "$r" ] && echo "$c $r" > "$2"
    sleep 0.2
  done
}

printf '| ranks | connections | results | results/s (saturated) | ack p50 / p99 ms saturated | results/s acked, %s offered | ack p50 / p99 ms at that load | coordinator RSS peak MiB | coordinator CPU s | idle CPU %% (N ranks heartbeating) |\n|---|---|---|---|---|---|---|---|---|---|\n' "$RATE"
for N in "${SIZES[@]}"; do
  out="$TMP/run-$N"
  # Two checks: a load round, then an idle round while every rank only heartbeats (kiln-load
  # keeps a round's results back until --duration if asked; here the idle window is measured
  # before the first round by delaying the plan with a long connect phase).
  "$BIN/kiln" run --launcher none --ranks "$N" --out "$out" --tests mpi.all_reduce,mpi.alltoall --localize-by off \
    --connect-timeout 300 --deadline 600 --quiet > "$TMP/sum-$N.txt" 2>&1 &
  kpid=$!
  sample $kpid "$TMP/stat-$N" &
  for _ in $(seq 100); do [ -s "$out/campaign.json" ] && break; sleep 0.1; done
  LOAD=("$BIN/kiln-load" --ranks-per-conn "$PER_CONN" --batch "$BATCH" --window "$WINDOW" --quiet)
  "${LOAD[@]}" --campaign "$out" --ranks "$N" --results $((TOTAL / 2 / N)) > "$TMP/load-$N.txt" 2>&1 &
  lpid=$!
  wait $lpid
  wait $kpid
  sleep 0.3
  read -r cpu rss < "$TMP/stat-$N"
  line=$(grep "final" "$TMP/load-$N.txt")
  sent=$(sed -E 's/.* acked ([0-9]+) .*/\1/' <<<"$line")
  rate=$(sed -E 's/.*: ([0-9]+) acked\/s.*/\1/' <<<"$line")
  p50=$(sed -E 's/.*p50 ([0-9.]+) ms.*/\1/' <<<"$line")
  p99=$(sed -E 's/.*p99 ([0-9.]+) ms.*/\1/' <<<"$line")
  # Latency at a fixed offered load, well under saturation.
  "$BIN/kiln" run --launcher none --ranks "$N" --out "$out-rate" --tests mpi.all_reduce --localize-by off \
    --connect-timeout 300 --deadline 600 --quiet > /dev/null 2>&1 &
  rpid=$!
  for _ in $(seq 100); do [ -s "$out-rate/campaign.json" ] && break; sleep 0.1; done
  rline=$("${LOAD[@]}" --campaign "$out-rate" --ranks "$N" --results $((RATE * RATE_S / N + 1)) --rate "$RATE" 2>&1 | grep final)
  rrate=$(sed -E 's/.*: ([0-9]+) acked\/s.*/\1/' <<<"$rline")
  wait $rpid
  rp50=$(sed -E 's/.*p50 ([0-9.]+) ms.*/\1/' <<<"$rline")
  rp99=$(sed -E 's/.*p99 ([0-9.]+) ms.*/\1/' <<<"$rline")
  # Idle: N ranks connected and heartbeating every 2 s, no round running.
  "$BIN/kiln" run --launcher none --ranks "$((N + 1))" --out "$out-idle" --tests host.inventory --localize-by off \
    --connect-timeout $((IDLE_S + 30)) --quiet > /dev/null 2>&1 &
  ipid=$!
  for _ in $(seq 100); do [ -s "$out-idle/campaign.json" ] && break; sleep 0.1; done
  "${LOAD[@]}" --campaign "$out-idle" --ranks "$N" --duration $((IDLE_S + 5)) > /dev/null 2>&1 &
  ilpid=$!
  sleep 3
  c0=$(awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$ipid/stat")
  sleep "$IDLE_S"
  c1=$(awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$ipid/stat")
  kill "$ipid" 2>/dev/null; wait "$ipid" "$ilpid" 2>/dev/null
  idle=$(awk -v a="$c0" -v b="$c1" -v s="$IDLE_S" 'BEGIN {printf "%.1f", 100 * (b - a) / s}')
  conns=$(( (N + PER_CONN - 1) / PER_CONN ))
  printf '| %s | %s | %s | %s | %s / %s | %s | %s / %s | %s | %s | %s |\n' "$N" "$conns" "$sent" "$rate" "$p50" "$p99" "$rrate" "$rp50" "$rp99" "$rss" "$cpu" "$idle"
done
