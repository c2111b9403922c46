#include "bench/oltp.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/bench_common.h"
#include "common/json_writer.h"
#include "common/sqlite_pragmas.h"
#include "common/status.h"

namespace sightline::bench {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kDatabaseFile = "oltp.sqlite";
// A run with --ops bounds its phases by count; the clock still stops a phase
// that a slow disk would otherwise stretch for hours.
constexpr double kHardPhaseCapSeconds = 3600;
constexpr int64_t kTimeBaseMs = 1'767'225'600'000;        // 2026-01-01, the start of created_at
constexpr int64_t kTimeSpanMs = 30LL * 24 * 3600 * 1000;  // the bulk insert's rows span 30 days
constexpr const char* kStatuses[] = {"new", "paid", "shipped", "delivered", "cancelled"};

// ---- SQLite handles ---------------------------------------------------------------

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;

Status SqliteError(sqlite3* db, const std::string& what) {
  return Status::IoError("sqlite: " + what + ": " + (db != nullptr ? sqlite3_errmsg(db) : "out of memory"));
}

Status Exec(sqlite3* db, const char* sql) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK) return Status::Ok();
  return SqliteError(db, sql);
}

//! A prepared statement that resets itself before each use.
class Stmt {
 public:
  ~Stmt() { sqlite3_finalize(stmt_); }
  Status Prepare(sqlite3* db, const char* sql) {
    db_ = db;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) == SQLITE_OK) return Status::Ok();
    return SqliteError(db, std::string("prepare ") + sql);
  }
  sqlite3_stmt* Reset() {
    sqlite3_reset(stmt_);
    return stmt_;
  }
  //! Steps to the end, touching every column of every row as an application
  //! would; returns the number of rows.
  Result<int> Drain() {
    int rows = 0;
    for (;;) {  // bounded by the statement's LIMIT or primary-key match
      int rc = sqlite3_step(stmt_);
      if (rc == SQLITE_DONE) return rows;
      if (rc != SQLITE_ROW) return SqliteError(db_, sqlite3_sql(stmt_));
      for (int c = 0, n = sqlite3_column_count(stmt_); c < n; ++c) (void)sqlite3_column_bytes(stmt_, c);
      ++rows;
    }
  }

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

//! How the connection's cache is set up for a pass.
enum class CacheMode { kProduction, kSmall };

Result<Db> OpenDb(const std::string& path, CacheMode mode, uint64_t cache_mb) {
  sqlite3* raw = nullptr;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) return SqliteError(raw, "open " + path);
  SL_RETURN_IF_ERROR(Exec(db.get(), kSqliteProductionPragmas));
  SL_RETURN_IF_ERROR(Exec(db.get(), "PRAGMA busy_timeout=30000;"));
  if (mode == CacheMode::kSmall) {
    std::string sql = "PRAGMA cache_size=-" + std::to_string(cache_mb * 1024) + "; PRAGMA mmap_size=0;";
    SL_RETURN_IF_ERROR(Exec(db.get(), sql.c_str()));
  }
  return db;
}

// ---- the rows -----------------------------------------------------------------------

