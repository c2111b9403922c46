// The ClickHouse engine's own tests: the RowBinary encoder and the literal
// escaping (checked byte for byte, and against the real server's parser),
// version detection, the schema per version, interrupts and retention. The
// contract tests (store and read conformance) run it beside the other
// engines. Every test that needs a server uses the one clickhouse-server of
// this binary (testing/clickhouse_server.h) and a database of its own; the
// parameterized ones run twice, on that server (18.16, over HTTP: "clickhouse")
// and on the in-process ClickHouse of the current release (libchdb,
// chdb_transport.h: "chdb"), so both DDL paths and both transports run.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "storage/clickhouse/clickhouse_schema.h"
#include "storage/clickhouse/formats.h"
#include "storage/clickhouse/http_client.h"
#include "storage/clickhouse/testing/clickhouse_server.h"
#include "storage/clickhouse/transport.h"
#include "storage/telemetry_store.h"
#include "storage/testing/read_dataset.h"

namespace sightline::clickhouse {
namespace {

std::string Hex(const std::string& bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

TEST(ClickHouseRowBinary, EncodesNumbersLittleEndianAndStringsWithLeb128Lengths) {
  RowBinaryWriter w;
  w.UInt8(1);
  w.Int32(-2);
  w.UInt32(0x01020304);
  w.Int64(-1);
  w.UInt64(0x0102030405060708ull);
  w.Float64(1.0);
  w.String("ab");
  w.String(std::string(300, 'x'));
  EXPECT_EQ(Hex(w.data()).substr(0, 2 + 8 + 8 + 16 + 16 + 16 + 6 + 4),
            "01"                // UInt8
            "feffffff"          // Int32 -2
            "04030201"          // UInt32
            "ffffffffffffffff"  // Int64 -1
            "0807060504030201"  // UInt64
            "000000000000f03f"  // Float64 1.0
            "026162"            // "ab"
            "ac02");            // 300 = 0b10_0101100 -> 0xac 0x02
  EXPECT_EQ(w.data().size(), 1u + 4 + 4 + 8 + 8 + 8 + 3 + 2 + 300);
}

TEST(ClickHouseRowBinary, EncodesArraysAsCountThenElements) {
  RowBinaryWriter w;
  w.StringArray({"k", ""});
  w.Float64Array({});
  EXPECT_EQ(Hex(w.data()),
            "02016b00"
            "00");
}

TEST(ClickHouseQuote, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(Quote("plain"), "'plain'");
  EXPECT_EQ(Quote("it's"), "'it\\'s'");
  EXPECT_EQ(Quote("a\\b"), "'a\\\\b'");
  EXPECT_EQ(Quote(std::string("nul\0tab\tnl\n", 11)), "'nul\\0tab\\tnl\\n'");
  EXPECT_EQ(Quote("\x01\x7f"), "'\\x01\\x7F'");
  EXPECT_EQ(QuoteIdentifier("we`ird"), "`we\\`ird`");
}

TEST(ClickHouseVersion, ParsesMajorAndMinor) {
  Result<ServerVersion> v = ParseVersion("18.16.1\n");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->major, 18);
  EXPECT_EQ(v->minor, 16);
  EXPECT_FALSE(v->modern());
  EXPECT_FALSE(v->dedup_token());
  Result<ServerVersion> modern = ParseVersion("24.8.4.13");
  ASSERT_TRUE(modern.ok());
  EXPECT_TRUE(modern->modern());
  EXPECT_TRUE(modern->dedup_token());
  EXPECT_FALSE(ParseVersion("Code: 62").ok());
}

TEST(ClickHouseSchema, ModernDdlUsesLowCardinalityCodecsAndSkipIndexesOldDdlDoesNot) {
  auto joined = [](const ServerVersion& v) {
    std::string all;
    for (const std::string& s : CreateTablesSql("db", v)) all += s + "\n";
    return all;
  };
  const std::string old = joined(*ParseVersion("18.16.1"));
  const std::string modern = joined(*ParseVersion("24.8.1"));
  for (const char* feature : {"LowCardinality", "CODEC", "bloom_filter", "tokenbf_v1", "deduplication_window"}) {
    EXPECT_EQ(old.find(feature), std::string::npos) << feature;
    EXPECT_NE(modern.find(feature), std::string::npos) << feature;
  }
}

TEST(ClickHouseSchema, AttributeArraysHoldEachKeysFirstValue) {
  AttributeArrays a;
  a.Parse(R"({"s":"x","b":true,"i":-3,"d":1.5,"n":null,"a":[1],"o":{},"s":"later","n":1,"a":2})");
  EXPECT_EQ(a.keys, (std::vector<std::string>{"s", "b", "i", "d"}));
  EXPECT_EQ(a.values, (std::vector<std::string>{"x", "true", "-3", "1.5"}));
  ASSERT_EQ(a.numbers.size(), 4u);
  EXPECT_TRUE(std::isnan(a.numbers[0]));  // a string is no number
  EXPECT_TRUE(std::isnan(a.numbers[1]));  // nor a boolean
  EXPECT_EQ(a.numbers[2], -3);
  EXPECT_EQ(a.numbers[3], 1.5);
  // Arrays and objects exist and compare to nothing; a null's key is absent,
  // whatever a repeated key holds later.
  EXPECT_EQ(a.other, (std::vector<std::string>{"a", "o"}));
  a.Parse("not json");
  EXPECT_TRUE(a.keys.empty());
  EXPECT_TRUE(a.other.empty());
}

TEST(ClickHouseUrl, ParsesHostAndPort) {
  Result<Endpoint> e = ParseUrl("http://db.internal:9123/");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->host, "db.internal");
  EXPECT_EQ(e->port, "9123");
  EXPECT_EQ(ParseUrl("http://h")->port, "8123");
  EXPECT_FALSE(ParseUrl("https://h").ok());
  EXPECT_FALSE(ParseUrl("http://h:99999").ok());
  EXPECT_FALSE(ParseUrl("http://h/path").ok());
}

TEST(ClickHouseUrl, ChdbUrlsNameAnAbsoluteDataDirectory) {
  Result<Endpoint> e = ParseTarget("chdb:///var/lib/sightline/ch/");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->chdb_path, "/var/lib/sightline/ch");
  EXPECT_TRUE(ParseTarget("http://h:1")->chdb_path.empty());
  EXPECT_FALSE(ParseTarget("chdb://relative/dir").ok());
  EXPECT_FALSE(ParseTarget("chdb://").ok());
}

