// The ClickHouse engine in cluster mode (--clickhouse-cluster) on the two-shard
// cluster of this binary (testing/clickhouse_server.h ClusterUrls(): a
// ZooKeeper and two clickhouse-servers, replicated tables): the tables the
// DDL makes on each shard, where rows land (a trace on one shard), two stores
// at once as two Sightline nodes on different shards, and retention ON
// CLUSTER. The read conformance suite runs every read operation on it too
// (read_conformance_test.cc, engine clickhouse_cluster).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "storage/clickhouse/clickhouse_schema.h"
#include "storage/clickhouse/http_client.h"
#include "storage/clickhouse/testing/clickhouse_server.h"
#include "storage/telemetry_store.h"
#include "storage/testing/read_dataset.h"

namespace sightline::clickhouse {
namespace {

TEST(ClickHouseClusterSchema, ClusterDdlIsOnClusterWithLocalTablesUnderDistributedOnes) {
  Layout layout;
  layout.cluster = "c1";
  layout.replicated = true;
  std::string all;
  for (const std::string& s : CreateTablesSql("db", *ParseVersion("18.16.1"), layout)) all += s + "\n";
  EXPECT_NE(all.find("CREATE TABLE IF NOT EXISTS `db`.spans_local ON CLUSTER `c1` ("), std::string::npos) << all;
  EXPECT_NE(all.find("ReplicatedMergeTree('/clickhouse/tables/{shard}/db/spans_local', '{replica}')"),
            std::string::npos);
  EXPECT_NE(all.find("ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/db/metric_series_local'"),
            std::string::npos);
  EXPECT_NE(all.find("CREATE TABLE IF NOT EXISTS `db`.spans ON CLUSTER `c1` AS `db`.spans_local ENGINE = "
                     "Distributed(`c1`, `db`, spans_local, cityHash64(trace_id_high, trace_id_low))"),
            std::string::npos);
  EXPECT_NE(all.find("Distributed(`c1`, `db`, metric_points_local, cityHash64(series_id))"), std::string::npos);
  // One server: neither.
  std::string single;
  for (const std::string& s : CreateTablesSql("db", *ParseVersion("18.16.1"))) single += s + "\n";
  for (const char* clustered : {"ON CLUSTER", "_local", "Distributed", "Replicated"}) {
    EXPECT_EQ(single.find(clustered), std::string::npos) << clustered;
  }
}

TEST(ClickHouseClusterSchema, AShardThatCannotBeReachedIsUnavailable) {
  EXPECT_EQ(ErrorStatus(500, "Code: 279, e.displayText() = DB::NetException: All connection tries failed.").code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(ErrorStatus(500,
                        "Code: 285, e.displayText() = DB::Exception: Number of alive replicas (1) is less "
                        "than requested quorum (2).")
                .code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(ErrorStatus(500, "Code: 225, e.displayText() = DB::Exception: Cannot get ZooKeeper").code(),
            StatusCode::kUnavailable);
}

class ClickHouseClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterBuiltinStores();
    Result<std::vector<std::string>> urls = testing::ClusterUrls();
    ASSERT_TRUE(urls.ok()) << urls.status().ToString();
    urls_ = *urls;
    options_ = testing::ClusterStoreOptionsForTest(::testing::UnitTest::GetInstance()->current_test_info()->name());
    Result<std::unique_ptr<TelemetryStore>> store = StoreRegistry::Instance().Open("clickhouse", options_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  void TearDown() override {
    if (store_ != nullptr) {
      EXPECT_TRUE(store_->Close().ok());
    }
  }
  //! One value, from shard `shard`'s server directly.
  std::string OnShard(size_t shard, const std::string& sql) {
    Result<Endpoint> e = ParseUrl(urls_[shard]);
    EXPECT_TRUE(e.ok());
    e->database = options_.clickhouse_database;
    Connection c(*e);
    Request r;
    r.query = sql;
    Result<std::string> body = c.Execute(r);
    EXPECT_TRUE(body.ok()) << sql << ": " << body.status().ToString();
    std::string out = body.ok() ? *body : "?";
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
  std::string Scalar(TelemetryStore* store, const std::string& sql) {
    Result<SqlResult> r = store->ExecuteSql(sql);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    if (!r.ok() || r->rows.size() != 1 || r->rows[0].size() != 1 || !r->rows[0][0]) return "?";
    return *r->rows[0][0];
  }

  std::vector<std::string> urls_;
  StoreOptions options_;
  std::unique_ptr<TelemetryStore> store_;
};

TEST_F(ClickHouseClusterTest, EveryShardHasTheLocalTablesAndTheDistributedOnes) {
  for (size_t shard = 0; shard < 2; ++shard) {
    EXPECT_EQ(OnShard(shard,
                      "SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = "
                      "'spans_local'"),
              "ReplicatedMergeTree");
    EXPECT_EQ(OnShard(shard,
                      "SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = "
                      "'span_resources_local'"),
              "ReplicatedReplacingMergeTree");
    EXPECT_EQ(OnShard(shard, "SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = 'logs'"),
              "Distributed");
  }
}

TEST_F(ClickHouseClusterTest, RowsSpreadOverTheShardsWithEachTraceOnOne) {
  read_dataset::ReadDataset data = read_dataset::BuildReadDataset();
  ASSERT_TRUE(read_dataset::WriteReadDataset(data, store_.get()).ok());
  const std::string total = Scalar(store_.get(), "SELECT count() FROM spans");
  const int64_t on0 = std::stoll(OnShard(0, "SELECT count() FROM spans_local"));
  const int64_t on1 = std::stoll(OnShard(1, "SELECT count() FROM spans_local"));
  EXPECT_GT(on0, 0);
  EXPECT_GT(on1, 0);
  EXPECT_EQ(std::to_string(on0 + on1), total);
  // No trace id is on both shards.
  const std::string ids0 =
      OnShard(0, "SELECT groupUniqArray((trace_id_high, trace_id_low)) FROM spans_local WHERE trace_id_low != 0");
  const std::string shared = OnShard(1, "SELECT count() FROM spans_local WHERE has(" + ids0 +
                                            ", (trace_id_high, trace_id_low)) AND trace_id_low != 0");
  EXPECT_EQ(shared, "0");
  EXPECT_GT(std::stoll(OnShard(0, "SELECT count() FROM logs_local")), 0);
  EXPECT_GT(std::stoll(OnShard(1, "SELECT count() FROM logs_local")), 0);
}

TEST_F(ClickHouseClusterTest, TwoStoresOnDifferentShardsSeeEachOthersRowsAndNumberLogsApart) {
  StoreOptions other = options_;
  other.clickhouse_url = urls_[1];
  Result<std::unique_ptr<TelemetryStore>> second = StoreRegistry::Instance().Open("clickhouse", other);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  read_dataset::ReadDataset data = read_dataset::BuildReadDataset();
  ASSERT_TRUE(read_dataset::WriteReadDataset(data, store_.get()).ok());
  ASSERT_TRUE(read_dataset::WriteReadDataset(data, second->get()).ok());
  const std::string spans = Scalar(store_.get(), "SELECT count() FROM spans");
  EXPECT_NE(spans, "0");
  EXPECT_EQ(Scalar(second->get(), "SELECT count() FROM spans"), spans);
  // The same records from two stores: every seq distinct, each store's tag its own.
  EXPECT_EQ(Scalar(store_.get(), "SELECT count() = uniqExact(seq) FROM logs"), "1");
  EXPECT_EQ(Scalar(store_.get(), "SELECT uniqExact(seq % 65536) FROM logs"), "2");
  EXPECT_TRUE((*second)->Close().ok());
}

TEST_F(ClickHouseClusterTest, RetentionDropsAndDeletesOnEveryShard) {
  read_dataset::ReadDataset data = read_dataset::BuildReadDataset();
  ASSERT_TRUE(read_dataset::WriteReadDataset(data, store_.get()).ok());
  const int64_t middle = read_dataset::At(30'000);
  const std::string before = "SELECT count() FROM logs WHERE project_id = 1 AND time_ns < " + std::to_string(middle);
  const std::string expected = Scalar(store_.get(), before);
  ASSERT_NE(expected, "0");
  Result<uint64_t> deleted = store_->DeleteBefore(Signal::kLogs, ProjectSet::Only({1}), middle);
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_EQ(std::to_string(*deleted), expected);
  EXPECT_EQ(Scalar(store_.get(), before), "0");
  Result<uint64_t> all = store_->DeleteBefore(Signal::kLogs, ProjectSet::All(), INT64_MAX);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_GT(*all, 0u);
  EXPECT_EQ(OnShard(0, "SELECT count() FROM logs_local"), "0");
  EXPECT_EQ(OnShard(1, "SELECT count() FROM logs_local"), "0");
}

TEST_F(ClickHouseClusterTest, AClusterTheServerDoesNotKnowIsRefusedAtOpen) {
  StoreOptions wrong = options_;
  wrong.clickhouse_cluster = "no_such_cluster";
  Result<std::unique_ptr<TelemetryStore>> store = StoreRegistry::Instance().Open("clickhouse", wrong);
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument) << store.status().ToString();
  StoreOptions replicated_alone = testing::StoreOptionsForTest("replicated_alone");
  replicated_alone.clickhouse_replicated = true;
  EXPECT_EQ(StoreRegistry::Instance().Open("clickhouse", replicated_alone).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sightline::clickhouse
