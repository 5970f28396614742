#!/usr/bin/env bash
# `larc fuzz` interrupted and resumed, the way a batch system does it (docs/robustness.md): a campaign
# sent SIGTERM once some cases are done exits 143 and leaves a report that parses, holds only
# finished cases and is marked unfinished (so `larc merge` refuses it); `--resume` runs only the
# remaining cases and its report equals an uninterrupted run of the campaign (timings aside). The same
# with SIGINT (exit 130), resumed, interrupted again and resumed to the end; resuming a finished report
# changes nothing; resuming another campaign's report exits 2. A --target error search, interrupted and
# resumed, ends as an uninterrupted one.
# usage: cli_fuzz_resume_test.sh LARC OUT CMAKE CHECK   (CHECK: tests/cli/fuzz_report_check.cmake)
set -euo pipefail
larc=$1 out=$2 cmake=$3 check=$4
rm -rf "$out"
mkdir -p "$out"
cases=40
# Cases of up to T = 2048 take about 50 ms each on 2 cores: the signal, sent once the first is done,
# arrives long before the 40th.
campaign=(fuzz --cases "$cases" --seed 11 --max-shape 2,2048,2,64,64 --corpus "$out/corpus")

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# run ARGS...: larc's exit code, its output in $out/last.log.
run() {
  local rc=0
  "$larc" "$@" > "$out/last.log" 2>&1 || rc=$?
  echo "$rc"
}
# interrupt SIGNAL JSON [ARGS...]: runs the campaign with --json JSON, sends SIGNAL once its progress
# shows a finished case, and echoes its exit code.
interrupt() {
  local signal=$1 json=$2
  shift 2
  "$larc" "${campaign[@]}" --json "$json" --progress "$@" > "$out/run.log" 2> "$out/run.err" &
  local pid=$! rc=0
  for _ in $(seq 1200); do  # at most 60 s
    grep -q " cases, " "$out/run.err" && break
    sleep 0.05
  done
  kill -s "$signal" "$pid"
  wait "$pid" || rc=$?
  echo "$rc"
}

whole_rc=$(run "${campaign[@]}" --json "$out/whole.json")
[ "$whole_rc" -le 1 ] || fail "the uninterrupted campaign exited $whole_rc: $(cat "$out/last.log")"

# SIGTERM: the finished cases are kept, the report says why it is unfinished, merge refuses it.
rc=$(interrupt TERM "$out/term.json")
[ "$rc" -eq 143 ] || fail "SIGTERM: exit $rc, expected 143: $(cat "$out/run.log" "$out/run.err")"
grep -q "interrupted by SIGTERM after case .*continue with --resume" "$out/run.log" || fail "no resume hint: $(cat "$out/run.log")"
"$cmake" -DMODE=unfinished -DA="$out/term.json" -DREASON="interrupted by SIGTERM" -DCASES=$cases -P "$check"
rc=$(run merge "$out/term.json" --json "$out/merged.json")
[ "$rc" -eq 2 ] && grep -q "term.json: an unfinished run" "$out/last.log" || fail "merge of an unfinished report: exit $rc: $(cat "$out/last.log")"
done_before=$(grep -c '"index"' "$out/term.json")
rc=$(run "${campaign[@]}" --json "$out/term.json" --resume)
[ "$rc" -eq "$whole_rc" ] || fail "resumed after SIGTERM: exit $rc, expected $whole_rc: $(cat "$out/last.log")"
grep -q "resuming $out/term.json: $done_before cases finished" "$out/last.log" || fail "resume did not skip the $done_before finished cases: $(cat "$out/last.log")"
"$cmake" -DMODE=equal -DA="$out/term.json" -DB="$out/whole.json" -P "$check"

