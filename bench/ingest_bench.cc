// Micro benchmarks of the ingest path's CPU-bound steps, on the same data the
// `sightline bench ingest` load generator sends (src/bench/load_generator.h):
//
//   BM_DecodeSpans/1000     gunzip + DecodeSpans of a 1,000-span request
//   BM_DecodeLogs/1000      gunzip + DecodeLogs of 1,000 log records
//   BM_DecodeMetrics/1000   gunzip + DecodeMetrics of 1,000 metric points
//   BM_Gunzip/1000          the gunzip step alone (spans)
//   BM_RollupSpans/16384    the rollup deltas of a decoded 16,384-span batch
//                           (AddSpans and AddSpanExceptions, on the writer thread)
//   BM_RollupLogs/16384     the same for log records (AddLogs, AddLogExceptions)
//   BM_LogTokens/16384      the log token index's (token, minute) set of a batch
//   BM_AppendLogTokens/16384  appending such a set (about six rows a record)
//                           to log_tokens_tail, the writer thread's share
//   BM_WriteSpans/<engine>  SignalSink::WriteSpans of one 16,384-row batch,
//                           one commit, on a file-backed store in a temp dir
//   BM_WriteLogs, BM_WriteMetrics  the same for the other signals
//   BM_DuckDbValueCost/<kind>  DuckDB alone: what a value of each kind costs
//                           to append, commit and checkpoint (rows/s of process CPU)
//   BM_DuckDbLogShape/null_columns:<n>  DuckDB alone: the logs table's shape with
//                           n VARCHAR columns that are NULL on every row
//   BM_DuckDbRead/<api>     reading a 200,000-row result (int, double, text
//                           with NULLs): the store's chunk reader against the
//                           deprecated per-value API it replaced
//
// items_per_second is spans / log records / metric points per second.
// Run: build/ingest_bench [--benchmark_filter=Decode] [--benchmark_min_time=2]

#include <benchmark/benchmark.h>
#include <duckdb.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "bench/load_generator.h"
#include "otlp/compression.h"
#include "otlp/decoder.h"
#include "storage/duckdb/duckdb_reader.h"
#include "storage/duckdb/log_token_index.h"
#include "storage/rollup/exception_rollup.h"
#include "storage/rollup/log_rollup.h"
#include "storage/rollup/signal_rollups.h"
#include "storage/telemetry_store.h"

