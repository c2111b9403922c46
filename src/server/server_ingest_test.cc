// The whole server in process, on each engine: several threads send OTLP/HTTP
// traces, logs and metrics while others call the dashboard API; every item the
// server acknowledged must be committed: counted by the API while it runs and
// by SQL on the reopened store after Stop. This is the test that exercises every
// thread of the pipeline at once (I/O, decode pool, admission gate, writers,
// read pool, query pool), so `make test` runs it under ThreadSanitizer.

#include "server/server.h"

#include <simdjson.h>

#include <array>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "auth/tokens.h"
#include "common/testing/temp_dir.h"
#include "state/state_store.h"
#include "storage/clickhouse/testing/clickhouse_server.h"
#include "storage/telemetry_store.h"

namespace sightline {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr const char* kToken = "server-ingest-test-token";           // ingest: sends
constexpr const char* kReadToken = "server-ingest-test-read-token";  // read: the API
constexpr int kIngestThreads = 4;
constexpr int kRequestsPerThread = 24;  // rotating through the three signals
constexpr int kItemsPerRequest = 20;
constexpr int kApiThreads = 2;

struct Reply {
  int status = 0;  // -1: no HTTP answer (body holds the socket error)
  std::string body;
};

//! One request on its own connection, as a client with a bearer token.
Reply Send(int port, const char* token, http::verb verb, const std::string& target, const std::string& body = "") {
  asio::io_context ioc;
  tcp::socket socket(ioc);
  boost::system::error_code ec;
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)), ec);
  if (ec) return {-1, "connect: " + ec.message()};
  http::request<http::string_body> req{verb, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::authorization, std::string("Bearer ") + token);
  if (verb == http::verb::post) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  req.prepare_payload();
  http::write(socket, req, ec);
  if (ec) return {-1, "write: " + ec.message()};
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(socket, buffer, res, ec);
  if (ec) return {-1, "read: " + ec.message()};
  socket.shutdown(tcp::socket::shutdown_both, ec);
  return {static_cast<int>(res.result_int()), res.body()};
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

std::string Resource(int thread) {
  return R"({"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc-)" + std::to_string(thread) +
         R"("}}]},)";
}

//! kItemsPerRequest items of `signal`, each unique across the test, in OTLP JSON.
std::string Payload(Signal signal, int thread, int request, int64_t base_ns) {
  std::string items;
  for (int i = 0; i < kItemsPerRequest; ++i) {
    uint64_t id = (uint64_t{1} << 40) + static_cast<uint64_t>(thread) * 100000 + request * 100 + i + 1;
    std::string t = std::to_string(base_ns + i * 1000000);
    if (!items.empty()) items += ",";
    switch (signal) {
      case Signal::kSpans:
        items += R"({"traceId":")" + Hex(thread + 1) + Hex(id) + R"(","spanId":")" + Hex(id) +
                 R"(","name":"GET /items","kind":2,"startTimeUnixNano":")" + t + R"(","endTimeUnixNano":")" +
                 std::to_string(base_ns + i * 1000000 + 500000) + R"("})";
        break;
      case Signal::kLogs:
        items += R"({"timeUnixNano":")" + t +
                 R"(","severityNumber":9,"severityText":"INFO","body":{"stringValue":"item )" + std::to_string(id) +
                 R"("}})";
        break;
      case Signal::kMetrics:
        items += R"({"timeUnixNano":")" + t + R"(","asDouble":1.5,"attributes":[{"key":"item","value":{"intValue":")" +
                 std::to_string(id) + R"("}}]})";
        break;
    }
  }
  switch (signal) {
    case Signal::kSpans:
      return R"({"resourceSpans":[)" + Resource(thread) + R"("scopeSpans":[{"scope":{"name":"t"},"spans":[)" + items +
             "]}]}]}";
    case Signal::kLogs:
      return R"({"resourceLogs":[)" + Resource(thread) + R"("scopeLogs":[{"scope":{"name":"t"},"logRecords":[)" +
             items + "]}]}]}";
    case Signal::kMetrics:
      return R"({"resourceMetrics":[)" + Resource(thread) +
             R"("scopeMetrics":[{"scope":{"name":"t"},"metrics":[{"name":"test.gauge","gauge":{"dataPoints":[)" +
             items + "]}}]}]}]}";
  }
  return "";
}

const char* kPaths[] = {"/v1/traces", "/v1/logs", "/v1/metrics"};

//! Sums field `key` of every element of the array `array` in a JSON answer.
int64_t SumField(const std::string& json, const char* array, const char* key) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) return -1;
  int64_t sum = 0;
  for (simdjson::dom::element e : doc[array].get_array()) sum += e[key].get_int64().value();
  return sum;
}