//! Random column values of an orders-like row (~150 bytes on disk).
class RowMaker {
 public:
  //! `rows` sizes the user population (rows / 20) and the time slot of a row.
  RowMaker(uint64_t seed, uint64_t rows)
      : rng_(seed),
        users_(std::max<uint64_t>(rows / 20, 1)),
        ms_per_row_(std::max<int64_t>(kTimeSpanMs / static_cast<int64_t>(std::max<uint64_t>(rows, 1)), 1)) {
    static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    text_.resize(256);
    for (char& c : text_) c = kAlphabet[rng_() % (sizeof(kAlphabet) - 1)];
  }
  //! Binds user_id, created_at, amount, status, note of row `id` to parameters first..first+4.
  void Bind(sqlite3_stmt* s, int first, int64_t id) {
    sqlite3_bind_int64(s, first, static_cast<int64_t>(rng_() % users_) + 1);
    sqlite3_bind_int64(s, first + 1, CreatedAt(id));
    sqlite3_bind_double(s, first + 2, static_cast<double>(rng_() % 100'000) / 100.0);
    BindStatus(s, first + 3);
    size_t len = 90 + rng_() % 21, at = rng_() % (text_.size() - len);
    sqlite3_bind_text(s, first + 4, text_.data() + at, static_cast<int>(len), SQLITE_STATIC);
  }
  void BindStatus(sqlite3_stmt* s, int i) {
    sqlite3_bind_text(s, i, kStatuses[rng_() % std::size(kStatuses)], -1, SQLITE_STATIC);
  }
  //! Rows arrive in time order, as an application inserts them, so created_at
  //! grows with id (jittered within the row's slot) and a range on the index
  //! reads neighbouring rows of the table, not 50 random pages.
  int64_t CreatedAt(int64_t id) {
    return kTimeBaseMs + id * ms_per_row_ + static_cast<int64_t>(rng_() % static_cast<uint64_t>(ms_per_row_));
  }
  //! A random range start among the first max_id rows' times.
  int64_t RangeStart(int64_t max_id) { return CreatedAt(Id(max_id)); }
  int64_t Id(int64_t max_id) { return static_cast<int64_t>(rng_() % static_cast<uint64_t>(max_id)) + 1; }
  double Amount() { return static_cast<double>(rng_() % 100'000) / 100.0; }
  uint64_t Percent() { return rng_() % 100; }

 private:
  std::mt19937_64 rng_;
  uint64_t users_;
  int64_t ms_per_row_;
  std::string text_;
};

// ---- measurement --------------------------------------------------------------------

struct PhaseResult {
  PhaseResult(std::string p, std::string c) : phase(std::move(p)), cache(std::move(c)) {}
  std::string phase, cache;
  uint64_t ops = 0;
  double seconds = 0;
  double p50 = 0, p95 = 0, p99 = 0, p999 = 0;  // microseconds
  uint64_t writer_ops = 0;                     // concurrent_readers only
  double writer_seconds = 0;
};

//! Per-op latencies of one thread, in microseconds.
struct Samples {
  std::vector<float> us;
  void Add(Clock::time_point t0, Clock::time_point t1) {
    us.push_back(std::chrono::duration<float, std::micro>(t1 - t0).count());
  }
};

//! Nearest-rank percentiles of the merged samples.
void FillPercentiles(std::vector<float> us, PhaseResult* r) {
  std::sort(us.begin(), us.end());
  r->p50 = NearestRankSorted(us, 50);
  r->p95 = NearestRankSorted(us, 95);
  r->p99 = NearestRankSorted(us, 99);
  r->p999 = NearestRankSorted(us, 99.9);
}

//! When a phase stops: after `ops` operations, else after `seconds`.
struct Bound {
  uint64_t ops;
  Clock::time_point deadline;
  bool Done(uint64_t n, Clock::time_point now) const { return (ops > 0 && n >= ops) || now >= deadline; }
};

Bound MakeBound(const OltpBenchOptions& o) {
  double s = o.ops > 0 ? kHardPhaseCapSeconds : o.phase_seconds;
  return {o.ops, Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s))};
}

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// ---- the file and the OS page cache ---------------------------------------------------

uint64_t FileBytes(const std::string& path) {
  std::error_code ec;
  uint64_t n = std::filesystem::file_size(path, ec);
  return ec ? 0 : n;
}

//! Reads the whole file once so the OS page cache holds it: the "warm pass".
void WarmFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  std::vector<char> buf(1 << 20);
  uint64_t size = FileBytes(path), done = 0;
  while (done < size) {  // bounded by the size read at the start
    ssize_t n = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(done));
    if (n <= 0) break;
    done += static_cast<uint64_t>(n);
  }
  ::close(fd);
}