namespace sightline {
namespace {

//! The generator's name for a signal (the bench has a data model of its own).
bench::Signal Generated(Signal s) { return static_cast<bench::Signal>(static_cast<int>(s)); }

bench::LoadGenerator Generator(size_t batch) {
  bench::GeneratorOptions o;
  o.batch = batch;
  o.seed = 42;
  o.base_time_ns = 1700000000ll * 1000000000ll;
  // One resource block per request, as an SDK sends it.
  o.sdk_batch_limit = batch;
  return bench::LoadGenerator(o);
}

template <typename Decode>
void DecodeBenchmark(benchmark::State& state, Signal signal, Decode decode) {
  auto gen = Generator(static_cast<size_t>(state.range(0)));
  bench::Payload p = gen.Build(Generated(signal), 0);
  std::string inflated;
  size_t items = 0;
  for (auto _ : state) {
    Status st = Decompress(ContentEncoding::kGzip, p.body, 64 << 20, &inflated);
    if (!st.ok()) state.SkipWithError(st.message().c_str());
    items += decode(inflated);
  }
  state.SetItemsProcessed(static_cast<int64_t>(items));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(p.raw_bytes));
  state.counters["wire_bytes"] = static_cast<double>(p.body.size());
}

void BM_DecodeSpans(benchmark::State& state) {
  DecodeBenchmark(state, Signal::kSpans, [](const std::string& body) {
    SpanBatch b;
    Rejections r;
    (void)DecodeSpans(body, PayloadFormat::kProtobuf, &b, &r);
    return b.rows();
  });
}
BENCHMARK(BM_DecodeSpans)->Arg(1000);

void BM_DecodeLogs(benchmark::State& state) {
  DecodeBenchmark(state, Signal::kLogs, [](const std::string& body) {
    LogBatch b;
    Rejections r;
    (void)DecodeLogs(body, PayloadFormat::kProtobuf, 1, &b, &r);
    return b.rows();
  });
}
BENCHMARK(BM_DecodeLogs)->Arg(1000);

void BM_DecodeMetrics(benchmark::State& state) {
  DecodeBenchmark(state, Signal::kMetrics, [](const std::string& body) {
    MetricBatch b;
    Rejections r;
    (void)DecodeMetrics(body, PayloadFormat::kProtobuf, &b, &r);
    return b.rows();
  });
}
BENCHMARK(BM_DecodeMetrics)->Arg(1000);

//! Decodes one protobuf request into the batch of its type, as the server does.
template <typename Batch>
Status DecodeProto(const std::string& raw, Batch* out, Rejections* r) {
  if constexpr (std::is_same_v<Batch, SpanBatch>) return DecodeSpans(raw, PayloadFormat::kProtobuf, out, r);
  else if constexpr (std::is_same_v<Batch, LogBatch>) return DecodeLogs(raw, PayloadFormat::kProtobuf, 1, out, r);
  else return DecodeMetrics(raw, PayloadFormat::kProtobuf, out, r);
}

//! work(batch) per iteration, on one decoded batch of the generator's data;
//! work returns the rows it built.
template <typename Batch, typename Work>
void BatchBenchmark(benchmark::State& state, Signal signal, Work work) {
  auto gen = Generator(static_cast<size_t>(state.range(0)));
  bench::Payload p = gen.Build(Generated(signal), 0);
  std::string inflated;
  Batch b;
  Rejections r;
  Status st = Decompress(ContentEncoding::kGzip, p.body, 1 << 30, &inflated);
  if (st.ok()) st = DecodeProto(inflated, &b, &r);
  if (!st.ok() || b.rows() == 0) {
    state.SkipWithError(st.ok() ? "the batch decoded to no rows" : st.message().c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(work(b));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * b.rows()));
}

//! The rollup deltas of a span batch, on the decoder that submits it
//! (rollup::PrepareDeltas).
void BM_RollupSpans(benchmark::State& state) {
  BatchBenchmark<SpanBatch>(state, Signal::kSpans, [](const SpanBatch& b) {
    const rollup::PreparedSpanDeltas deltas(b);
    return deltas.spans.size() + deltas.exceptions.size();
  });
}
BENCHMARK(BM_RollupSpans)->Arg(16384);

//! The rollup deltas of a log batch, the writer thread's share before any appender.
void BM_RollupLogs(benchmark::State& state) {
  BatchBenchmark<LogBatch>(state, Signal::kLogs, [](const LogBatch& b) {
    rollup::LogRollupMap counts;
    rollup::ExceptionRollupMap exceptions;
    rollup::AddLogs(b, &counts);
    rollup::AddLogExceptions(b, &exceptions);
    return counts.size() + exceptions.size();
  });
}
BENCHMARK(BM_RollupLogs)->Arg(16384);

//! The log token index's share of a log batch, on the decoder that submits
//! it (SignalSink::Prepare): every body tokenized, the (token, minute) pairs
//! deduplicated.
void BM_LogTokens(benchmark::State& state) {
  BatchBenchmark<LogBatch>(state, Signal::kLogs, [](const LogBatch& b) { return duckdb_index::LogTokenSet(b).size(); });
}
BENCHMARK(BM_LogTokens)->Arg(16384);

//! The writer thread's share of the log token index: appending a batch's
//! (token, minute) rows to log_tokens_tail, in a transaction rolled back
//! after each iteration. The generator's bodies repeat a small vocabulary;
//! these carry ids with letters in them (a UUID, a host, a hex span id), as
//! real logs do, so each record adds about six rows.
void BM_AppendLogTokens(benchmark::State& state) {
  std::mt19937_64 rng(42);
  const auto hex = [&rng](size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s.push_back("0123456789abcdef"[rng() % 16]);
    return s;
  };
  LogBatch b;
  const size_t rows = static_cast<size_t>(state.range(0));
  for (size_t i = 0; i < rows; ++i) {
    b.time_ns.push_back(1700000000ll * 1000000000ll + static_cast<int64_t>(i) * 1000000);
    b.body.Append("request " + hex(8) + "-" + hex(4) + "-" + hex(4) + "-" + hex(4) + "-" + hex(12) + " from host-" +
                  hex(6) + " failed: span " + hex(16));
  }
  const duckdb_index::LogTokenSet set(b);
  duckdb_database db = nullptr;
  duckdb_connection conn = nullptr;
  duckdb_open(nullptr, &db);
  duckdb_connect(db, &conn);
  duckdb_query(conn, "CREATE TABLE log_tokens_tail (project_id BIGINT, token VARCHAR, minute BIGINT)", nullptr);
  for (auto _ : state) {
    duckdb_query(conn, "BEGIN TRANSACTION", nullptr);
    duckdb_appender appender = nullptr;
    duckdb_appender_create(conn, nullptr, "log_tokens_tail", &appender);
    Result<uint64_t> n = duckdb_index::AppendLogTokens(appender, 1, set);
    if (!n.ok() || duckdb_appender_close(appender) != DuckDBSuccess) state.SkipWithError("append failed");
    duckdb_appender_destroy(&appender);
    duckdb_query(conn, "ROLLBACK", nullptr);
  }
  state.counters["token_rows"] = static_cast<double>(set.size());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * set.size()));
  duckdb_disconnect(&conn);
  duckdb_close(&db);
}
BENCHMARK(BM_AppendLogTokens)->Arg(16384)->Unit(benchmark::kMillisecond);

