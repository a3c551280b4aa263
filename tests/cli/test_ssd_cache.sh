# hearth serve --ssd-cache on brown-llama-8m: bad flag values are refused; a served prompt
# is written behind while idle; kill -9 in the middle of a stream of requests (with the
# writer busy: a small KV pool evicts and spills all the time) and half-written files (a
# leftover temporary file, a truncated block file) never get used: after a restart the
# scan deletes them, serving works, and the first prompt comes back from disk with the
# same greedy text; /stats and /metrics show the tier.
. "$(dirname "$0")/lib.sh"
B=$S/fixtures/models/brown-llama-8m
D=$T/cache
expect_rc bad_max 2 "--ssd-cache-max must be" "$H" serve --model "$B" --ssd-cache "$D" --ssd-cache-max -1
expect_rc max_alone 2 "need --ssd-cache" "$H" serve --model "$B" --ssd-cache-max 4
expect_rc verify_alone 2 "need --ssd-cache" "$H" serve --model "$B" --ssd-cache-verify
expect_rc always_alone 2 "need --ssd-cache" "$H" serve --model "$B" --ssd-cache-always-restore
expect_rc no_prefix 2 "does not go with --no-prefix-cache" "$H" serve --model "$B" --ssd-cache "$D" --no-prefix-cache
touch "$T/file"
expect_rc not_a_dir 1 "not a directory" "$H" serve --model "$B" --port 0 --ssd-cache "$T/file"

LONG=$(python3 -c 'print(" ".join("word%d" % (i * 37 % 101) for i in range(300)))')
complete() { # PROMPT -> the completion's text
  curl -s "http://127.0.0.1:$PORT/v1/completions" -H 'content-type: application/json' \
    -d "{\"prompt\": \"$1\", \"max_tokens\": 8, \"temperature\": 0}" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["text"])'
}
stat_of() { curl -s "http://127.0.0.1:$PORT/stats" | python3 -c "import json,sys; print(json.load(sys.stdin).get('$1', 'absent'))"; }
wait_stat() { # NAME MIN: waits up to 30 s for /stats NAME >= MIN
  for _ in $(seq 300); do [ "$(stat_of "$1")" -ge "$2" ] 2>/dev/null && return 0; sleep 0.1; done; return 1
}

serve_start "$T/a.log" serve --model "$B" --port 0 --threads 2 --kv-memory 4 --ssd-cache "$D"
expect_rc a_ready 0 "" test -n "$PORT"
first=$(complete "$LONG")
expect_rc a_text 0 "" test -n "$first"
expect_rc a_written_behind 0 "" wait_stat ssd_spills 8
for i in $(seq 12); do complete "$i $LONG $i" > /dev/null 2>&1 & done
sleep 1
kill -9 $PID; wait $PID 2>/dev/null
wait
ls "$D" > "$T/files"
expect_rc files_written 0 "" test "$(grep -c '\.hkv$' "$T/files")" -ge 8
# what a crash mid-write leaves (hr_write_atomic's temporary file of a dead process), and
# a block file cut short by something that was not hearth
f=$(grep '\.hkv$' "$T/files" | head -1)
head -c 100 "$D/$f" > "$D/$f.tmp.999999999"
g=$(grep '\.hkv$' "$T/files" | tail -1)
truncate -s 5000 "$D/$g"

serve_start "$T/b.log" serve --model "$B" --port 0 --threads 2 --kv-memory 4 --ssd-cache "$D"
expect_rc b_ready 0 "" test -n "$PORT"
expect_rc b_tmp_removed 0 "did not finish" cat "$T/b.log"
expect_rc b_truncated_deleted 0 "truncated; deleted" cat "$T/b.log"
expect_rc b_tmp_gone 1 "" test -e "$D/$f.tmp.999999999"
again=$(complete "$LONG")
expect_rc b_same_text 0 "" test "$again" = "$first"
expect_rc b_restored 0 "" test "$(stat_of ssd_restores)" -ge 1
expect_rc b_hits 0 "" test "$(stat_of ssd_hits)" -ge 1
expect_rc b_restore_ms 0 "" python3 -c "import sys; sys.exit(0 if float('$(stat_of ssd_last_restore_ms)') > 0 else 1)"
expect_rc b_metrics 0 "hearth_ssd_entries [1-9]" curl -s "http://127.0.0.1:$PORT/metrics"
expect_rc b_metrics_dropped 0 "hearth_ssd_dropped_spills" curl -s "http://127.0.0.1:$PORT/metrics"
kill $PID; wait $PID
expect_rc b_exit 0 "" test $? = 0

serve_start "$T/c.log" serve --model "$B" --port 0 --threads 2
expect_rc off_by_default 0 "" test "$(stat_of ssd_entries)" = absent
kill $PID; wait $PID
summary
