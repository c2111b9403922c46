#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, build-fuzz/) and runs each for N seconds
# (default 20) on a scratch copy of its seed corpus, so the checked-in seeds
# stay small. Inputs in fuzz/regressions/<fuzzer>/ are replayed first.
# Exits non-zero as soon as a fuzzer crashes; the crashing input is left in
# build-fuzz/fuzz-out/<fuzzer>/ (crash-*, leak-*, timeout-*, oom-*).
#   scripts/fuzz.sh [seconds]
#   FUZZ_JOBS=2 scripts/fuzz.sh 300     # parallel workers per fuzzer
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
seconds="${1:-20}"
jobs="${FUZZ_JOBS:-1}"
fuzzers=(otlp_protobuf_fuzzer otlp_json_fuzzer compression_fuzzer)

# The sl_* libraries are compiled with the CMAKE_CXX_FLAGS below as well as the
# fuzzers, so the decoders themselves carry coverage counters and ASan/UBSan
# checks (the SIGHTLINE_FUZZ targets alone instrument only the harness file).
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DSIGHTLINE_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
ninja -C build-fuzz "${fuzzers[@]}"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
parallel=()
if ((jobs > 1)); then parallel=(-jobs="$jobs" -workers="$jobs"); fi
status=0
for f in "${fuzzers[@]}"; do
  out="build-fuzz/fuzz-out/$f"
  rm -rf "$out"
  mkdir -p "$out/corpus"
  cp -r "fuzz/corpus/$f/." "$out/corpus/" 2>/dev/null || true
  if compgen -G "fuzz/regressions/$f/*" >/dev/null; then
    echo "=== $f: replaying fuzz/regressions/$f"
    if ! "build-fuzz/$f" -rss_limit_mb=2048 fuzz/regressions/"$f"/* >"$out/regressions.log" 2>&1; then
      tail -40 "$out/regressions.log"
      echo "$f: a regression input fails again (log: $out/regressions.log)" >&2
      exit 1
    fi
  fi
  echo "=== $f: ${seconds}s"
  set +e
  (cd "$out" && "../../$f" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 \
    "${parallel[@]}" -artifact_prefix=./ corpus >fuzz.log 2>&1)
  rc=$?
  set -e
  grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)|cov:" "$out/fuzz.log" | tail -3 || true
  if [[ $rc -ne 0 ]] || compgen -G "$out/crash-*" >/dev/null || compgen -G "$out/leak-*" >/dev/null ||
     compgen -G "$out/oom-*" >/dev/null || compgen -G "$out/timeout-*" >/dev/null; then
    tail -60 "$out/fuzz.log"
    echo "$f: FAILED (rc=$rc); inputs in $out/" >&2
    status=1
    break
  fi
done
exit $status