void BM_Gunzip(benchmark::State& state) {
  auto gen = Generator(static_cast<size_t>(state.range(0)));
  bench::Payload p = gen.Build(bench::Signal::kSpans, 0);
  std::string inflated;
  for (auto _ : state) {
    Status st = Decompress(ContentEncoding::kGzip, p.body, 64 << 20, &inflated);
    benchmark::DoNotOptimize(inflated.data());
    if (!st.ok()) state.SkipWithError(st.message().c_str());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(p.raw_bytes));
}
BENCHMARK(BM_Gunzip)->Arg(1000);

//! Building one 1,000-item request with the load generator, at gzip level range(0).
void BM_GeneratePayload(benchmark::State& state, bench::Signal signal) {
  bench::GeneratorOptions o;
  o.batch = 1000;
  o.gzip_level = static_cast<int>(state.range(0));
  bench::LoadGenerator gen(o);
  uint64_t index = 0;
  for (auto _ : state) {
    bench::Payload p = gen.Build(signal, index++);
    benchmark::DoNotOptimize(p.body.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 1000);
}
BENCHMARK_CAPTURE(BM_GeneratePayload, spans, bench::Signal::kSpans)->Arg(0)->Arg(1)->Arg(6);
BENCHMARK_CAPTURE(BM_GeneratePayload, logs, bench::Signal::kLogs)->Arg(0)->Arg(1)->Arg(6);
BENCHMARK_CAPTURE(BM_GeneratePayload, metrics, bench::Signal::kMetrics)->Arg(0)->Arg(1)->Arg(6);

//! A store in a fresh temp directory, removed afterwards.
class TempStore {
 public:
  explicit TempStore(const std::string& engine, StoreOptions o = {}) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sightline-ingest-bench-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) dir_ = tmpl;
    RegisterBuiltinStores();
    o.data_dir = dir_;
    auto s = StoreRegistry::Instance().Open(engine, o);
    if (s.ok()) store_ = std::move(s.value());
    else error_ = s.status().ToString();
  }
  ~TempStore() {
    Close();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  //! Closes the store (DuckDB: the final checkpoint). Sinks must be gone.
  void Close() {
    if (store_) (void)store_->Close();
    store_.reset();
  }
  TelemetryStore* get() { return store_.get(); }
  const std::string& error() const { return error_; }

 private:
  std::string dir_;
  std::string error_;
  std::unique_ptr<TelemetryStore> store_;
};

template <typename Batch>
std::unique_ptr<Batch> DecodedBatch(Signal signal, size_t rows) {
  bench::GeneratorOptions o;
  o.batch = rows;
  o.seed = 7;
  o.gzip_level = 0;
  o.base_time_ns = 1700000000ll * 1000000000ll;
  bench::LoadGenerator gen(o);
  uint32_t items = 0;
  std::string raw = gen.BuildRaw(Generated(signal), 0, &items);
  auto b = std::make_unique<Batch>();
  b->project_id = 1;
  Rejections r;
  (void)DecodeProto(raw, b.get(), &r);
  return b;
}

