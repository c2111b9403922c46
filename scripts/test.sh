#!/usr/bin/env bash
# Everything `make test` runs, in order of cost. Fails on the first failure.
#  0. the tree is formatted as .clang-format says (`make format` fixes it)
#  1. release build + unit tests (ctest)
#  2. debug build with ASan + UBSan + the same unit tests
#  3. clang build of every target with -Wthread-safety -Werror and ThreadSanitizer,
#     running the concurrent tests (writer, gate, read pool, CondVar, token cache, ingest pipeline, the server's
#     end-to-end ingest, the state stores' connection pool and concurrent opens) under TSan
#  4. end-to-end tests: the official OpenTelemetry JS SDK against `sightline serve`
#  5. browser tests of the web UI and of the OTel web exporter over CORS (Playwright driving Debian's chromium)
#  6. a short libFuzzer run of every decoder
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
start=$(date +%s)
step() { echo; echo "=== $* ($(( $(date +%s) - start ))s)"; }

step "setup (test packages)"
scripts/setup.sh --test

step "format (clang-format --dry-run against .clang-format)"
find src bench fuzz \( -name '*.h' -o -name '*.cc' \) -print0 | xargs -0 clang-format --dry-run --Werror

step "release build"
[ -f build/build.ninja ] || cmake --preset release >/dev/null
cmake --build build

step "unit tests (release)"
(cd build && ctest --output-on-failure)

step "unit tests (ASan + UBSan)"
[ -f build-debug/build.ninja ] || cmake --preset debug >/dev/null
cmake --build build-debug --target unit_tests
# Without the tests on chdb's in-process ClickHouse (*/chdb): libchdb.so is not
# built with the sanitizers and its initialisers crash (SEGV at address 0) as soon
# as it is loaded into an ASan or TSan process. The release step above runs them.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ./build-debug/unit_tests --gtest_brief=1 --gtest_filter='-*/chdb'

step "clang -Wthread-safety -Werror build of every target, with ThreadSanitizer"
[ -f build-tsan/build.ninja ] || cmake --preset tsan >/dev/null
cmake --build build-tsan

step "concurrent tests under ThreadSanitizer"
# Two processes: the tests that fork a server of their own (ClickHouse,
# PostgreSQL) run in the second, before any DuckDB thread exists. A fork while
# DuckDB's allocator holds more than 64 locks trips TSan's deadlock detector
# (a CHECK in TSan itself, not a finding in our code). The chdb variants are left
# out, as under ASan above.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$root/test/tsan/suppressions.txt"
./build-tsan/unit_tests --gtest_brief=1 \
  --gtest_filter='CondVar*:SignalWriter*:AdmissionGate*:ReadPool*:TokenCache*:LoginServiceTest.*:IngestService*:Engines/ServerIngestTest.*:MaintenanceTest.TheThreads*:Engines/RetentionStoreTest.DeleteBeside*:DuckDbCheckpoint.*-*/clickhouse:*/clickhouse_cluster:ClickHouseCluster*:*/chdb'
./build-tsan/unit_tests --gtest_brief=1 \
  --gtest_filter='Engines/ServerIngestTest.*/clickhouse:Engines/RetentionStoreTest.DeleteBeside*/clickhouse:PostgresStateStoreTest.*:Engines/StateStoreConformanceTest.Concurrent*:ClickHouseClusterTest.*'
unset TSAN_OPTIONS

step "integration tests (OpenTelemetry JS SDK -> sightline serve)"
test/integration/run.sh

step "browser tests (Playwright + Debian chromium: the embedded UI, the OTel web exporter over CORS)"
test/browser/run.sh

step "fuzz (short run)"
scripts/fuzz.sh "${FUZZ_SECONDS:-15}"

step "all tests passed"
