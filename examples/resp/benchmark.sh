#!/bin/bash
# Compares examples/resp with redis-server under redis-benchmark, as
# BENCHMARKING.md describes: loopback, persistence off, the server pinned
# to CPU 0 and the load generator to CPU 1, the two servers alternating
# round after round. For each server, pipelining depth (-P 1 and -P 16) and
# test it prints requests per second and the server's CPU time per request
# (utime+stime from /proc/PID/stat, read before and after the test), and
# the context switches of all its threads per request (from
# /proc/PID/task/*/status), which is where a Go server pays for blocking
# in epoll_wait.
#
#   examples/resp/benchmark.sh [rounds] [requests]
#
# Needs redis-server, redis-benchmark (apt-get install redis-server
# redis-tools) and taskset.
set -eu
ROUNDS=${1:-3}
REQUESTS=${2:-200000}
PORT_RESP=6391
PORT_REDIS=6392
TICK=$(getconf CLK_TCK)
cd "$(dirname "$0")/../.."
go build -o /tmp/resp-benchmark ./examples/resp

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
ctx_switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {n += $2} END {print n}'; }

start_server() { # name port -> pid
	case $1 in
	resp) taskset -c 0 /tmp/resp-benchmark -addr 127.0.0.1:$2 -loops 1 >/dev/null 2>&1 & ;;
	redis) taskset -c 0 redis-server --port $2 --bind 127.0.0.1 --save "" --appendonly no --daemonize no >/dev/null 2>&1 & ;;
	esac
	local pid=$!
	for _ in $(seq 100); do
		redis-cli -p $2 ping >/dev/null 2>&1 && break
		sleep 0.05
	done
	echo $pid
}

printf "%-6s %-5s %-3s %-12s %12s %14s %12s\n" round server P test "requests/s" "server-us/req" "ctxsw/req"
for round in $(seq "$ROUNDS"); do
	for server in resp redis; do
		port=$PORT_RESP
		[ $server = redis ] && port=$PORT_REDIS
		pid=$(start_server $server $port)
		for P in 1 16; do
			for t in ping set get; do
				before=$(cpu_ticks "$pid")
				csw_before=$(ctx_switches "$pid")
				out=$(taskset -c 1 redis-benchmark -p $port -c 50 -n "$REQUESTS" -t $t -P $P -q 2>/dev/null | tr '\r' '\n' | grep "requests per second")
				after=$(cpu_ticks "$pid")
				csw_after=$(ctx_switches "$pid")
				n=$(echo "$out" | wc -l) # ping is two tests: PING_INLINE and PING_MBULK
				echo "$out" | while read -r line; do
					name=${line%%:*}
					rps=$(echo "$line" | awk '{print $2}')
					us=$(awk -v t="$((after - before))" -v k="$TICK" -v r="$REQUESTS" -v n="$n" 'BEGIN {printf "%.2f", t / k * 1e6 / (r * n)}')
					csw=$(awk -v c="$((csw_after - csw_before))" -v r="$REQUESTS" -v n="$n" 'BEGIN {printf "%.3f", c / (r * n)}')
					printf "%-6s %-5s %-3s %-12s %12s %14s %12s\n" "$round" $server $P "$name" "$rps" "$us" "$csw"
				done
			done
		done
		kill "$pid"
		wait "$pid" 2>/dev/null || true
	done
done
