#include "storage/clickhouse/clickhouse_store.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "storage/clickhouse/clickhouse_reader.h"
#include "storage/clickhouse/clickhouse_schema.h"
#include "storage/clickhouse/formats.h"
#include "storage/clickhouse/http_client.h"
#include "storage/clickhouse/transport.h"
#include "storage/schema.h"
#include "storage/sql/retention_sql.h"

namespace sightline {

namespace clickhouse {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

//! The low bits of a log record's seq hold the writing store's tag, so
//! stores writing at once (several Sightline nodes) never number two
//! records alike; the high bits are the store's counter.
constexpr int kSeqTagBits = 16;
constexpr uint64_t kSeqTags = uint64_t{1} << kSeqTagBits;
uint64_t SeqOf(uint64_t counter, uint64_t tag) { return counter << kSeqTagBits | tag; }

//! Appends the value of schema column `c` at row `r` in its ClickHouse type
//! (TypeOf): absent ids are 0, absent text '', a NaN stays NaN.
void EncodeValue(const schema::Column& c, size_t r, RowBinaryWriter* w) {
  using schema::SourceKind;
  switch (c.kind) {
    case SourceKind::kConstant: w->Int64(c.constant); break;
    case SourceKind::kInt64: w->Int64(static_cast<const int64_t*>(c.a)[r]); break;
    case SourceKind::kInt32: w->Int32(static_cast<const int32_t*>(c.a)[r]); break;
    case SourceKind::kUint32: w->UInt32(static_cast<const uint32_t*>(c.a)[r]); break;
    case SourceKind::kUint8: w->UInt8(static_cast<const uint8_t*>(c.a)[r]); break;
    case SourceKind::kUint64Clamped: w->UInt64(static_cast<const uint64_t*>(c.a)[r]); break;
    case SourceKind::kInt64Diff:
      w->Int64(static_cast<int64_t>(static_cast<uint64_t>(static_cast<const int64_t*>(c.a)[r]) -
                                    static_cast<uint64_t>(static_cast<const int64_t*>(c.b)[r])));
      break;
    // ClickHouse keeps an int point's value converted beside int_value: its
    // reader aggregates `value` alone, and its codecs do not pay for NULLs.
    case SourceKind::kDoubleNanNull:
    case SourceKind::kDoubleIfNotFlag: w->Float64(static_cast<const double*>(c.a)[r]); break;
    case SourceKind::kInt64IfFlag:
      w->Int64(static_cast<const uint8_t*>(c.b)[r] != 0 ? static_cast<const int64_t*>(c.a)[r] : 0);
      break;
    case SourceKind::kId: w->UInt64(static_cast<const uint64_t*>(c.a)[r]); break;
    case SourceKind::kText:
    case SourceKind::kTextEmptyNull: w->String(static_cast<const StringColumn*>(c.a)->Get(r)); break;
    case SourceKind::kInt64Indexed: w->Int64(schema::IndexedIntAt(c, r)); break;
    case SourceKind::kTextOrElse: w->String(schema::DerivedText(c, r)); break;
    case SourceKind::kIsEntry:
    case SourceKind::kAnyText: w->UInt8(static_cast<uint8_t>(schema::DerivedInt(c, r))); break;
  }
}

//! The column `name` of a table's columns.
const schema::Column* ColumnNamed(std::span<const schema::Column> columns, std::string_view name) {
  for (const schema::Column& c : columns) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

//! The text column `name` of a table's columns.
const StringColumn* TextColumn(std::span<const schema::Column> columns, std::string_view name) {
  for (const schema::Column& c : columns) {
    if (name == c.name) return static_cast<const StringColumn*>(c.a);
  }
  return nullptr;
}

//! The attribute array columns (kAttributeArrayColumns) of one row.
void EncodeAttributeArrays(const AttributeArrays& a, RowBinaryWriter* rows) {
  rows->StringArray(a.keys);
  rows->StringArray(a.values);
  rows->Float64Array(a.numbers);
  rows->StringArray(a.other);
}

class ClickHouseStore;

//! One signal's writer: its own keep-alive connection. Not thread-safe.
class ClickHouseSink final : public OneSignalSink<ClickHouseSink> {
 public:
  ClickHouseSink(ClickHouseStore* store, Signal signal, Endpoint endpoint);
  ~ClickHouseSink() override;

  //! One INSERT per table of the signal (keyed tables first, each only with
  //! keys not stored yet, then the main table), in RowBinary, gzip; OK only
  //! after ClickHouse answered 200 to every one.
  template <typename Batch>
  Status Write(const std::vector<const Batch*>& batches);

 private:
  Status Insert(const char* table, std::string rows);

  ClickHouseStore* store_;
  std::unique_ptr<Transport> conn_;
  std::string token_prefix_;  // insert_deduplication_token = prefix + write number
  uint64_t writes_ = 0;
  AttributeArrays attrs_;                // reused per row
  std::vector<double> counts_, bounds_;  // reused histogram arrays
};

//! Lifecycle: Open() connects, detects the version, creates the database and
//! tables and loads the known keys; sinks, readers and maintenance run
//! concurrently (each on its own connection); Close() once sinks are gone.
class ClickHouseStore final : public TelemetryStore {
 public:
  static Result<std::unique_ptr<TelemetryStore>> Open(const StoreOptions& options);
  ~ClickHouseStore() override = default;

  const char* name() const override { return "clickhouse"; }
  Result<std::unique_ptr<SignalSink>> NewSink(Signal signal) override;
  StoreStats Stats() override;
  Result<SqlResult> ExecuteSql(const std::string& sql) override;
  Result<std::unique_ptr<TelemetryReader>> AcquireReader(int64_t wait_ms) override;
  SchemaReport schema_report() const override { return schema_report_; }
  Status ForEachSeries(const std::function<void(int64_t project_id, int64_t series_id)>& fn) override;
  Result<uint64_t> DeleteBefore(Signal signal, const ProjectSet& projects, int64_t before_ns) override;
  Result<std::optional<int64_t>> OldestTime(Signal signal) override;
  //! A no-op: ClickHouse frees the space of deleted rows itself (a dropped
  //! partition at once, a mutation's old parts when it finishes).
  Status ReclaimSpace() override { return Status::Ok(); }
  Result<StoreFootprint> Footprint() override;
  Status Close() override;

  const ServerVersion& version() const { return version_; }
  const Endpoint& endpoint() const { return endpoint_; }
  const Layout& layout() const { return layout_; }

 private:
  friend class ClickHouseSink;
  ClickHouseStore() = default;
  Status Init(const StoreOptions& options);
  Status InitSchema() REQUIRES(admin_mu_);
  Status LoadKnownKeys() REQUIRES(admin_mu_);
  //! One statement on the admin connection; the answer as TabSeparated.
  Result<TsvResult> AdminQuery(const std::string& sql, bool with_names = false) REQUIRES(admin_mu_) {
    return QueryOn(admin_.get(), sql, with_names);
  }
  static Result<TsvResult> QueryOn(Transport* conn, const std::string& sql, bool with_names);
  void ReleaseReader(std::unique_ptr<Transport> conn) EXCLUDES(pool_mu_);
  //! The table's name qualified with the database (on a cluster, its
  //! Distributed table: what inserts and reads name).
  std::string Table(const char* table) const { return QuoteIdentifier(endpoint_.database) + "." + table; }
  //! The table holding the rows on each server (on a cluster "<t>_local"):
  //! what ALTER names, with layout_.OnCluster().
  std::string LocalTable(const char* table) const {
    return QuoteIdentifier(endpoint_.database) + "." + layout_.LocalName(table);
  }
  //! A system table of this server, or on a cluster of one replica of every
  //! shard (the cluster() table function).
  std::string SystemTable(const char* name) const {
    if (!layout_.clustered()) return std::string("system.") + name;
    return "cluster(" + Quote(layout_.cluster) + ", system, " + name + ")";
  }
  //! Checks that the cluster is one of the server's and sets the insert
  //! quorum (options, or a majority of the smallest shard's replicas).
  Status InitCluster(const StoreOptions& options) REQUIRES(admin_mu_);
  //! Waits until the table's mutations are done (ALTER ... DELETE runs in
  //! the background; on a cluster on every shard); IoError when one failed.
  Status WaitForMutations(const char* table) REQUIRES(admin_mu_);

  Endpoint endpoint_;
  ServerVersion version_;
  Layout layout_;
  int insert_quorum_ = 0;  // insert_quorum of every insert; 0: none
  SchemaReport schema_report_;

  //! Schema, retention, footprint, stats and `sightline sql`.
  Mutex admin_mu_;
  std::unique_ptr<Transport> admin_ GUARDED_BY(admin_mu_);
  //! Stats() (the /metrics and health gauges) on a connection of its own, so
  //! a long retention delete on the admin one does not hold them up.
  Mutex stats_mu_;
  std::unique_ptr<Transport> stats_ GUARDED_BY(stats_mu_);

  //! The read connections; a reader holds one for its lifetime.
  Mutex pool_mu_;
  CondVar pool_cv_{&pool_mu_};
  std::vector<std::unique_ptr<Transport>> free_readers_ GUARDED_BY(pool_mu_);
  int pool_size_ = 0;
  bool closed_ GUARDED_BY(pool_mu_) = false;

  //! The keys each signal's keyed tables hold (schema::SignalTables); a
  //! sink holds `mu` for its whole write.
  struct KnownKeys {
    Mutex mu;
    schema::KeySets keys GUARDED_BY(mu);
  };
  KnownKeys known_[kSignalCount];

  //! The next log insertion counter: monotonic per store, starting above
  //! every stored one (and at least at the open time), so a store reopened
  //! later continues above. A record's seq is counter << kSeqTagBits | the
  //! store's tag (SeqOf), distinct between stores writing at once.
  std::atomic<uint64_t> next_seq_{1};
  uint64_t seq_tag_ = 0;
  std::atomic<int> open_sinks_{0};
};

ClickHouseSink::ClickHouseSink(ClickHouseStore* store, Signal signal, Endpoint endpoint)
    : OneSignalSink(signal), store_(store), conn_(Connect(endpoint)) {
  std::random_device rd;
  token_prefix_ = std::to_string((static_cast<uint64_t>(rd()) << 32) ^ rd()) + "-";
  store_->open_sinks_.fetch_add(1);
}

ClickHouseSink::~ClickHouseSink() { store_->open_sinks_.fetch_sub(1); }

Status ClickHouseSink::Insert(const char* table, std::string rows) {
  Request r;
  r.query = "INSERT INTO " + store_->Table(table) + " " + InsertColumns(table) + " FORMAT RowBinary";
  r.body = std::move(rows);
  r.gzip = true;
  if (store_->version().dedup_token()) {
    r.settings.emplace_back("insert_deduplication_token", token_prefix_ + std::to_string(++writes_) + "-" + table);
  }
  // On a cluster the Distributed table writes every shard's rows before it
  // answers (not from a queue later), so a 200 means stored on every shard.
  if (store_->layout().clustered()) r.settings.emplace_back("insert_distributed_sync", "1");
  if (store_->insert_quorum_ > 0) r.settings.emplace_back("insert_quorum", std::to_string(store_->insert_quorum_));
  Result<std::string> answer = conn_->Execute(r);
  // A transport failure after the request was sent leaves the insert's
  // fate unknown: with a deduplication token the same insert is safe to send
  // again (the server drops it if it had stored it); without one it is up
  // to the writer, which retries the batch and may store it twice (18.16;
  // docs/STORAGE.md).
  if (!answer.ok() && answer.status().code() == StatusCode::kUnavailable && store_->version().dedup_token()) {
    answer = conn_->Execute(r);
  }
  if (!answer.ok()) return answer.status();
  return Status::Ok();
}

template <typename Batch>
Status ClickHouseSink::Write(const std::vector<const Batch*>& batches) {
  if (batches.empty()) return Status::Ok();
  const schema::SignalTables tables = schema::TablesOf(*batches[0]);
  ClickHouseStore::KnownKeys& known = store_->known_[static_cast<int>(signal())];
  MutexLock lock(&known.mu);
  schema::KeySets pending;
  std::vector<schema::BatchWrite<Batch>> writes;
  writes.reserve(batches.size());
  // Every batch is checked before anything is sent: a bad batch leaves
  // nothing behind.
  for (const Batch* b : batches) {
    Result<schema::BatchWrite<Batch>> w = schema::PlanBatchWrite(*b, known.keys, &pending);
    if (!w.ok()) return w.status();
    writes.push_back(std::move(w).value());
  }
  for (size_t t = 0; t < tables.keyed.size(); ++t) {
    RowBinaryWriter rows;
    // Span resources also carry the attribute arrays of their
    // resource_attributes, which resource filters read.
    const bool resource_arrays = std::string_view(tables.keyed[t].table) == schema::kSpanResourcesTable;
    for (const schema::BatchWrite<Batch>& w : writes) {
      const std::vector<schema::Column>& columns = w.columns.keyed[t].columns;
      const StringColumn* resource = resource_arrays ? TextColumn(columns, "resource_attributes") : nullptr;
      for (uint32_t r : w.new_keyed_rows[t]) {
        for (const schema::Column& c : columns) EncodeValue(c, r, &rows);
        if (resource_arrays) {
          attrs_.Parse(resource != nullptr ? resource->Get(r) : "");
          EncodeAttributeArrays(attrs_, &rows);
        }
      }
    }
    if (!rows.empty()) SL_RETURN_IF_ERROR(Insert(tables.keyed[t].table, rows.Take()));
  }
  RowBinaryWriter rows;
  const bool logs = signal() == Signal::kLogs;
  const bool arrays = signal() != Signal::kMetrics;
  size_t total = 0;
  for (const Batch* b : batches) total += b->rows();
  uint64_t seq = logs ? store_->next_seq_.fetch_add(total) : 0;
  const uint64_t tag = store_->seq_tag_;
  for (size_t i = 0; i < writes.size(); ++i) {
    // The sparse tables' values are inline (schema::SparseLayout::kInline):
    // the same columns, checked by PlanBatchWrite, in the table's order.
    const std::vector<schema::Column> columns = schema::WideColumns(*batches[i]);
    const StringColumn* attributes = arrays ? TextColumn(columns, "attributes") : nullptr;
    const StringColumn* counts = arrays ? nullptr : TextColumn(columns, "bucket_counts");
    const StringColumn* bounds = arrays ? nullptr : TextColumn(columns, "explicit_bounds");
    const schema::Column* int_value = arrays ? nullptr : ColumnNamed(columns, "int_value");
    const uint8_t* is_int = int_value != nullptr ? static_cast<const uint8_t*>(int_value->b) : nullptr;
    const size_t n = batches[i]->rows();
    for (size_t r = 0; r < n; ++r) {
      for (const schema::Column& c : columns) EncodeValue(c, r, &rows);
      if (logs) rows.UInt64(SeqOf(seq++, tag));
      if (arrays) {
        attrs_.Parse(attributes != nullptr ? attributes->Get(r) : "");
        EncodeAttributeArrays(attrs_, &rows);
      } else {
        NumberArray(counts != nullptr ? counts->Get(r) : "", &counts_);
        NumberArray(bounds != nullptr ? bounds->Get(r) : "", &bounds_);
        rows.Float64Array(counts_);
        rows.Float64Array(bounds_);
        rows.UInt8(is_int != nullptr ? is_int[r] : 0);
      }
    }
  }
  if (!rows.empty()) SL_RETURN_IF_ERROR(Insert(tables.main, rows.Take()));
  for (size_t t = 0; t < tables.keyed.size(); ++t) known.keys[t].insert(pending[t].begin(), pending[t].end());
  return Status::Ok();
}

Result<std::unique_ptr<TelemetryStore>> ClickHouseStore::Open(const StoreOptions& options) {
  std::unique_ptr<ClickHouseStore> store(new ClickHouseStore());
  SL_RETURN_IF_ERROR(store->Init(options));
  return std::unique_ptr<TelemetryStore>(std::move(store));
}

Result<TsvResult> ClickHouseStore::QueryOn(Transport* conn, const std::string& sql, bool with_names) {
  Request r;
  r.query = sql;
  r.settings.emplace_back("default_format", with_names ? "TabSeparatedWithNames" : "TabSeparated");
  r.settings.emplace_back("wait_end_of_query", "1");
  SL_ASSIGN_OR_RETURN(std::string body, conn->Execute(r));
  return TsvResult::Parse(body, with_names);
}

Status ClickHouseStore::Init(const StoreOptions& options) {
  SL_ASSIGN_OR_RETURN(endpoint_, ParseTarget(options.clickhouse_url));
  endpoint_.database = options.clickhouse_database;
  endpoint_.user = options.clickhouse_user;
  endpoint_.password = options.clickhouse_password;
  if (endpoint_.database.empty()) return Status::InvalidArgument("clickhouse: the database name is empty");
  endpoint_.timeout = std::chrono::milliseconds(std::max<int64_t>(1, options.clickhouse_timeout_ms));
  {
    // A scrape of /metrics or deep health should not hang on a stuck server.
    Endpoint stats = endpoint_;
    stats.timeout = std::min(stats.timeout, std::chrono::milliseconds(5000));
    MutexLock stats_lock(&stats_mu_);
    stats_ = Connect(stats);
  }
  MutexLock lock(&admin_mu_);
  admin_ = Connect(endpoint_);
  {
    Request r;
    r.query = "SELECT version()";
    r.use_database = false;
    SL_ASSIGN_OR_RETURN(std::string text, admin_->Execute(r));
    SL_ASSIGN_OR_RETURN(version_, ParseVersion(text));
  }
  SL_RETURN_IF_ERROR(InitCluster(options));
  SL_RETURN_IF_ERROR(InitSchema());
  SL_RETURN_IF_ERROR(LoadKnownKeys());
  {
    // The newest records' seqs: the largest, and the tags of the stores that
    // wrote them (other nodes writing now), which this one does not take.
    SL_ASSIGN_OR_RETURN(TsvResult r, AdminQuery("SELECT max(seq), groupUniqArray(seq % " + std::to_string(kSeqTags) +
                                                ") FROM (SELECT seq FROM " + Table(schema::kLogsTable) +
                                                " ORDER BY seq DESC LIMIT 100000)"));
    const uint64_t stored = r.rows().empty() ? 0 : TsvRowView(&r.rows()[0]).GetUInt(0);
    std::vector<uint64_t> taken;
    if (!r.rows().empty()) {
      const std::string text = TsvRowView(&r.rows()[0]).GetString(1);  // [1,2,3]
      for (size_t i = 1; i < text.size();) {
        uint64_t v = 0;
        auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), v);
        if (ec != std::errc()) break;
        taken.push_back(v);
        i = static_cast<size_t>(end - text.data()) + 1;
      }
    }
    std::random_device rd;
    std::mt19937_64 random((static_cast<uint64_t>(rd()) << 32) ^ rd());
    seq_tag_ = random() % kSeqTags;
    for (int i = 0; i < 64 && std::find(taken.begin(), taken.end(), seq_tag_) != taken.end(); ++i) {
      seq_tag_ = random() % kSeqTags;
    }
    const uint64_t clock = static_cast<uint64_t>(std::max<int64_t>(NowNs(), 1)) >> kSeqTagBits;
    next_seq_.store(std::max<uint64_t>((stored >> kSeqTagBits) + 1, clock));
  }
  MutexLock pool(&pool_mu_);
  pool_size_ = std::max(1, options.read_connections);
  // Reads have no timeout of their own: the query deadline interrupts them.
  Endpoint reads = endpoint_;
  reads.timeout = std::chrono::milliseconds(0);
  for (int i = 0; i < pool_size_; ++i) free_readers_.push_back(Connect(reads));
  return Status::Ok();
}

Status ClickHouseStore::InitCluster(const StoreOptions& options) {
  layout_.cluster = options.clickhouse_cluster;
  layout_.replicated = options.clickhouse_replicated;
  if (!layout_.clustered()) {
    if (layout_.replicated) return Status::InvalidArgument("clickhouse: replicated tables need a cluster name");
    return Status::Ok();
  }
  Request r;
  r.query = "SELECT shard_num, count() FROM system.clusters WHERE cluster = " + Quote(layout_.cluster) +
            " GROUP BY shard_num";
  r.use_database = false;  // before the database is created
  SL_ASSIGN_OR_RETURN(std::string body, admin_->Execute(r));
  SL_ASSIGN_OR_RETURN(TsvResult shards, TsvResult::Parse(body, false));
  if (shards.rows().empty()) {
    return Status::InvalidArgument("clickhouse: the server at " + endpoint_.host + ":" + endpoint_.port +
                                   " has no cluster named " + layout_.cluster + " in its remote_servers");
  }
  int64_t replicas = INT64_MAX;
  for (const auto& row : shards.rows()) replicas = std::min(replicas, TsvRowView(&row).GetInt(1));
  if (layout_.replicated) {
    insert_quorum_ = options.clickhouse_insert_quorum > 0 ? options.clickhouse_insert_quorum
                     : replicas > 1                       ? static_cast<int>(replicas / 2 + 1)
                                                          : 0;
  }
  return Status::Ok();
}

Status ClickHouseStore::InitSchema() {
  {
    Request r;
    r.query = "CREATE DATABASE IF NOT EXISTS " + QuoteIdentifier(endpoint_.database) + layout_.OnCluster();
    r.use_database = false;
    SL_RETURN_IF_ERROR(admin_->Execute(r).status());
  }
  SL_ASSIGN_OR_RETURN(TsvResult tables, AdminQuery("SELECT name FROM system.tables WHERE database = " +
                                                   Quote(endpoint_.database) + " AND name = " + Quote(kVersionTable)));
  const bool fresh = tables.rows().empty();
  if (!fresh) {
    SL_ASSIGN_OR_RETURN(TsvResult v, AdminQuery("SELECT max(version) FROM " + Table(kVersionTable)));
    int64_t found = v.rows().empty() ? 0 : TsvRowView(&v.rows()[0]).GetInt(0);
    schema_report_.found_version = found;
    if (found > kSchemaVersion) {
      return Status::InvalidArgument("clickhouse: database " + endpoint_.database + " has schema version " +
                                     std::to_string(found) + ", newer than this version's " +
                                     std::to_string(kSchemaVersion) + " (docs/STORAGE.md, ClickHouse)");
    }
  }
  for (const std::string& sql : CreateTablesSql(endpoint_.database, version_, layout_)) {
    SL_RETURN_IF_ERROR(AdminQuery(sql).status());
  }
  // Every table must have exactly this version's columns: a database written
  // by another version fails here, at open, rather than on every insert.
  for (const auto& [table, columns] : schema::AllTableColumns(schema::SparseLayout::kInline)) {
    std::vector<std::string> expected;
    for (const schema::Column& c : columns) expected.emplace_back(c.name);
    for (const ExtraColumn& e : ExtraColumns(table)) expected.emplace_back(e.name);
    SL_ASSIGN_OR_RETURN(TsvResult actual, AdminQuery("SELECT name FROM system.columns WHERE database = " +
                                                     Quote(endpoint_.database) + " AND table = " + Quote(table)));
    std::vector<std::string> names;
    for (const auto& row : actual.rows()) names.push_back(row.empty() ? "" : row[0].value_or(""));
    SL_RETURN_IF_ERROR(schema::CheckColumnNames(table, expected, names));
  }
  if (fresh || schema_report_.found_version == 0) {
    SL_RETURN_IF_ERROR(AdminQuery("INSERT INTO " + Table(kVersionTable) + " VALUES (" + std::to_string(kSchemaVersion) +
                                  ", " + Quote("sightline") + ")")
                           .status());
  }
  schema_report_.version = kSchemaVersion;
  return Status::Ok();
}

Status ClickHouseStore::LoadKnownKeys() {
  for (Signal signal : {Signal::kSpans, Signal::kLogs, Signal::kMetrics}) {
    const schema::SignalTables tables = schema::TablesOf(signal);
    for (size_t t = 0; t < tables.keyed.size(); ++t) {
      SL_ASSIGN_OR_RETURN(
          TsvResult r, AdminQuery(std::string("SELECT DISTINCT project_id, ") + tables.keyed[t].key_column + " FROM " +
                                  Table(tables.keyed[t].table)));
      KnownKeys& known = known_[static_cast<int>(signal)];
      MutexLock lock(&known.mu);
      for (const auto& row : r.rows()) {
        TsvRowView v(&row);
        known.keys[t].insert({v.GetInt(0), v.GetInt(1)});
      }
    }
  }
  return Status::Ok();
}

Result<std::unique_ptr<SignalSink>> ClickHouseStore::NewSink(Signal signal) {
  {
    MutexLock lock(&pool_mu_);
    if (closed_) return Status::Internal("clickhouse: store is closed");
  }
  return std::unique_ptr<SignalSink>(new ClickHouseSink(this, signal, endpoint_));
}

Result<std::unique_ptr<TelemetryReader>> ClickHouseStore::AcquireReader(int64_t wait_ms) {
  std::unique_ptr<Transport> conn;
  {
    MutexLock lock(&pool_mu_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max<int64_t>(0, wait_ms));
    while (!closed_ && free_readers_.empty()) {
      if (!pool_cv_.WaitUntil(&pool_mu_, deadline)) break;
    }
    if (closed_) return Status::Unavailable("clickhouse: store is closed");
    if (free_readers_.empty()) return Status::Unavailable("clickhouse: every read connection is busy");
    conn = std::move(free_readers_.back());
    free_readers_.pop_back();
  }
  conn->ClearAbort();
  return NewReader(
      std::move(conn), [this](std::unique_ptr<Transport> c) { ReleaseReader(std::move(c)); }, layout_.clustered());
}

void ClickHouseStore::ReleaseReader(std::unique_ptr<Transport> conn) {
  MutexLock lock(&pool_mu_);
  free_readers_.push_back(std::move(conn));
  pool_cv_.Signal();
}

StoreStats ClickHouseStore::Stats() {
  StoreStats stats;
  {
    MutexLock lock(&pool_mu_);
    stats.read_connections = pool_size_;
    stats.read_connections_in_use = pool_size_ - static_cast<int>(free_readers_.size());
  }
  stats.engine_version = version_.text;
  MutexLock lock(&stats_mu_);
  if (stats_ == nullptr) return stats;
  auto unreachable = [&stats](const Status& st) {
    stats.reachable = false;
    stats.engine_error = st.message();
    return stats;
  };
  // The server's own counts: rows of active parts (exact for the append-only
  // tables), distinct series (the keyed table may hold a duplicate until a
  // merge).
  const std::string db = Quote(endpoint_.database);
  Result<TsvResult> parts = QueryOn(stats_.get(),
                                    "SELECT table, sum(rows), sum(bytes_on_disk) FROM " + SystemTable("parts") +
                                        " WHERE active AND database = " + db + " GROUP BY table",
                                    false);
  if (!parts.ok()) return unreachable(parts.status());
  for (const auto& row : parts->rows()) {
    TsvRowView v(&row);
    const std::string table = v.GetString(0);
    stats.database_bytes += v.GetUInt(2);
    for (Signal s : {Signal::kSpans, Signal::kLogs, Signal::kMetrics}) {
      if (table == layout_.LocalName(sql::MainTable(s))) stats.rows[static_cast<int>(s)] = v.GetUInt(1);
    }
  }
  Result<TsvResult> series =
      QueryOn(stats_.get(), "SELECT uniqExact(project_id, series_id) FROM " + Table(schema::kMetricSeriesTable), false);
  if (!series.ok()) return unreachable(series.status());
  if (!series->rows().empty()) stats.metric_series = TsvRowView(&series->rows()[0]).GetUInt(0);

  // What an operator of ClickHouse watches, each a scalar subquery of one
  // statement. Parts per partition is what ClickHouse throttles and then
  // refuses inserts by (parts_to_delay_insert, parts_to_throw_insert: 150
  // and 300 by default); system.errors and system.disks are 20.1+ (before,
  // failed queries come from system.events, and the disk is not reported).
  struct Probe {
    EngineGauge gauge;
    std::string sql;
  };
  std::vector<Probe> probes = {
      {{"active_parts", "Active data parts of Sightline's tables."},
       "SELECT count() FROM " + SystemTable("parts") + " WHERE active AND database = " + db},
      {{"max_parts_per_partition",
        "Most active parts in one partition; ClickHouse delays inserts at 150 and refuses them at 300 by default."},
       "SELECT max(c) FROM (SELECT count() AS c FROM " + SystemTable("parts") + " WHERE active AND database = " + db +
           " GROUP BY hostName(), table, partition_id)"},
      {{"merges_running", "Background merges running on Sightline's tables."},
       "SELECT count() FROM " + SystemTable("merges") + " WHERE database = " + db},
      {{"pending_inserts", "Inserts the server holds back or has not yet sent on (delayed, distributed, async)."},
       "SELECT sum(value) FROM " + SystemTable("metrics") +
           " WHERE metric IN ('DelayedInserts', 'DistributedFilesToInsert', 'PendingAsyncInsert')"},
      {{"errors", "Exceptions the server counted since it started (failed queries before 20.1)."},
       version_.modern() ? "SELECT sum(value) FROM " + SystemTable("errors")
                         : "SELECT sum(value) FROM " + SystemTable("events") +
                               " WHERE event IN ('FailedQuery', 'FailedInsertQuery', 'FailedSelectQuery')"},
  };
  if (version_.modern()) {
    probes.push_back({{"disk_free_bytes", "Free bytes on the server's disks."},
                      "SELECT sum(free_space) FROM " + SystemTable("disks")});
    probes.push_back(
        {{"disk_total_bytes", "Size of the server's disks."}, "SELECT sum(total_space) FROM " + SystemTable("disks")});
  }
  std::string sql = "SELECT ";
  for (size_t i = 0; i < probes.size(); ++i) sql += (i ? ", toFloat64((" : "toFloat64((") + probes[i].sql + "))";
  Result<TsvResult> gauges = QueryOn(stats_.get(), sql, false);
  if (!gauges.ok()) return unreachable(gauges.status());
  if (!gauges->rows().empty()) {
    TsvRowView v(&gauges->rows()[0]);
    for (size_t i = 0; i < probes.size(); ++i) {
      probes[i].gauge.value = v.GetDouble(static_cast<int>(i));
      stats.engine_gauges.push_back(probes[i].gauge);
    }
  }
  return stats;
}

Result<SqlResult> ClickHouseStore::ExecuteSql(const std::string& sql) {
  MutexLock lock(&admin_mu_);
  if (admin_ == nullptr) return Status::Internal("clickhouse: store is closed");
  SL_ASSIGN_OR_RETURN(TsvResult r, AdminQuery(sql, /*with_names=*/true));
  SqlResult out;
  out.columns = r.names();
  out.rows = std::move(r.mutable_rows());
  return out;
}

Status ClickHouseStore::ForEachSeries(const std::function<void(int64_t project_id, int64_t series_id)>& fn) {
  MutexLock lock(&admin_mu_);
  if (admin_ == nullptr) return Status::Internal("clickhouse: store is closed");
  SL_ASSIGN_OR_RETURN(TsvResult r,
                      AdminQuery("SELECT DISTINCT project_id, series_id FROM " + Table(schema::kMetricSeriesTable)));
  for (const auto& row : r.rows()) {
    TsvRowView v(&row);
    fn(v.GetInt(0), v.GetInt(1));
  }
  return Status::Ok();
}

Status ClickHouseStore::WaitForMutations(const char* table) {
  // latest_fail_reason exists from 20.1; before, a failing mutation shows as
  // one that never finishes.
  const std::string reason = version_.modern() ? "any(latest_fail_reason)" : "''";
  for (int i = 0; i < 6000; ++i) {
    SL_ASSIGN_OR_RETURN(TsvResult r, AdminQuery("SELECT count(), " + reason + " FROM " + SystemTable("mutations") +
                                                " WHERE database = " + Quote(endpoint_.database) + " AND table = " +
                                                Quote(layout_.LocalName(table)) + " AND is_done = 0"));
    if (r.rows().empty() || TsvRowView(&r.rows()[0]).GetInt(0) == 0) return Status::Ok();
    const std::string failure = TsvRowView(&r.rows()[0]).GetString(1);
    if (!failure.empty()) {
      return Status::IoError("clickhouse: a delete on " + std::string(table) + " failed: " + failure);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return Status::Unavailable("clickhouse: a delete on " + std::string(table) + " is still running after 60 s");
}

Result<uint64_t> ClickHouseStore::DeleteBefore(Signal signal, const ProjectSet& projects, int64_t before_ns) {
  if (!projects.all_but && projects.ids.empty()) return uint64_t{0};
  const char* table = sql::MainTable(signal);
  const std::string age = sql::AgeTimeSql(signal);
  const std::string where = sql::ExpiredRowsSql(signal, projects, before_ns);
  MutexLock lock(&admin_mu_);
  if (admin_ == nullptr) return Status::Unavailable("clickhouse: store is closed");
  SL_ASSIGN_OR_RETURN(TsvResult counted, AdminQuery("SELECT count() FROM " + Table(table) + " WHERE " + where));
  const uint64_t deleted = counted.rows().empty() ? 0 : TsvRowView(&counted.rows()[0]).GetUInt(0);
  if (deleted == 0) return deleted;
  // Whole days before the cutoff, for every project: dropping a partition
  // is instant and rewrites nothing. The rest by a mutation.
  if (projects.all_but && projects.ids.empty()) {
    // The partition key's value per day (clickhouse_schema.cc: DayOf).
    const std::string day = "toDate(toDateTime(intDiv(" + age + ", 1000000000)))";
    SL_ASSIGN_OR_RETURN(TsvResult days,
                        AdminQuery("SELECT " + day + " AS day FROM " + Table(table) + " GROUP BY day HAVING max(" +
                                   age + ") < " + std::to_string(before_ns)));
    for (const auto& row : days.rows()) {
      SL_RETURN_IF_ERROR(AdminQuery("ALTER TABLE " + LocalTable(table) + layout_.OnCluster() + " DROP PARTITION " +
                                    Quote(TsvRowView(&row).GetString(0)))
                             .status());
    }
  }
  SL_ASSIGN_OR_RETURN(TsvResult rest, AdminQuery("SELECT count() FROM " + Table(table) + " WHERE " + where));
  if (!rest.rows().empty() && TsvRowView(&rest.rows()[0]).GetUInt(0) > 0) {
    SL_RETURN_IF_ERROR(
        AdminQuery("ALTER TABLE " + LocalTable(table) + layout_.OnCluster() + " DELETE WHERE " + where).status());
    SL_RETURN_IF_ERROR(WaitForMutations(table));
  }
  return deleted;
}

Result<std::optional<int64_t>> ClickHouseStore::OldestTime(Signal signal) {
  MutexLock lock(&admin_mu_);
  if (admin_ == nullptr) return Status::Unavailable("clickhouse: store is closed");
  const char* table = sql::MainTable(signal);
  SL_ASSIGN_OR_RETURN(TsvResult r, AdminQuery(std::string("SELECT count(), min(") + sql::AgeTimeSql(signal) +
                                              ") FROM " + Table(table)));
  if (r.rows().empty() || TsvRowView(&r.rows()[0]).GetInt(0) == 0) return std::optional<int64_t>();
  return std::optional<int64_t>(TsvRowView(&r.rows()[0]).GetInt(1));
}

Result<StoreFootprint> ClickHouseStore::Footprint() {
  MutexLock lock(&admin_mu_);
  if (admin_ == nullptr) return Status::Unavailable("clickhouse: store is closed");
  // Inactive parts (replaced by a merge or a mutation) wait a few minutes
  // before the server removes them: bytes on disk that are not live.
  // On a cluster: every shard's (one replica each), the budget being the
  // database's.
  SL_ASSIGN_OR_RETURN(TsvResult r, AdminQuery("SELECT sum(bytes_on_disk), sumIf(bytes_on_disk, NOT active) FROM " +
                                              SystemTable("parts") + " WHERE database = " + Quote(endpoint_.database)));
  StoreFootprint f;
  if (!r.rows().empty()) {
    f.database_bytes = TsvRowView(&r.rows()[0]).GetUInt(0);
    f.free_bytes = TsvRowView(&r.rows()[0]).GetUInt(1);
  }
  return f;
}

Status ClickHouseStore::Close() {
  int sinks = open_sinks_.load();
  if (sinks != 0) return Status::Internal("clickhouse: Close with " + std::to_string(sinks) + " sinks still open");
  {
    MutexLock lock(&pool_mu_);
    closed_ = true;
    pool_cv_.SignalAll();
  }
  {
    MutexLock stats_lock(&stats_mu_);
    stats_.reset();
  }
  MutexLock lock(&admin_mu_);
  admin_.reset();
  return Status::Ok();
}

}  // namespace
}  // namespace clickhouse

Result<std::unique_ptr<TelemetryStore>> OpenClickHouseStore(const StoreOptions& options) {
  return clickhouse::ClickHouseStore::Open(options);
}

}  // namespace sightline