//! Writes the WAL back into the database, then asks the kernel to forget the
//! file's pages (clean pages only, hence the checkpoint and fdatasync first),
//! so the next reads go to the device — "larger than the page cache".
Status DropCaches(sqlite3* db, const std::string& path) {
  SL_RETURN_IF_ERROR(Exec(db, "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA shrink_memory;"));
  for (const std::string& f : {path, path + "-wal"}) {
    int fd = ::open(f.c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::fdatasync(fd);
    int rc = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    if (rc != 0) return Status::IoError("posix_fadvise(DONTNEED) on " + f + " failed");
  }
  return Status::Ok();
}

// ---- the phases -------------------------------------------------------------------------

constexpr const char* kSchemaSql =
    "CREATE TABLE IF NOT EXISTS orders(id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL,"
    " created_at INTEGER NOT NULL, amount REAL NOT NULL, status TEXT NOT NULL, note TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS orders_created_at ON orders(created_at);";
constexpr const char* kPkSelectSql = "SELECT user_id, created_at, amount, status, note FROM orders WHERE id = ?1";
constexpr const char* kRangeSql =
    "SELECT id, user_id, created_at, amount, status FROM orders WHERE created_at >= ?1 ORDER BY created_at LIMIT ?2";
constexpr const char* kUpdateSql = "UPDATE orders SET amount = ?1, status = ?2 WHERE id = ?3";
constexpr const char* kInsertSql =
    "INSERT INTO orders(id, user_id, created_at, amount, status, note) VALUES(?1, ?2, ?3, ?4, ?5, ?6)";

//! The statements one connection runs, and the id range it picks rows from.
class Session {
 public:
  Session(sqlite3* db, uint64_t seed, uint64_t rows) : db_(db), rows_(seed, rows) {}

  Status Prepare() {
    SL_RETURN_IF_ERROR(pk_.Prepare(db_, kPkSelectSql));
    SL_RETURN_IF_ERROR(range_.Prepare(db_, kRangeSql));
    SL_RETURN_IF_ERROR(update_.Prepare(db_, kUpdateSql));
    return insert_.Prepare(db_, kInsertSql);
  }

  Status PkSelect(int64_t max_id) {
    sqlite3_bind_int64(pk_.Reset(), 1, rows_.Id(max_id));
    return pk_.Drain().status();
  }
  Status Range(int64_t max_id, int limit) {
    sqlite3_stmt* s = range_.Reset();
    sqlite3_bind_int64(s, 1, rows_.RangeStart(max_id));
    sqlite3_bind_int(s, 2, limit);
    return range_.Drain().status();
  }
  //! One row in its own (autocommit) transaction, as an application writes.
  Status Update(int64_t max_id) {
    sqlite3_stmt* s = update_.Reset();
    sqlite3_bind_double(s, 1, rows_.Amount());
    rows_.BindStatus(s, 2);
    sqlite3_bind_int64(s, 3, rows_.Id(max_id));
    return update_.Drain().status();
  }
  Status Insert(int64_t id) {
    sqlite3_stmt* s = insert_.Reset();
    sqlite3_bind_int64(s, 1, id);
    rows_.Bind(s, 2, id);
    return insert_.Drain().status();
  }
  uint64_t Percent() { return rows_.Percent(); }

 private:
  sqlite3* db_;
  RowMaker rows_;
  Stmt pk_, range_, update_, insert_;
};

//! Batched transactions of --insert-batch rows; each row's latency is its own
//! insert, and the row that ends a batch also carries the COMMIT.
Result<PhaseResult> BulkInsert(sqlite3* db, const OltpBenchOptions& o) {
  Session session(db, o.seed, o.rows);
  SL_RETURN_IF_ERROR(session.Prepare());
  PhaseResult r{"bulk_insert", "-"};
  Samples samples;
  samples.us.reserve(o.rows);
  Clock::time_point start = Clock::now();
  for (uint64_t id = 1; id <= o.rows;) {
    SL_RETURN_IF_ERROR(Exec(db, "BEGIN"));
    uint64_t end = std::min(o.rows, id + o.insert_batch - 1);
    for (; id <= end; ++id) {
      Clock::time_point t0 = Clock::now();
      SL_RETURN_IF_ERROR(session.Insert(static_cast<int64_t>(id)));
      if (id == end) SL_RETURN_IF_ERROR(Exec(db, "COMMIT"));
      samples.Add(t0, Clock::now());
    }
  }
  r.seconds = SecondsSince(start);
  r.ops = o.rows;
  FillPercentiles(std::move(samples.us), &r);
  return r;
}

enum class Op { kPkSelect, kRange, kUpdate, kMixed };

//! One thread, one connection, one kind of operation until the bound.
Result<PhaseResult> RunSingle(sqlite3* db, const OltpBenchOptions& o, Op op, const char* name, const char* cache,
                              int64_t* max_id) {
  Session session(db, o.seed + static_cast<uint64_t>(op) * 7919, o.rows);
  SL_RETURN_IF_ERROR(session.Prepare());
  PhaseResult r{name, cache};
  Samples samples;
  Bound bound = MakeBound(o);
  Clock::time_point start = Clock::now(), now = start;
  uint64_t n = 0;
  while (!bound.Done(n, now)) {
    Status st;
    switch (op) {
      case Op::kPkSelect: st = session.PkSelect(*max_id); break;
      case Op::kRange: st = session.Range(*max_id, o.range_limit); break;
      case Op::kUpdate: st = session.Update(*max_id); break;
      case Op::kMixed: {
        uint64_t p = session.Percent();
        if (p < 70) st = session.PkSelect(*max_id);
        else if (p < 95) st = session.Update(*max_id);
        else if ((st = session.Insert(*max_id + 1)).ok()) ++*max_id;
        break;
      }
    }
    SL_RETURN_IF_ERROR(st);
    Clock::time_point t1 = Clock::now();
    samples.Add(now, t1);
    now = t1;
    ++n;
  }
  r.seconds = SecondsSince(start);
  r.ops = n;
  FillPercentiles(std::move(samples.us), &r);
  return r;
}

//! --readers threads doing primary-key selects, each on its own connection,
//! while one writer thread updates single rows on another. Reported ops and
//! latencies are the readers'; the writer's rate rides along.
Result<PhaseResult> RunConcurrent(const std::string& path, const OltpBenchOptions& o, CacheMode mode, const char* cache,
                                  int64_t max_id) {
  PhaseResult r{"concurrent_readers", cache};
  std::atomic<uint64_t> reads{0};
  std::atomic<bool> stop{false};
  std::vector<Samples> samples(o.readers);
  std::vector<Status> errors(o.readers + 1);
  Bound bound = MakeBound(o);
  auto reader = [&](int i) {
    auto db = OpenDb(path, mode, o.cache_mb);
    if (!db.ok()) {
      errors[i] = db.status();
      return;
    }
    Session session(db->get(), o.seed + 101 + static_cast<uint64_t>(i), o.rows);
    if (errors[i] = session.Prepare(); !errors[i].ok()) return;
    Clock::time_point now = Clock::now();
    while (!stop.load(std::memory_order_relaxed) && !bound.Done(reads.fetch_add(1), now)) {
      if (errors[i] = session.PkSelect(max_id); !errors[i].ok()) break;
      Clock::time_point t1 = Clock::now();
      samples[i].Add(now, t1);
      now = t1;
    }
  };
  uint64_t writes = 0;
  double write_seconds = 0;
  auto writer = [&] {
    Status& err = errors[o.readers];
    auto db = OpenDb(path, mode, o.cache_mb);
    if (!db.ok()) {
      err = db.status();
      return;
    }
    Session session(db->get(), o.seed + 97, o.rows);
    if (err = session.Prepare(); !err.ok()) return;
    Clock::time_point start = Clock::now();
    while (!stop.load(std::memory_order_relaxed) && !bound.Done(0, Clock::now())) {
      if (err = session.Update(max_id); !err.ok()) break;
      ++writes;
    }
    write_seconds = SecondsSince(start);
  };
  Clock::time_point start = Clock::now();
  std::thread w(writer);
  std::vector<std::thread> threads;
  for (int i = 0; i < o.readers; ++i) threads.emplace_back(reader, i);
  for (auto& t : threads) t.join();
  r.seconds = SecondsSince(start);
  stop = true;
  w.join();
  for (const Status& e : errors) SL_RETURN_IF_ERROR(e);
  std::vector<float> all;
  for (auto& s : samples) all.insert(all.end(), s.us.begin(), s.us.end());
  r.ops = all.size();
  r.writer_ops = writes;
  r.writer_seconds = write_seconds;
  FillPercentiles(std::move(all), &r);
  return r;
}

//! The read/update phases of one pass on a connection set up for it.
Status RunPass(const std::string& path, const OltpBenchOptions& o, CacheMode mode, std::vector<PhaseResult>* out) {
  const char* cache = mode == CacheMode::kProduction ? "cached" : "uncached";
  auto db = OpenDb(path, mode, o.cache_mb);
  if (!db.ok()) return db.status();
  int64_t max_id = 0;
  {
    Stmt s;
    SL_RETURN_IF_ERROR(s.Prepare(db->get(), "SELECT max(id) FROM orders"));
    sqlite3_stmt* q = s.Reset();
    if (sqlite3_step(q) == SQLITE_ROW) max_id = sqlite3_column_int64(q, 0);
  }
  if (max_id <= 0) return Status::Internal("the orders table is empty");
  struct Single {
    Op op;
    const char* name;
  };
  for (Single p : {Single{Op::kPkSelect, "pk_select"}, Single{Op::kRange, "range_scan"}, Single{Op::kUpdate, "update"},
                   Single{Op::kMixed, "mixed"}}) {
    if (mode == CacheMode::kSmall) SL_RETURN_IF_ERROR(DropCaches(db->get(), path));
    else WarmFile(path);
    auto r = RunSingle(db->get(), o, p.op, p.name, cache, &max_id);
    if (!r.ok()) return r.status();
    out->push_back(*r);
    std::fprintf(stderr, "  %-18s %-8s %10s ops/s\n", r->phase.c_str(), cache, Human(r->ops / r->seconds).c_str());
  }
  if (mode == CacheMode::kSmall) SL_RETURN_IF_ERROR(DropCaches(db->get(), path));
  else WarmFile(path);
  auto r = RunConcurrent(path, o, mode, cache, max_id);
  if (!r.ok()) return r.status();
  out->push_back(*r);
  return Status::Ok();
}

// ---- output --------------------------------------------------------------------------

double OpsPerS(const PhaseResult& r) { return r.seconds > 0 ? static_cast<double>(r.ops) / r.seconds : 0; }

void PrintTable(const std::vector<PhaseResult>& phases) {
  std::printf("\n%-18s %-8s %10s %10s %9s %9s %9s %9s %11s %9s\n", "phase", "cache", "ops", "ops/s", "p50 us", "p95 us",
              "p99 us", "p999 us", "published/s", "ours/pub");
  for (const PhaseResult& r : phases) {
    std::optional<double> pub = PublishedOltpOpsPerS(r.phase, r.cache);
    char pub_s[32] = "-", ratio[16] = "-";
    if (pub) {
      std::snprintf(pub_s, sizeof(pub_s), "%s", Human(*pub).c_str());
      std::snprintf(ratio, sizeof(ratio), "%.2f", OpsPerS(r) / *pub);
    }
    std::printf("%-18s %-8s %10llu %10s %9.1f %9.1f %9.1f %9.1f %11s %9s\n", r.phase.c_str(), r.cache.c_str(),
                static_cast<unsigned long long>(r.ops), Human(OpsPerS(r)).c_str(), r.p50, r.p95, r.p99, r.p999, pub_s,
                ratio);
    if (r.phase == "concurrent_readers") {
      std::printf("%-18s %-8s %10llu %10s   (the writer beside the readers)\n", "  writer updates", r.cache.c_str(),
                  static_cast<unsigned long long>(r.writer_ops),
                  Human(r.writer_seconds > 0 ? static_cast<double>(r.writer_ops) / r.writer_seconds : 0).c_str());
    }
  }
  std::printf("published: DESIGN.md's SQLite reference (2 vCPU, 3.7 GB); its cached PK select had p99 715 us.\n");
}

std::string ResultJson(const OltpBenchOptions& o, const Machine& m, const std::string& started_at, uint64_t db_bytes,
                       const std::vector<PhaseResult>& phases) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("benchmark");
  w.String("oltp");
  w.Key("version");
  w.Int(1);
  w.Key("config");
  w.BeginObject();
  w.Key("rows");
  w.Uint(o.rows);
  w.Key("insert_batch");
  w.Uint(o.insert_batch);
  w.Key("phase_seconds");
  w.Double(o.ops > 0 ? 0 : o.phase_seconds);
  w.Key("ops");
  w.Uint(o.ops);
  w.Key("readers");
  w.Int(o.readers);
  w.Key("cache_mb");
  w.Uint(o.cache_mb);
  w.Key("range_limit");
  w.Int(o.range_limit);
  w.Key("seed");
  w.Uint(o.seed);
  w.Key("pragmas");
  w.String(kSqliteProductionPragmas);
  w.Key("sqlite_version");
  w.String(sqlite3_libversion());
  w.EndObject();
  WriteMachineJson(&w, m);
  w.Key("started_at");
  w.String(started_at);
  w.Key("database_bytes");
  w.Uint(db_bytes);
  w.Key("phases");
  w.BeginArray();
  for (const PhaseResult& r : phases) {
    w.BeginObject();
    w.Key("phase");
    w.String(r.phase);
    w.Key("cache");
    w.String(r.cache);
    w.Key("ops");
    w.Uint(r.ops);
    w.Key("seconds");
    w.Double(r.seconds);
    w.Key("ops_per_s");
    w.Double(OpsPerS(r));
    w.Key("latency_us");
    w.BeginObject();
    w.Key("p50");
    w.Double(r.p50);
    w.Key("p95");
    w.Double(r.p95);
    w.Key("p99");
    w.Double(r.p99);
    w.Key("p999");
    w.Double(r.p999);
    w.EndObject();
    if (r.phase == "concurrent_readers") {
      w.Key("writer_ops");
      w.Uint(r.writer_ops);
      w.Key("writer_ops_per_s");
      w.Double(r.writer_seconds > 0 ? static_cast<double>(r.writer_ops) / r.writer_seconds : 0);
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  out.push_back('\n');
  return out;
}

//! Every phase in order; the database file is left behind for the caller.
Status RunPhases(const std::string& path, const OltpBenchOptions& o, uint64_t* db_bytes,
                 std::vector<PhaseResult>* phases) {
  {
    auto db = OpenDb(path, CacheMode::kProduction, o.cache_mb);
    if (!db.ok()) return db.status();
    SL_RETURN_IF_ERROR(Exec(db->get(), kSchemaSql));
    std::fprintf(stderr, "bulk insert of %llu rows ...\n", static_cast<unsigned long long>(o.rows));
    auto r = BulkInsert(db->get(), o);
    if (!r.ok()) return r.status();
    phases->push_back(*r);
    SL_RETURN_IF_ERROR(Exec(db->get(), "PRAGMA wal_checkpoint(TRUNCATE);"));
    *db_bytes = FileBytes(path);
  }
  SL_RETURN_IF_ERROR(RunPass(path, o, CacheMode::kProduction, phases));
  return RunPass(path, o, CacheMode::kSmall, phases);
}

}  // namespace

std::optional<double> PublishedOltpOpsPerS(std::string_view phase, std::string_view cache) {
  struct Figure {
    std::string_view phase, cache;
    double ops_per_s;
  };
  // DESIGN.md, "A second reference": its unqualified figures are disk-bound.
  static constexpr Figure kFigures[] = {
      {"bulk_insert", "-", 61'300},      {"pk_select", "uncached", 3'609}, {"pk_select", "cached", 155'800},
      {"range_scan", "uncached", 3'477}, {"update", "uncached", 2'986},    {"mixed", "uncached", 3'915},
      {"mixed", "cached", 53'200},
  };
  for (const Figure& f : kFigures) {
    if (f.phase == phase && f.cache == cache) return f.ops_per_s;
  }
  return std::nullopt;
}

int RunOltpBench(const OltpBenchOptions& o) {
  std::string started_at = UtcNowIso8601();
  std::string dir = o.data_dir;
  bool temp = dir.empty();
  if (temp) {
    auto made = MakeTempDir(o.work_dir.empty() ? DefaultWorkParent() : o.work_dir);
    if (!made) {
      std::fprintf(stderr, "bench oltp: cannot create a temp dir\n");
      return 1;
    }
    dir = *made;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string path = dir + "/" + kDatabaseFile;
  auto remove_db = [&] {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix, ec);
  };
  remove_db();  // every run starts from an empty file

  uint64_t db_bytes = 0;
  std::vector<PhaseResult> phases;
  Status st = RunPhases(path, o, &db_bytes, &phases);
  if (!o.keep_data) {
    if (temp) std::filesystem::remove_all(dir, ec);
    else remove_db();
  } else {
    std::fprintf(stderr, "kept %s\n", path.c_str());
  }
  if (!st.ok()) {
    std::fprintf(stderr, "bench oltp: %s\n", st.ToString().c_str());
    return 1;
  }
  PrintTable(phases);
  std::printf("database: %.1f MiB after the bulk insert\n", static_cast<double>(db_bytes) / (1 << 20));
  if (!o.json_out.empty()) {
    std::ofstream f(o.json_out, std::ios::binary | std::ios::trunc);
    f << ResultJson(o, DescribeMachine(), started_at, db_bytes, phases);
    if (!f.good()) {
      std::fprintf(stderr, "bench oltp: cannot write %s\n", o.json_out.c_str());
      return 1;
    }
  }
  return 0;
}

void AddOltpCommand(CLI::App* bench) {
  auto o = std::make_shared<OltpBenchOptions>();
  auto* c = bench->add_subcommand(
      "oltp",
      "SQLite alone with the production pragmas: bulk insert, point/range reads, updates, mixed, concurrent readers");
  c->add_option("--rows", o->rows, "Rows of the bulk insert")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->capture_default_str();
  c->add_option("--insert-batch", o->insert_batch, "Rows per bulk-insert transaction")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100'000'000}))
      ->capture_default_str();
  c->add_option("--phase-seconds", o->phase_seconds, "Length of each read/update phase")
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();
  c->add_option("--ops", o->ops, "Operations per read/update phase instead of --phase-seconds");
  c->add_option("--readers", o->readers, "Reader threads beside the one writer in concurrent_readers")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  c->add_option("--cache-mb", o->cache_mb, "SQLite page cache (MiB) of the uncached pass, which also turns mmap off")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20))
      ->capture_default_str();
  c->add_option("--range-limit", o->range_limit, "Rows per indexed range scan")
      ->check(CLI::Range(1, 100'000))
      ->capture_default_str();
  c->add_option("--seed", o->seed, "Random seed of rows and keys")->capture_default_str();
  c->add_option("--data", o->data_dir, "Directory for oltp.sqlite (default: a temp dir under --work-dir)");
  c->add_option("--work-dir", o->work_dir, "Parent of the temp dir (default $TMPDIR or /tmp)");
  c->add_flag("--keep-data", o->keep_data, "Keep the database file");
  c->add_option("--json-out", o->json_out, "Write machine-readable results here");
  c->callback([o] {
    int code = RunOltpBench(*o);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace sightline::bench