// --- With the server -----------------------------------------------------------

Endpoint ServerEndpoint() {
  Result<std::string> url = testing::ServerUrl();
  EXPECT_TRUE(url.ok()) << url.status().ToString();
  Endpoint e = url.ok() ? *ParseUrl(*url) : Endpoint{};
  if (!url.ok()) e.port = "1";
  e.database = "default";
  return e;
}

//! A connection of the variant under test: HTTP to the server, or in-process.
std::unique_ptr<Transport> NewTransport(const std::string& variant) {
  if (variant != "chdb") return Connect(ServerEndpoint());
  Endpoint e = *ParseTarget(testing::ChdbUrl());
  e.database = "default";
  return Connect(e);
}

std::string VariantName(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

class ClickHouseTransportTest : public ::testing::TestWithParam<std::string> {};

Result<std::string> Select(Transport* c, const std::string& sql) {
  Request r;
  r.query = sql;
  r.settings.emplace_back("default_format", "TabSeparated");
  return c->Execute(r);
}

TEST_P(ClickHouseTransportTest, QuotedLiteralsReadBackByteForByte) {
  std::unique_ptr<Transport> c = NewTransport(GetParam());
  std::string weird = "quote ' backslash \\ tab \t newline \n nul ";
  weird.push_back('\0');
  weird += " ctrl \x01 del \x7f utf8 \xc3\xa4 '); DROP TABLE x; --";
  Result<std::string> hex = Select(c.get(), "SELECT hex(" + Quote(weird) + ")");
  ASSERT_TRUE(hex.ok()) << hex.status().ToString();
  std::string want;
  for (unsigned char ch : weird) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    want.push_back(kHex[ch >> 4]);
    want.push_back(kHex[ch & 15]);
  }
  EXPECT_EQ(*hex, want + "\n");
}

