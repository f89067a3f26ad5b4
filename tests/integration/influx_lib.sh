# A throwaway influxd for test_exports.sh (sourced): its own data, meta and WAL directories under
# $TMP, HTTP and RPC on free loopback ports, every other service and usage reporting off.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

start_influxd() {
  local dir="$TMP/influx"
  mkdir -p "$dir"
  INFLUX_PORT=$(free_port)
  local rpc_port
  rpc_port=$(free_port)
  cat > "$dir/influxdb.conf" <<CONF
reporting-disabled = true
bind-address = "127.0.0.1:$rpc_port"
[meta]
  dir = "$dir/meta"
[data]
  dir = "$dir/data"
  wal-dir = "$dir/wal"
  query-log-enabled = false
[http]
  bind-address = "127.0.0.1:$INFLUX_PORT"
  log-enabled = false
[ifql]
  enabled = false
[monitor]
  store-enabled = false
[subscriber]
  enabled = false
[continuous_queries]
  enabled = false
[[graphite]]
  enabled = false
[[collectd]]
  enabled = false
[[opentsdb]]
  enabled = false
[[udp]]
  enabled = false
CONF
  influxd -config "$dir/influxdb.conf" > "$dir/influxd.log" 2>&1 &
  INFLUXD_PID=$!
  at_exit 'kill "$INFLUXD_PID" 2>/dev/null; wait "$INFLUXD_PID" 2>/dev/null'
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$INFLUX_PORT/ping" > /dev/null && return 0
    kill -0 "$INFLUXD_PID" 2>/dev/null || break
    sleep 0.1
  done
  return 1
}

influx_query() {  # DB QUERY -> the first value of the first series, or "0" when there is none
  curl -sf -G "http://127.0.0.1:$INFLUX_PORT/query" --data-urlencode "db=$1" --data-urlencode "q=$2" |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["results"][0]; s=r.get("series"); print(s[0]["values"][0][1] if s else 0)'
}

# For each run directory: a database of its own, report.influx written, every line read back.
check_influx() {
  if ! start_influxd; then
    bad "influxd did not start: $(tail -5 "$TMP/influx/influxd.log")"
    return
  fi
  pass "influxd up on 127.0.0.1:$INFLUX_PORT"
  local n=0 d db lines
  for d in "$@"; do
    n=$((n + 1))
    db="kiln$n"
    curl -sf -XPOST "http://127.0.0.1:$INFLUX_PORT/query" --data-urlencode "q=CREATE DATABASE $db" > /dev/null || bad "CREATE DATABASE $db"
    if curl -sf -XPOST "http://127.0.0.1:$INFLUX_PORT/write?db=$db&precision=ns" --data-binary @"$d/report.influx" > "$TMP/write.txt" 2>&1; then
      pass "$(basename "$d"): influxd accepted report.influx"
    else
      bad "$(basename "$d"): influxd rejected report.influx: $(curl -s -XPOST "http://127.0.0.1:$INFLUX_PORT/write?db=$db&precision=ns" --data-binary @"$d/report.influx")"
    fi
    lines=$(grep -c '^kiln_result,' "$d/report.influx")
    got=$(influx_query "$db" 'SELECT count(value) FROM kiln_result')
    [ "$got" = "$lines" ] && pass "$(basename "$d"): $got kiln_result points read back" || bad "$(basename "$d"): $got kiln_result points, wrote $lines"
    lines=$(grep -c '^kiln_finding,' "$d/report.influx")
    got=$(influx_query "$db" 'SELECT count(confidence) FROM kiln_finding')
    [ "$got" = "$lines" ] && pass "$(basename "$d"): $got kiln_finding points read back" || bad "$(basename "$d"): $got kiln_finding points, wrote $lines"
    got=$(influx_query "$db" "SELECT count(duration_s) FROM kiln_run WHERE verdict = '$(json "$d/report.json" 'd["verdict"]')'")
    [ "$got" = 1 ] && pass "$(basename "$d"): kiln_run with the report's verdict" || bad "$(basename "$d"): kiln_run count $got"
  done
  got=$(influx_query kiln2 "SELECT last(summary) FROM kiln_finding WHERE code = 'link.slow'")
  [[ "$got" == *"node2 and node5"* ]] && pass "the link.slow finding reads back with its summary" || bad "link.slow summary read back: $got"
}