//! One 16,384-row batch per commit; rows accumulate in the table across
//! iterations, as they do in a server.
template <typename Batch>
void WriteBenchmark(benchmark::State& state, const std::string& engine, Signal signal, StoreOptions options = {}) {
  constexpr size_t kRows = 16384;
  auto batch = DecodedBatch<Batch>(signal, kRows);
  TempStore store(engine, options);
  if (store.get() == nullptr) {
    state.SkipWithError(store.error().c_str());
    return;
  }
  auto sink = store.get()->NewSink(signal);
  if (!sink.ok()) {
    state.SkipWithError(sink.status().ToString().c_str());
    return;
  }
  // Prepared once, as the server does on the decoder before it submits the
  // batch (SignalWriter::Prepare): the loop times what the writer thread does.
  AnyBatch any = std::move(*batch);
  sink.value()->Prepare(&any);
  const Batch& prepared = std::get<Batch>(any);
  std::vector<const Batch*> group = {&prepared};
  auto started = std::chrono::steady_clock::now();
  for (auto _ : state) {
    Status st;
    if constexpr (std::is_same_v<Batch, SpanBatch>) st = sink.value()->WriteSpans(group);
    else if constexpr (std::is_same_v<Batch, LogBatch>) st = sink.value()->WriteLogs(group);
    else st = sink.value()->WriteMetrics(group);
    if (!st.ok()) {
      state.SkipWithError(st.ToString().c_str());
      break;
    }
  }
  double loop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double rows = static_cast<double>(state.iterations()) * static_cast<double>(prepared.rows());
  state.SetItemsProcessed(static_cast<int64_t>(rows));
  // A larger checkpoint threshold moves work out of the loop into the final
  // checkpoint; this counter charges it back.
  sink.value().reset();
  auto close_started = std::chrono::steady_clock::now();
  store.Close();
  double close_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - close_started).count();
  state.counters["items_per_s_incl_close"] = rows / (loop_s + close_s);
}

//! "1GB" or "1GB/1": checkpoint_threshold, then optionally DuckDB threads;
//! "" or "/1" keeps Sightline's default threshold.
StoreOptions WithCheckpointThreshold(const char* spec) {
  StoreOptions o;
  std::string s = spec;
  size_t slash = s.find('/');
  if (slash != 0 && !s.empty()) o.checkpoint_threshold = s.substr(0, slash);
  if (slash != std::string::npos) o.threads = std::stoi(s.substr(slash + 1));
  return o;
}

void BM_WriteSpans(benchmark::State& state, const char* engine, const char* checkpoint_threshold) {
  WriteBenchmark<SpanBatch>(state, engine, Signal::kSpans, WithCheckpointThreshold(checkpoint_threshold));
}
void BM_WriteLogs(benchmark::State& state, const char* engine, const char* checkpoint_threshold) {
  WriteBenchmark<LogBatch>(state, engine, Signal::kLogs, WithCheckpointThreshold(checkpoint_threshold));
}
void BM_WriteMetrics(benchmark::State& state, const char* engine, const char* checkpoint_threshold) {
  WriteBenchmark<MetricBatch>(state, engine, Signal::kMetrics, WithCheckpointThreshold(checkpoint_threshold));
}
// "duckdb" runs Sightline's default checkpoint_threshold (StoreOptions);
// "duckdb_ckpt16MB" DuckDB's own default (a checkpoint inside about every
// other commit); "duckdb_ckpt1GB" rarer checkpoints (most of their cost then
// falls outside the timed loop, in Close); "threads1" --duckdb-threads=1.
BENCHMARK_CAPTURE(BM_WriteSpans, duckdb, "duckdb", "")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_WriteSpans, duckdb_ckpt16MB, "duckdb", "16MB")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_WriteSpans, duckdb_ckpt1GB, "duckdb", "1GB")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_WriteSpans, duckdb_threads1, "duckdb", "/1")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_WriteSpans, duckdb_ckpt1GB_threads1, "duckdb", "1GB/1")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_WriteSpans, sqlite, "sqlite", "")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_WriteLogs, duckdb, "duckdb", "")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_WriteLogs, duckdb_ckpt16MB, "duckdb", "16MB")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_WriteLogs, duckdb_ckpt1GB, "duckdb", "1GB")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_WriteLogs, duckdb_threads1, "duckdb", "/1")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_WriteLogs, duckdb_ckpt1GB_threads1, "duckdb", "1GB/1")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_WriteLogs, sqlite, "sqlite", "")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_WriteMetrics, duckdb, "duckdb", "")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_WriteMetrics, duckdb_ckpt16MB, "duckdb", "16MB")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_WriteMetrics, duckdb_ckpt1GB, "duckdb", "1GB")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_WriteMetrics, duckdb_threads1, "duckdb", "/1")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_WriteMetrics, duckdb_ckpt1GB_threads1, "duckdb", "1GB/1")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_WriteMetrics, sqlite, "sqlite", "")->Unit(benchmark::kMillisecond)->UseRealTime();