TEST_P(ClickHouseTransportTest, TabSeparatedAnswersUnescapeToTheStoredBytes) {
  std::unique_ptr<Transport> c = NewTransport(GetParam());
  Result<std::string> body = Select(c.get(), "SELECT 'a\\tb\\nc\\\\d', NULL, toUInt64(18446744073709551615), nan");
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  Result<TsvResult> rows = TsvResult::Parse(*body, false);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->rows().size(), 1u);
  TsvRowView r(&rows->rows()[0]);
  EXPECT_EQ(r.GetString(0), "a\tb\nc\\d");
  EXPECT_TRUE(r.IsNull(1));
  EXPECT_EQ(r.GetUInt(2), UINT64_MAX);
  EXPECT_TRUE(std::isnan(r.GetDouble(3)));
}

TEST_P(ClickHouseTransportTest, ErrorsMapToStatusCodes) {
  std::unique_ptr<Transport> c = NewTransport(GetParam());
  EXPECT_EQ(Select(c.get(), "SELEKT 1").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Select(c.get(), "SELECT * FROM no_such_table").status().code(), StatusCode::kInvalidArgument);
  Result<std::string> fine = Select(c.get(), "SELECT 1");  // an error leaves the connection usable
  ASSERT_TRUE(fine.ok()) << fine.status().ToString();
}

TEST(ClickHouseServer, AnUnreachableServerIsUnavailable) {
  Endpoint nobody = ServerEndpoint();
  nobody.port = "1";
  Connection down(nobody);
  EXPECT_EQ(Select(&down, "SELECT 1").status().code(), StatusCode::kUnavailable);
}

TEST_P(ClickHouseTransportTest, AbortReturnsAtOnceAndTheConnectionWorksAfterClearAbort) {
  std::unique_ptr<Transport> c = NewTransport(GetParam());
  ASSERT_TRUE(Select(c.get(), "SELECT 1").ok());
  const auto start = std::chrono::steady_clock::now();
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    c->Abort();
  });
  // Over HTTP, Abort() shuts the socket; in-process it kills the statement,
  // so that one is minutes of work checking for cancellation between blocks
  // (sleep() does not).
  Result<std::string> slow = Select(
      c.get(), GetParam() == "chdb" ? "SELECT count() FROM numbers(100000000000) WHERE NOT ignore(sipHash64(number))"
                                    : "SELECT sleep(3)");
  aborter.join();
  EXPECT_EQ(slow.status().code(), StatusCode::kCancelled) << slow.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500));
  EXPECT_EQ(Select(c.get(), "SELECT 1").status().code(), StatusCode::kCancelled);  // sticky until cleared
  c->ClearAbort();
  Result<std::string> again = Select(c.get(), "SELECT 1");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, "1\n");
}

TEST(ClickHouseServer, ARequestPastTheTimeoutFailsAsUnavailable) {
  // A statement the server takes longer over than the timeout allows.
  Endpoint e = ServerEndpoint();
  e.timeout = std::chrono::milliseconds(400);
  Connection c(e);
  auto start = std::chrono::steady_clock::now();
  Result<std::string> slow = Select(&c, "SELECT sleep(2)");
  EXPECT_EQ(slow.status().code(), StatusCode::kUnavailable) << slow.status().ToString();
  EXPECT_NE(slow.status().message().find("no answer within 400 ms"), std::string::npos) << slow.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
  Result<std::string> after = Select(&c, "SELECT 3");  // a new connection
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(*after, "3\n");

  // A server stuck below HTTP: its socket listens (the kernel accepts the
  // connection) but nothing ever reads or answers.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  Endpoint stuck = e;
  stuck.port = std::to_string(ntohs(addr.sin_port));
  Connection hung(stuck);
  start = std::chrono::steady_clock::now();
  Result<std::string> never = Select(&hung, "SELECT 1");
  EXPECT_EQ(never.status().code(), StatusCode::kUnavailable) << never.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
  ::close(fd);
}