//! Sums every value of every series of a series answer.
int64_t SumSeries(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) return -1;
  double sum = 0;
  for (simdjson::dom::element s : doc["series"].get_array()) {
    for (simdjson::dom::element v : s["values"].get_array()) {
      if (!v.is_null()) sum += v.get_double().value();
    }
  }
  return static_cast<int64_t>(sum);
}

int64_t DeepHealthRows(const std::string& json, const char* table) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) return -1;
  return doc["rows"][table].get_int64().value();
}

class ServerIngestTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ServerIngestTest, ConcurrentIngestAndQueriesCommitEveryAcknowledgedItem) {
  testing::TempDir dir("sightline-server-test");
  ASSERT_FALSE(dir.path().empty());
  ServerOptions options;
  options.data_dir = dir.str();
  const std::string variant = GetParam();
  // "chdb": the ClickHouse engine on its in-process transport (a chdb:// URL).
  options.storage = variant == "chdb" ? "clickhouse" : variant;
  options.otlp_http = "127.0.0.1:0";
  options.otlp_grpc = "";  // grpc_server_test.cc covers it
  options.listen = "127.0.0.1:0";
  options.ingest_token = kToken;
  {
    auto state = OpenStateStore(dir.str());
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    ASSERT_TRUE(AddToken(state->get(), "default", kToken, TokenScope::kIngest).ok());
    ASSERT_TRUE(AddToken(state->get(), "default", kReadToken, TokenScope::kRead).ok());
  }
  options.admin_password = "server-ingest-test-pw";
  options.io_threads = 2;
  options.ingest.decode_threads = 2;
  options.read_connections = 2;
  options.store.threads = 2;
  options.api.query_timeout_ms = 120000;  // ThreadSanitizer slows everything down
  if (options.storage == "clickhouse") {
    // The binary's clickhouse-server or its in-process ClickHouse, a
    // database of this test's own.
    const StoreOptions ch = clickhouse::testing::StoreOptionsForTest(variant, "server_ingest");
    options.store.clickhouse_url = ch.clickhouse_url;
    options.store.clickhouse_database = ch.clickhouse_database;
  }
  auto started = Server::Start(options);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  std::unique_ptr<Server> server = std::move(started).value();
  const int otlp = server->otlp_port();
  const int api = server->api_port();

  const int64_t base_ns = NowNs() - int64_t{60} * 1000000000;
  const int64_t now_ms = NowNs() / 1000000;
  const std::string range = "from=" + std::to_string(now_ms - 600000) + "&to=" + std::to_string(now_ms + 600000);

  std::array<std::atomic<int64_t>, kSignalCount> acked{};
  std::atomic<int> refused{0};
  std::atomic<bool> ingest_done{false};
  std::atomic<int> api_calls{0};

  std::vector<std::thread> api_threads;
  for (int t = 0; t < kApiThreads; ++t) {
    api_threads.emplace_back([&, t] {
      const std::vector<std::string> targets = {
          "/api/v1/services?" + range,
          "/api/v1/endpoints?" + range,
          "/api/v1/traces?" + range + "&limit=20",
          "/api/v1/logs?" + range + "&limit=50",
          "/api/v1/logs/volume?" + range,
          "/api/v1/metrics?" + range,
          "/api/v1/metrics/series?" + range + "&name=test.gauge&agg=avg",
          "/api/health/deep",
          "/metrics",
      };
      for (size_t i = t; !ingest_done.load(); ++i) {
        const std::string& target = targets[i % targets.size()];
        Reply r = Send(api, kReadToken, http::verb::get, target);
        EXPECT_EQ(r.status, 200) << target << ": " << r.body;
        api_calls++;
      }
    });
  }