# Resuming a finished report runs nothing and leaves the same results; another campaign is refused.
rc=$(run "${campaign[@]}" --json "$out/term.json" --resume)
[ "$rc" -eq "$whole_rc" ] && grep -q "$cases cases finished" "$out/last.log" || fail "resuming a finished run: exit $rc: $(cat "$out/last.log")"
"$cmake" -DMODE=equal -DA="$out/term.json" -DB="$out/whole.json" -P "$check"
rc=$(run fuzz --cases "$cases" --seed 12 --max-shape 2,2048,2,64,64 --json "$out/term.json" --resume)
[ "$rc" -eq 2 ] && grep -q "term.json: a different campaign: seed (11 vs 12)" "$out/last.log" || fail "another campaign: exit $rc: $(cat "$out/last.log")"

# SIGINT, then the resumed run interrupted by SIGTERM, then resumed to the end.
rc=$(interrupt INT "$out/int.json")
[ "$rc" -eq 130 ] || fail "SIGINT: exit $rc, expected 130: $(cat "$out/run.log" "$out/run.err")"
"$cmake" -DMODE=unfinished -DA="$out/int.json" -DREASON="interrupted by SIGINT" -DCASES=$cases -P "$check"
rc=$(interrupt TERM "$out/int.json" --resume)
if [ "$rc" -eq 143 ]; then
  "$cmake" -DMODE=unfinished -DA="$out/int.json" -DREASON="interrupted by SIGTERM" -DCASES=$cases -P "$check"
elif [ "$rc" -ne "$whole_rc" ]; then  # the resumed part may have finished before the signal came
  fail "resumed after SIGINT and sent SIGTERM: exit $rc: $(cat "$out/run.log" "$out/run.err")"
fi
rc=$(run "${campaign[@]}" --json "$out/int.json" --resume)
[ "$rc" -eq "$whole_rc" ] || fail "resumed after SIGINT: exit $rc: $(cat "$out/last.log")"
"$cmake" -DMODE=equal -DA="$out/int.json" -DB="$out/whole.json" -P "$check"
# A --target error search interrupted by SIGINT and resumed retraces its evaluations (not judging them
# again) and ends where an uninterrupted search ends: the same search.scores and the same worst case.
search=(fuzz --target error --cases 60 --seed 11 --max-shape 2,2048,2,64,64 --corpus "$out/corpus")
search_rc=$(run "${search[@]}" --json "$out/search_whole.json")
[ "$search_rc" -le 1 ] || fail "the uninterrupted search exited $search_rc: $(cat "$out/last.log")"
"$larc" "${search[@]}" --json "$out/search.json" --progress > "$out/run.log" 2> "$out/run.err" &
pid=$!
for _ in $(seq 1200); do
  grep -q " cases, " "$out/run.err" && break
  sleep 0.05
done
kill -s INT "$pid"
rc=0
wait "$pid" || rc=$?
if [ "$rc" -eq 130 ]; then
  grep -q '"unfinished": "interrupted by SIGINT"' "$out/search.json" || fail "the interrupted search's report is not marked: $(head -c 400 "$out/search.json")"
  rc=$(run "${search[@]}" --json "$out/search.json" --resume)
  [ "$rc" -eq "$search_rc" ] || fail "the resumed search exited $rc, expected $search_rc: $(cat "$out/last.log")"
  grep -q "evaluations retraced from $out/search.json" "$out/last.log" || fail "the resumed search retraced nothing: $(cat "$out/last.log")"
elif [ "$rc" -ne "$search_rc" ]; then  # it may have finished before the signal came
  fail "the search sent SIGINT: exit $rc: $(cat "$out/run.log" "$out/run.err")"
fi
"$cmake" -DMODE=equal_search -DA="$out/search.json" -DB="$out/search_whole.json" -P "$check"
# A search resumed from a sampling campaign's report is another campaign: refused, naming the file.
rc=$(run "${search[@]}" --json "$out/whole.json" --resume)
[ "$rc" -eq 2 ] && grep -q "whole.json: a different campaign" "$out/last.log" || fail "a search resumed from a campaign's report: exit $rc: $(cat "$out/last.log")"
echo "PASS"