// The test server's keep_alive_timeout is 1 s; the client replaces a
// connection only after 2 s idle, so here the server has closed it first.
TEST(ClickHouseServer, AStatementOnAConnectionTheServerClosedIsSentAgain) {
  Connection c(ServerEndpoint());
  ASSERT_TRUE(Select(&c, "SELECT 1").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  Result<std::string> again = Select(&c, "SELECT 2");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, "2\n");
}

INSTANTIATE_TEST_SUITE_P(Variants, ClickHouseTransportTest, ::testing::Values("clickhouse", "chdb"), VariantName);

// --- The store -------------------------------------------------------------------

class ClickHouseStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    RegisterBuiltinStores();
    options_ =
        testing::StoreOptionsForTest(GetParam(), ::testing::UnitTest::GetInstance()->current_test_info()->name());
    Result<std::unique_ptr<TelemetryStore>> store = StoreRegistry::Instance().Open("clickhouse", options_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  void TearDown() override {
    if (store_ != nullptr) {
      EXPECT_TRUE(store_->Close().ok());
    }
  }
  std::string Scalar(const std::string& sql) {
    Result<SqlResult> r = store_->ExecuteSql(sql);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    if (!r.ok() || r->rows.size() != 1 || r->rows[0].size() != 1 || !r->rows[0][0]) return "?";
    return *r->rows[0][0];
  }

  StoreOptions options_;
  std::unique_ptr<TelemetryStore> store_;
};

TEST_P(ClickHouseStoreTest, DetectsTheVersionAndRecordsTheSchemaVersion) {
  EXPECT_EQ(store_->schema_report().version, kSchemaVersion);
  EXPECT_EQ(Scalar("SELECT max(version) FROM schema_version"), std::to_string(kSchemaVersion));
  // A newer schema is refused at open.
  ASSERT_TRUE(store_->ExecuteSql("INSERT INTO schema_version VALUES (99, 'future')").ok());
  ASSERT_TRUE(store_->Close().ok());
  store_.reset();
  Result<std::unique_ptr<TelemetryStore>> again = StoreRegistry::Instance().Open("clickhouse", options_);
  EXPECT_EQ(again.status().code(), StatusCode::kInvalidArgument);
}

TEST_P(ClickHouseStoreTest, WritesAndReadsTheReadDatasetAndInterruptsAReader) {
  read_dataset::ReadDataset data = read_dataset::BuildReadDataset();
  ASSERT_TRUE(read_dataset::WriteReadDataset(data, store_.get()).ok());
  EXPECT_NE(Scalar("SELECT count() FROM spans"), "0");
  // Log insertion sequence numbers are unique and increase with each write.
  EXPECT_EQ(Scalar("SELECT count() = uniqExact(seq) FROM logs"), "1");
  Result<std::unique_ptr<TelemetryReader>> reader = store_->AcquireReader(1000);
  ASSERT_TRUE(reader.ok());
  (*reader)->Interrupt();
  SpanGroupQuery q;
  q.filter.project_id = read_dataset::kProjectA;
  q.filter.range = read_dataset::kRange;
  EXPECT_EQ((*reader)->GroupSpans(q).status().code(), StatusCode::kCancelled);
  reader->reset();
  // The pooled connection serves the next lease.
  Result<std::unique_ptr<TelemetryReader>> next = store_->AcquireReader(1000);
  ASSERT_TRUE(next.ok());
  Result<SpanGroups> groups = (*next)->GroupSpans(q);
  ASSERT_TRUE(groups.ok()) << groups.status().ToString();
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_GT((*groups)[0].count, 0);
}