//! One run of a DuckDB-alone append benchmark: a fresh file database, a
//! table of BIGINT columns and VARCHAR ones (`text`), `rows` rows in
//! 16,384-row commits of 2,048-row chunks that fill(chunk, first_row, n)
//! writes, then CHECKPOINT. A failure skips the benchmark.
void AppendToFreshDuckDb(benchmark::State& state, const std::vector<bool>& text, int rows,
                         const std::function<void(duckdb_data_chunk, int64_t, int)>& fill) {
  constexpr int kCommit = 16384, kVector = 2048;
  std::string dir = (std::filesystem::temp_directory_path() / "sightline-duckdb-append-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) {
    state.SkipWithError("mkdtemp failed");
    return;
  }
  duckdb_database db = nullptr;
  duckdb_connection conn = nullptr;
  duckdb_open((dir + "/t.duckdb").c_str(), &db);
  duckdb_connect(db, &conn);
  auto exec = [&](const std::string& sql) {
    duckdb_result r;
    if (duckdb_query(conn, sql.c_str(), &r) != DuckDBSuccess) state.SkipWithError(duckdb_result_error(&r));
    duckdb_destroy_result(&r);
  };
  std::string ddl = "CREATE TABLE t (";
  std::vector<duckdb_logical_type> types;
  for (size_t c = 0; c < text.size(); ++c) {
    ddl += (c == 0 ? "c" : ", c") + std::to_string(c) + (text[c] ? " VARCHAR" : " BIGINT");
    types.push_back(duckdb_create_logical_type(text[c] ? DUCKDB_TYPE_VARCHAR : DUCKDB_TYPE_BIGINT));
  }
  exec(ddl + ")");
  exec("SET checkpoint_threshold = '256MB'");
  duckdb_data_chunk chunk = duckdb_create_data_chunk(types.data(), types.size());
  for (int done = 0; done < rows; done += kCommit) {
    exec("BEGIN");
    duckdb_appender appender = nullptr;
    duckdb_appender_create(conn, nullptr, "t", &appender);
    for (int at = done; at < std::min(rows, done + kCommit); at += kVector) {
      const int n = std::min({kVector, rows - at, done + kCommit - at});
      duckdb_data_chunk_reset(chunk);
      fill(chunk, at, n);
      duckdb_data_chunk_set_size(chunk, n);
      duckdb_append_data_chunk(appender, chunk);
    }
    duckdb_appender_close(appender);
    duckdb_appender_destroy(&appender);
    exec("COMMIT");
  }
  exec("CHECKPOINT");
  duckdb_destroy_data_chunk(&chunk);
  for (duckdb_logical_type& t : types) duckdb_destroy_logical_type(&t);
  duckdb_disconnect(&conn);
  duckdb_close(&db);
  std::filesystem::remove_all(dir);
}

// What one value costs DuckDB (append, WAL at commit, statistics, analysis and
// compression at checkpoint), by kind: a BIGINT time column plus five columns
// of the kind, 500,000 rows in 16,384-row commits, then CHECKPOINT, all timed
// as process CPU (DuckDB's workers included). The schema's choices rest on
// these ratios (docs/STORAGE.md): ids as integers, not hex text; absent text
// as NULL, not ''; context repeated on every row (a ~220-byte resource) stored
// once per key instead.
enum class ValueKind { kInt64, kNull, kEmpty, kHex32, kJson120, kRepeated220 };

