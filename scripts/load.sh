#!/usr/bin/env bash
# Load test: the payments example on the standalone emulator, driven by wrk
# with and without the idemkey wrapper, beside the emulator's own ceiling.
#
#   scripts/load.sh [duration=10s] [connections=16]
#   ROUNDS=9 scripts/load.sh
#
# The guarded and the unguarded server are measured in ROUNDS rounds
# (default 5), each on a fresh pair of servers (so that no round starts
# with the tables of another), one after the other in alternating order
# (guarded first in odd rounds, unguarded first in even ones), so that a
# slow spell of the machine falls on both sides. Each round prints
#   load round=<i> guarded_rps=<n> unguarded_rps=<n> ratio=<guarded/unguarded>
# and the summary takes the medians of the rounds: the median of each
# side's requests/s, and the median of the rounds' ratios.
#
# Prints three summary lines, all from this one run (scripts/bench.sh
# reports the last two):
#   load guarded_rps=<median> unguarded_rps=<median> ratio=<median ratio> emulator_putitem_rps=<n> emulator_transact_rps=<n>
#   emulator transact_vs_put=<emulator_transact_rps/emulator_putitem_rps>
#   load guarded_vs_unguarded=<median of the rounds' ratios>
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10s}
conns=${2:-16}
rounds=${ROUNDS:-5}

if ! command -v wrk >/dev/null; then
	echo "installing wrk (Debian package)" >&2
	(apt-get install -y wrk || (apt-get update && apt-get install -y wrk)) >/dev/null
fi