  std::vector<std::thread> ingest_threads;
  for (int t = 0; t < kIngestThreads; ++t) {
    ingest_threads.emplace_back([&, t] {
      for (int r = 0; r < kRequestsPerThread; ++r) {
        Signal signal = Signal((t + r) % kSignalCount);
        std::string body = Payload(signal, t, r, base_ns);
        for (int attempt = 0;; ++attempt) {
          Reply reply = Send(otlp, kToken, http::verb::post, kPaths[static_cast<int>(signal)], body);
          if (reply.status == 200) {
            EXPECT_EQ(reply.body, "{}") << "items were rejected";
            acked[static_cast<int>(signal)] += kItemsPerRequest;
            break;
          }
          // 503 is the admission gate asking the client to retry; anything else is a failure.
          ASSERT_EQ(reply.status, 503) << reply.body;
          ASSERT_LT(attempt, 200) << "refused for too long";
          refused++;
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
    });
  }
  for (auto& th : ingest_threads) th.join();
  ingest_done = true;
  for (auto& th : api_threads) th.join();
  EXPECT_GT(api_calls.load(), 0);

  // Acknowledged means committed: no waiting, the rows are there now.
  const int64_t sent = int64_t{kIngestThreads} * kRequestsPerThread * kItemsPerRequest / kSignalCount;
  for (int s = 0; s < kSignalCount; ++s) EXPECT_EQ(acked[s].load(), sent) << SignalName(Signal(s));
  Reply health = Send(api, kReadToken, http::verb::get, "/api/health/deep");
  ASSERT_EQ(health.status, 200) << health.body;
  EXPECT_EQ(DeepHealthRows(health.body, "spans"), acked[0].load());
  EXPECT_EQ(DeepHealthRows(health.body, "logs"), acked[1].load());
  EXPECT_EQ(DeepHealthRows(health.body, "metric_points"), acked[2].load());
  {
    // The engine's own gauges: an embedded engine is reachable and has none
    // of a server's; ClickHouse reports its version and its parts.
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    ASSERT_EQ(parser.parse(health.body).get(doc), simdjson::SUCCESS) << health.body;
    EXPECT_EQ(std::string_view(doc["status"].get_string().value()), "ok");
    simdjson::dom::element engine = doc["engine"];
    EXPECT_TRUE(engine["reachable"].get_bool().value()) << health.body;
    const bool server_engine = options.storage == "clickhouse";  // clickhouse and chdb
    if (server_engine) {
      EXPECT_FALSE(engine["version"].get_string().value().empty()) << health.body;
      EXPECT_GE(engine["active_parts"].get_double().value(), 3) << health.body;  // a part per signal at least
      EXPECT_GE(engine["max_parts_per_partition"].get_double().value(), 1) << health.body;
      EXPECT_GE(engine["merges_running"].get_double().value(), 0) << health.body;
      EXPECT_GE(engine["errors"].get_double().value(), 0) << health.body;
      // system.disks is 20.1+: the 26.5 of chdb has it, 18.16 not.
      EXPECT_EQ(engine["disk_total_bytes"].error() == simdjson::SUCCESS, variant == "chdb") << health.body;
      if (variant == "chdb") {
        EXPECT_GT(engine["disk_total_bytes"].get_double().value(), 0) << health.body;
      }
    } else {
      EXPECT_TRUE(engine["active_parts"].error()) << health.body;
    }
    Reply metrics = Send(api, kReadToken, http::verb::get, "/metrics");
    ASSERT_EQ(metrics.status, 200) << metrics.body;
    EXPECT_NE(metrics.body.find("\nsightline_engine_up 1\n"), std::string::npos) << metrics.body;
    EXPECT_EQ(metrics.body.find("\nsightline_engine_active_parts ") != std::string::npos, server_engine);
  }

  Reply services = Send(api, kReadToken, http::verb::get, "/api/v1/services?" + range);
  ASSERT_EQ(services.status, 200) << services.body;
  EXPECT_EQ(SumField(services.body, "services", "requests"), acked[0].load()) << services.body;
  Reply volume = Send(api, kReadToken, http::verb::get, "/api/v1/logs/volume?" + range);
  ASSERT_EQ(volume.status, 200) << volume.body;
  EXPECT_EQ(SumSeries(volume.body), acked[1].load()) << volume.body;

  Status stopped = server->Stop();
  EXPECT_TRUE(stopped.ok()) << stopped.ToString();
  server.reset();

  // And durable: the reopened store counts the same rows.
  StoreOptions store_options = options.store;
  store_options.data_dir = dir.str();
  auto store = StoreRegistry::Instance().Open(options.storage, store_options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const char* tables[] = {"spans", "logs", "metric_points"};
  for (int s = 0; s < kSignalCount; ++s) {
    auto counted = (*store)->ExecuteSql(std::string("SELECT count(*) FROM ") + tables[s]);
    ASSERT_TRUE(counted.ok()) << counted.status().ToString();
    ASSERT_EQ(counted->rows.size(), 1u);
    EXPECT_EQ(counted->rows[0][0].value_or(""), std::to_string(acked[s].load())) << tables[s];
  }
  EXPECT_TRUE((*store)->Close().ok());
}

INSTANTIATE_TEST_SUITE_P(Engines, ServerIngestTest, ::testing::Values("duckdb", "sqlite", "clickhouse", "chdb"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace sightline