void BM_DuckDbValueCost(benchmark::State& state, ValueKind kind) {
  constexpr int kRows = 500000, kColumns = 5;
  std::mt19937_64 rng(7);
  std::vector<std::string> repeated, json;
  for (int i = 0; i < 20; ++i) {
    std::string r(220, 'a');
    for (char& c : r) c = static_cast<char>('a' + rng() % 26);
    repeated.push_back(r);
  }
  for (int i = 0; i < 2000; ++i) {
    json.push_back("{\"http.route\":\"/api/v1/items/" + std::to_string(rng() % 50) + "\",\"user.id\":\"" +
                   std::to_string(rng()) + "\",\"http.method\":\"GET\",\"peer\":\"10.0.0." +
                   std::to_string(rng() % 255) + "\"}");
  }
  std::vector<bool> text(1 + kColumns, kind != ValueKind::kInt64);
  text[0] = false;  // the time column
  char hex[32];
  for (auto _ : state) {
    AppendToFreshDuckDb(state, text, kRows, [&](duckdb_data_chunk chunk, int64_t at, int n) {
      auto* time = static_cast<int64_t*>(duckdb_vector_get_data(duckdb_data_chunk_get_vector(chunk, 0)));
      for (int j = 0; j < n; ++j) time[j] = 1700000000000000000 + (at + j) * 1000ll;
      for (int c = 1; c <= kColumns; ++c) {
        duckdb_vector v = duckdb_data_chunk_get_vector(chunk, c);
        for (int j = 0; j < n; ++j) {
          switch (kind) {
            case ValueKind::kInt64:
              static_cast<int64_t*>(duckdb_vector_get_data(v))[j] = static_cast<int64_t>(rng());
              break;
            case ValueKind::kNull:
              duckdb_vector_ensure_validity_writable(v);
              duckdb_validity_set_row_invalid(duckdb_vector_get_validity(v), j);
              break;
            case ValueKind::kEmpty: duckdb_vector_assign_string_element_len(v, j, "", 0); break;
            case ValueKind::kHex32:
              for (char& h : hex) h = "0123456789abcdef"[rng() & 15];
              duckdb_vector_assign_string_element_len(v, j, hex, sizeof(hex));
              break;
            case ValueKind::kJson120: {
              const std::string& s = json[rng() % json.size()];
              duckdb_vector_assign_string_element_len(v, j, s.data(), s.size());
              break;
            }
            case ValueKind::kRepeated220: {
              const std::string& s = repeated[rng() % repeated.size()];
              duckdb_vector_assign_string_element_len(v, j, s.data(), s.size());
              break;
            }
          }
        }
      }
    });
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kRows);
}
BENCHMARK_CAPTURE(BM_DuckDbValueCost, int64, ValueKind::kInt64)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
BENCHMARK_CAPTURE(BM_DuckDbValueCost, null_text, ValueKind::kNull)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();
BENCHMARK_CAPTURE(BM_DuckDbValueCost, empty_text, ValueKind::kEmpty)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();
BENCHMARK_CAPTURE(BM_DuckDbValueCost, hex32_id, ValueKind::kHex32)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();
BENCHMARK_CAPTURE(BM_DuckDbValueCost, json_120B, ValueKind::kJson120)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();
BENCHMARK_CAPTURE(BM_DuckDbValueCost, repeated_220B, ValueKind::kRepeated220)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