tmp=$(mktemp -d)
# start runs in command substitutions (subshells), so the servers' pids go
# to a file, not to a variable the subshell would lose.
cleanup() {
	if [ -f "$tmp/pids" ]; then
		while read -r p; do kill "$p" 2>/dev/null || true; done <"$tmp/pids"
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/emulator" ./localstack/cmd/emulator
go build -o "$tmp/payments" ./examples/payments

# start BIN ARGS... : runs it in the background and prints the first URL it prints.
start() {
	local out="$tmp/out.$RANDOM"
	"$@" >"$out" 2>"$out.err" &
	echo $! >>"$tmp/pids"
	for _ in $(seq 1 300); do
		if url=$(grep -o 'http://[0-9.:]*' "$out" | head -1) && [ -n "$url" ]; then
			echo "$url"; return 0
		fi
		sleep 0.1
	done
	echo "no URL from $1" >&2; cat "$out.err" >&2; return 1
}

emulator=$(start "$tmp/emulator" -addr 127.0.0.1:0)
# Each payments server runs on its own embedded emulator, as
# `go run ./examples/payments` does. With SHARED_EMULATOR=1 both use the
# standalone emulator instead; their clients then send one request at a
# time (localstack.Start does so for every loopback endpoint, for moto's
# sake), which the guarded server, with two calls per request, pays twice.
if [ "${SHARED_EMULATOR:-0}" = 1 ]; then
	export AWS_ENDPOINT_URL_DYNAMODB=$emulator
else
	unset AWS_ENDPOINT_URL_DYNAMODB
fi
# Fresh tables for each ceiling on the standalone emulator (these instances
# only create them): minidyn's inserts slow down as a table grows.
AWS_ENDPOINT_URL_DYNAMODB=$emulator start "$tmp/payments" -addr 127.0.0.1:0 -key-table load-keys-c -payment-table load-payments-c >/dev/null
AWS_ENDPOINT_URL_DYNAMODB=$emulator start "$tmp/payments" -addr 127.0.0.1:0 -key-table load-keys-p -payment-table load-payments-p >/dev/null

# One fresh Idempotency-Key per request.
cat >"$tmp/post.lua" <<'LUA'
local n = 0
local thread_id = 0
function setup(thread) thread:set("tid", thread_id); thread_id = thread_id + 1 end
request = function()
  n = n + 1
  local headers = {
    ["Authorization"] = "Bearer load",
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = "load-" .. tid .. "-" .. n .. "-" .. math.random(1, 1e9),
  }
  return wrk.format("POST", "/payments", headers, '{"amount":1250,"currency":"EUR"}')
end
LUA
# The emulator's ceiling: a conditional PutItem per request, straight to the
# DynamoDB API, no HTTP service in front.
cat >"$tmp/putitem.lua" <<'LUA'
local n = 0
local thread_id = 0
function setup(thread) thread:set("tid", thread_id); thread_id = thread_id + 1 end
request = function()
  n = n + 1
  local body = '{"TableName":"load-payments-p","Item":{"owner":{"S":"ceiling"},"id":{"S":"c-' .. tid .. '-' .. n .. '"},"amount":{"N":"1250"}},"ConditionExpression":"attribute_not_exists(id)"}'
  return wrk.format("POST", "/", {["Content-Type"] = "application/x-amz-json-1.0", ["X-Amz-Target"] = "DynamoDB_20120810.PutItem"}, body)
end
LUA
# The same with the shape of a guarded commit: a TransactWriteItems of the
# key record and the payment; the emulator applies it item by item, so its
# cost does not depend on the size of the tables.
cat >"$tmp/transact.lua" <<'LUA'
local n = 0
local thread_id = 0
function setup(thread) thread:set("tid", thread_id); thread_id = thread_id + 1 end
request = function()
  n = n + 1
  local id = 't-' .. tid .. '-' .. n
  local body = '{"TransactItems":[' ..
    '{"Put":{"TableName":"load-keys-c","Item":{"pk":{"S":"' .. id .. '"},"state":{"S":"completed"}},"ConditionExpression":"attribute_not_exists(pk)"}},' ..
    '{"Put":{"TableName":"load-payments-c","Item":{"owner":{"S":"ceiling-t"},"id":{"S":"' .. id .. '"}},"ConditionExpression":"attribute_not_exists(id)"}}]}'
  return wrk.format("POST", "/", {["Content-Type"] = "application/x-amz-json-1.0", ["X-Amz-Target"] = "DynamoDB_20120810.TransactWriteItems"}, body)
end
LUA

rps() { # url script
	wrk -t2 -c"$conns" -d"$duration" -s "$2" "$1" >"$tmp/wrk.out"
	cat "$tmp/wrk.out" >&2
	cat "$tmp/wrk.out" >>"$tmp/wrk.log"
	awk '/Requests\/sec/ {print $2}' "$tmp/wrk.out"
}
# median: the median of the numbers on standard input, one per line.
median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "== emulator TransactWriteItems ceiling ($emulator)" >&2
et=$(rps "$emulator" "$tmp/transact.lua")
: >"$tmp/rounds"
for i in $(seq 1 "$rounds"); do
	# A fresh pair of servers, each on its own new embedded emulator, with
	# tables of the round's own names (the shared emulator keeps them).
	: >"$tmp/round.pids"
	guarded=$(start "$tmp/payments" -addr 127.0.0.1:0 -key-table "load-keys-$i" -payment-table "load-payments-$i")
	tail -1 "$tmp/pids" >>"$tmp/round.pids"
	unguarded=$(start "$tmp/payments" -addr 127.0.0.1:0 -unguarded -key-table "load-keys-u$i" -payment-table "load-payments-u$i")
	tail -1 "$tmp/pids" >>"$tmp/round.pids"
	if [ $((i % 2)) = 1 ]; then
		echo "== round $i: guarded ($guarded)" >&2
		g=$(rps "$guarded" "$tmp/post.lua")
		echo "== round $i: unguarded ($unguarded)" >&2
		u=$(rps "$unguarded" "$tmp/post.lua")
	else
		echo "== round $i: unguarded ($unguarded)" >&2
		u=$(rps "$unguarded" "$tmp/post.lua")
		echo "== round $i: guarded ($guarded)" >&2
		g=$(rps "$guarded" "$tmp/post.lua")
	fi
	while read -r p; do kill "$p" 2>/dev/null || true; done <"$tmp/round.pids"
	r=$(awk -v g="$g" -v u="$u" 'BEGIN { printf "%.3f", g / u }')
	echo "load round=$i guarded_rps=$g unguarded_rps=$u ratio=$r"
	echo "$g $u $r" >>"$tmp/rounds"
done
echo "== emulator PutItem ceiling ($emulator)" >&2
e=$(rps "$emulator" "$tmp/putitem.lua")
if grep -q "Non-2xx" "$tmp/wrk.log"; then
	echo "warning: some requests were not answered 2xx (see above)" >&2
fi
g=$(awk '{ print $1 }' "$tmp/rounds" | median)
u=$(awk '{ print $2 }' "$tmp/rounds" | median)
ratio=$(awk '{ print $3 }' "$tmp/rounds" | median | awk '{ printf "%.2f", $1 }')
tp=$(awk -v t="$et" -v p="$e" 'BEGIN { printf "%.2f", t / p }')
echo "load guarded_rps=$g unguarded_rps=$u ratio=$ratio emulator_putitem_rps=$e emulator_transact_rps=$et"
echo "emulator transact_vs_put=$tp"
echo "load guarded_vs_unguarded=$ratio"