TEST_P(ClickHouseStoreTest, SendsTheConfiguredUserAndPassword) {
  if (GetParam() == "chdb") GTEST_SKIP() << "in-process there is no user to log in as";
  StoreOptions as_user = testing::StoreOptionsForTest("as_user");
  as_user.clickhouse_user = testing::kTestUser;
  as_user.clickhouse_password = testing::kTestPassword;
  Result<std::unique_ptr<TelemetryStore>> store = StoreRegistry::Instance().Open("clickhouse", as_user);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Result<SqlResult> who =
      (*store)->ExecuteSql("SELECT user FROM system.processes WHERE query LIKE '%system.processes%' LIMIT 1");
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  ASSERT_EQ(who->rows.size(), 1u);
  EXPECT_EQ(who->rows[0][0].value_or(""), testing::kTestUser);
  EXPECT_TRUE((*store)->Close().ok());
  as_user.clickhouse_password = "wrong";
  EXPECT_FALSE(StoreRegistry::Instance().Open("clickhouse", as_user).ok());
}

// An insert is never sent again (it may have been stored), so a sink whose
// kept-alive connection the server closed must notice before sending.
TEST_P(ClickHouseStoreTest, ASinkIdlePastTheServersKeepAliveTimeoutStillWrites) {
  if (GetParam() == "chdb") GTEST_SKIP() << "HTTP keep-alive only";
  read_dataset::ReadDataset data = read_dataset::BuildReadDataset();
  Result<std::unique_ptr<SignalSink>> sink = store_->NewSink(Signal::kSpans);
  ASSERT_TRUE(sink.ok());
  ASSERT_TRUE((*sink)->WriteSpans({&data.spans[0]}).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the test server's timeout is 1 s
  Status again = (*sink)->WriteSpans({&data.spans[0]});
  EXPECT_TRUE(again.ok()) << again.ToString();
  EXPECT_EQ(Scalar("SELECT count() FROM spans"), std::to_string(2 * data.spans[0].rows()));
}

TEST_P(ClickHouseStoreTest, AcquireReaderWaitsForAFreeConnection) {
  std::vector<std::unique_ptr<TelemetryReader>> held;
  for (int i = 0; i < options_.read_connections; ++i) {
    Result<std::unique_ptr<TelemetryReader>> r = store_->AcquireReader(100);
    ASSERT_TRUE(r.ok());
    held.push_back(std::move(r).value());
  }
  EXPECT_EQ(store_->Stats().read_connections_in_use, options_.read_connections);
  EXPECT_EQ(store_->AcquireReader(50).status().code(), StatusCode::kUnavailable);
  held.pop_back();
  EXPECT_TRUE(store_->AcquireReader(50).ok());
}

TEST_P(ClickHouseStoreTest, RetentionDropsOldDaysAndDeletesTheRestByMutation) {
  read_dataset::ReadDataset data = read_dataset::BuildReadDataset();
  ASSERT_TRUE(read_dataset::WriteReadDataset(data, store_.get()).ok());
  const uint64_t spans = store_->Stats().rows[static_cast<int>(Signal::kSpans)];
  ASSERT_GT(spans, 0u);
  Result<std::optional<int64_t>> oldest = store_->OldestTime(Signal::kSpans);
  ASSERT_TRUE(oldest.ok() && oldest->has_value());
  // One project's spans before the middle of the minute: a mutation.
  const int64_t middle = read_dataset::At(30'000);
  const std::string before =
      "SELECT count() FROM spans WHERE project_id = 1 AND start_time_ns < " + std::to_string(middle);
  const std::string expected = Scalar(before);
  Result<uint64_t> deleted = store_->DeleteBefore(Signal::kSpans, ProjectSet::Only({1}), middle);
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_EQ(std::to_string(*deleted), expected);
  EXPECT_EQ(Scalar(before), "0");
  EXPECT_EQ(store_->Stats().rows[static_cast<int>(Signal::kSpans)], spans - *deleted);
  // Everything, for every project: whole partitions dropped.
  Result<uint64_t> all = store_->DeleteBefore(Signal::kSpans, ProjectSet::All(), INT64_MAX);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(*all, spans - *deleted);
  EXPECT_EQ(Scalar("SELECT count() FROM spans"), "0");
  Result<std::optional<int64_t>> none = store_->OldestTime(Signal::kSpans);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  Result<StoreFootprint> f = store_->Footprint();
  ASSERT_TRUE(f.ok());
  EXPECT_GT(f->database_bytes, 0u);
}

// The DDL the detected version gets, as the server reports its tables: from
// 20.1 LowCardinality names, codecs and the skip indexes; 18.16 plain types.
TEST_P(ClickHouseStoreTest, TheDetectedVersionGetsItsDdl) {
  const bool modern = GetParam() == "chdb";
  EXPECT_EQ(Scalar("SELECT toUInt8(toUInt32(splitByChar('.', version())[1]) >= 20)"), modern ? "1" : "0");
  EXPECT_EQ(Scalar("SELECT type FROM system.columns WHERE database = currentDatabase() AND table = 'spans' AND "
                   "name = 'service_name'"),
            modern ? "LowCardinality(String)" : "String");
  EXPECT_EQ(Scalar("SELECT type FROM system.columns WHERE database = currentDatabase() AND table = 'logs' AND "
                   "name = 'body'"),
            "String");
  if (!modern) return;  // 18.16 has neither codecs nor system.data_skipping_indices
  EXPECT_EQ(Scalar("SELECT compression_codec FROM system.columns WHERE database = currentDatabase() AND table = "
                   "'spans' AND name = 'start_time_ns'"),
            "CODEC(Delta(8), ZSTD(1))");
  EXPECT_EQ(Scalar("SELECT arrayStringConcat(groupArray(concat(table, '.', name, ':', type_full)), ' ') FROM (SELECT * "
                   "FROM system.data_skipping_indices WHERE database = currentDatabase() ORDER BY table, name)"),
            "logs.idx_body:tokenbf_v1(32768, 3, 0) logs.idx_trace_id:bloom_filter(0.001) "
            "spans.idx_trace_id:bloom_filter(0.001)");
  EXPECT_EQ(Scalar("SELECT countIf(position(create_table_query, 'non_replicated_deduplication_window = 1000') > 0) "
                   "FROM system.tables WHERE database = currentDatabase() AND name IN ('spans', 'logs', "
                   "'metric_points')"),
            "3");
}

// 22.2+: an insert sent again with its deduplication token (a retry after a
// lost answer) is stored once; one with another token is stored.
TEST_P(ClickHouseStoreTest, AnInsertRetriedWithItsTokenIsStoredOnce) {
  if (GetParam() != "chdb") GTEST_SKIP() << "18.16 has no insert_deduplication_token";
  Endpoint e = *ParseTarget(options_.clickhouse_url);
  e.database = options_.clickhouse_database;
  std::unique_ptr<Transport> c = Connect(e);
  auto insert = [&](const std::string& token) {
    Request r;
    r.query = "INSERT INTO spans (project_id, start_time_ns, name) FORMAT TabSeparated";
    r.body = "7\t1700000000000000000\tretried\n";
    r.gzip = true;
    r.settings.emplace_back("insert_deduplication_token", token);
    return c->Execute(r).status();
  };
  ASSERT_TRUE(insert("write-1-spans").ok());
  ASSERT_TRUE(insert("write-1-spans").ok());  // the retry
  EXPECT_EQ(Scalar("SELECT count() FROM spans WHERE project_id = 7"), "1");
  ASSERT_TRUE(insert("write-2-spans").ok());
  EXPECT_EQ(Scalar("SELECT count() FROM spans WHERE project_id = 7"), "2");
  // The token was the insert's alone: a statement after it runs without.
  Result<std::string> left = Select(c.get(), "SELECT getSetting('insert_deduplication_token')");
  ASSERT_TRUE(left.ok()) << left.status().ToString();
  EXPECT_EQ(*left, "\n");
}

INSTANTIATE_TEST_SUITE_P(Variants, ClickHouseStoreTest, ::testing::Values("clickhouse", "chdb"), VariantName);

}  // namespace
}  // namespace sightline::clickhouse