// The logs table's shape: its 15 columns before schema 4 (11 BIGINT, 4 text
// with values like the generator's), then `null_columns` VARCHAR columns
// that are NULL on every row, as schema 4's event_name and exception
// columns are for nearly every record. 655,360 rows in 16,384-row commits,
// then CHECKPOINT, as process CPU. What those columns cost DuckDB even when
// empty: the WAL, the row-group append and the checkpoint each still handle
// a string vector per column (docs/BENCHMARKS.md, "What an empty column costs").
void BM_DuckDbLogShape(benchmark::State& state) {
  constexpr int kRows = 40 * 16384;
  constexpr std::string_view kKinds = "IIIITTIIIIITTII";  // I BIGINT, T VARCHAR
  const int null_columns = static_cast<int>(state.range(0));
  std::vector<bool> text;
  for (char k : kKinds) text.push_back(k == 'T');
  text.insert(text.end(), null_columns, true);
  std::mt19937_64 rng(11);
  std::vector<std::string> bodies;
  for (int i = 0; i < 5000; ++i) {
    bodies.push_back("request " + std::to_string(rng()) + " served for user " + std::to_string(rng() % 1000) + " in " +
                     std::to_string(rng() % 500) + "ms host=web-" + std::to_string(rng() % 20));
  }
  const std::string severity = "INFO", attributes = "{\"http.route\":\"/api/v1/items\"}";
  std::vector<std::string> services;
  for (int i = 0; i < 10; ++i) services.push_back("service-" + std::to_string(i));
  for (auto _ : state) {
    AppendToFreshDuckDb(state, text, kRows, [&](duckdb_data_chunk chunk, int64_t at, int n) {
      for (size_t c = 0; c < text.size(); ++c) {
        duckdb_vector v = duckdb_data_chunk_get_vector(chunk, c);
        if (c >= kKinds.size()) {
          duckdb_vector_ensure_validity_writable(v);
          uint64_t* validity = duckdb_vector_get_validity(v);
          for (int j = 0; j < (n + 63) / 64; ++j) validity[j] = 0;
          continue;
        }
        for (int j = 0; j < n; ++j) {
          if (!text[c]) {
            // time_ns ascending; the trace id halves random; the rest small.
            static_cast<int64_t*>(duckdb_vector_get_data(v))[j] =
                c == 1 ? 1700000000000000000 + (at + j) * 1000
                       : static_cast<int64_t>(c == 7 || c == 8 ? rng() : rng() % 20);
            continue;
          }
          const std::string& s = c == 4    ? severity
                                 : c == 5  ? bodies[rng() % bodies.size()]
                                 : c == 11 ? services[rng() % services.size()]
                                           : attributes;
          duckdb_vector_assign_string_element_len(v, j, s.data(), s.size());
        }
      }
    });
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kRows);
}
BENCHMARK(BM_DuckDbLogShape)
    ->ArgName("null_columns")
    ->Arg(0)
    ->Arg(1)
    ->Arg(4)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

enum class ReadApi { kChunks, kPerValue };

void BM_DuckDbRead(benchmark::State& state, ReadApi api) {
  constexpr int64_t kRows = 200000;
  duckdb_database db = nullptr;
  duckdb_connection conn = nullptr;
  duckdb_open(nullptr, &db);
  duckdb_connect(db, &conn);
  duckdb_result setup;
  if (duckdb_query(
          conn,
          "CREATE TABLE t AS SELECT i AS id, i * 0.5 AS value, "
          "CASE WHEN i % 10 = 0 THEN NULL ELSE '{\"http.route\":\"/api/items/' || (i % 50) || '\"}' END AS attrs "
          "FROM range(200000) r(i)",
          &setup) != DuckDBSuccess) {
    state.SkipWithError(duckdb_result_error(&setup));
  }
  duckdb_destroy_result(&setup);
  const char* sql = "SELECT id, value, attrs FROM t";
  std::unique_ptr<ReadConnection> reader;
  if (api == ReadApi::kChunks) {
    duckdb_connection read_conn = nullptr;
    duckdb_connect(db, &read_conn);
    reader = NewDuckDbReader(read_conn);
  }
  for (auto _ : state) {
    int64_t ids = 0;
    double values = 0;
    size_t bytes = 0;
    if (api == ReadApi::kChunks) {
      Status s = reader->Query(sql, {}, [&](const RowView& r) {
        ids += r.GetInt(0);
        values += r.GetDouble(1);
        if (!r.IsNull(2)) bytes += r.GetString(2).size();
      });
      if (!s.ok()) state.SkipWithError(s.message().c_str());
    } else {
      duckdb_result r;
      duckdb_query(conn, sql, &r);
      for (idx_t row = 0, n = duckdb_row_count(&r); row < n; ++row) {
        ids += duckdb_value_int64(&r, 0, row);
        values += duckdb_value_double(&r, 1, row);
        if (!duckdb_value_is_null(&r, 2, row)) {
          char* text = duckdb_value_varchar(&r, 2, row);
          bytes += std::string(text).size();
          duckdb_free(text);
        }
      }
      duckdb_destroy_result(&r);
    }
    benchmark::DoNotOptimize(ids);
    benchmark::DoNotOptimize(values);
    benchmark::DoNotOptimize(bytes);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kRows);
  reader.reset();
  duckdb_disconnect(&conn);
  duckdb_close(&db);
}
BENCHMARK_CAPTURE(BM_DuckDbRead, chunks, ReadApi::kChunks)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DuckDbRead, per_value, ReadApi::kPerValue)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sightline

BENCHMARK_MAIN();
