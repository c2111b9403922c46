#include "server/server.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "auth/crypto.h"
#include "auth/passwords.h"
#include "auth/tokens.h"
#include "common/json_writer.h"
#include "common/thread_name.h"
#include "server/process_metrics.h"
#include "server/ui_assets.h"

namespace sightline {

uint64_t ProcessRssBytes() {
  std::ifstream f("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

uint64_t RaiseOpenFileLimit() {
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    struct rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(limit.rlim_cur);
}

namespace {

// The data directory holds every project's telemetry and the credential
// hashes: a new one is made 0700 (the files in it are 0600 by the umask
// `sightline` sets). An existing one keeps the mode its operator gave it.
Status PrepareDataDir(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::create_directories(dir, ec)) {
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all, std::filesystem::perm_options::replace, ec);
  }
  if (ec) return Status::IoError("cannot create the data directory " + dir + ": " + ec.message());
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    spdlog::warn("the data directory {} is readable by other users (mode {:o}); chmod 700 it", dir, st.st_mode & 0777);
  }
  return Status::Ok();
}

//! The q-value an Accept or Accept-Encoding header gives `token` (exactly,
//! case-insensitive), or -1 when it does not name it.
double QualityOf(std::string_view header, std::string_view token) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  auto trim = [](std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return v;
  };
  while (!header.empty()) {
    const size_t comma = header.find(',');
    std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    const size_t semi = item.find(';');
    const std::string_view name = trim(item.substr(0, semi));
    if (name.size() != token.size() ||
        !std::equal(name.begin(), name.end(), token.begin(), [&](char a, char b) { return lower(a) == b; })) {
      continue;
    }
    double q = 1;
    if (semi != std::string_view::npos) {
      const std::string_view param = trim(item.substr(semi + 1));
      if (param.starts_with("q=") || param.starts_with("Q=")) q = std::atof(std::string(param.substr(2)).c_str());
    }
    return q;
  }
  return -1;
}

bool AcceptsGzip(std::string_view accept_encoding) { return QualityOf(accept_encoding, "gzip") > 0; }

//! A browser navigating to a page names text/html; Prometheus and curl do not.
bool AcceptsHtml(std::string_view accept) { return QualityOf(accept, "text/html") > 0; }

//! True when the path's last segment has a file extension (`/favicon.ico`):
//! the UI's own paths (`/traces/<id>`, `/metrics`) never do.
bool NamesAFile(std::string_view path) {
  const std::string_view last = path.substr(path.rfind('/') + 1);
  return last.find('.') != std::string_view::npos;
}

}  // namespace

Server::Server(ServerOptions options) : options_(std::move(options)), started_(std::chrono::steady_clock::now()) {}

Server::~Server() { (void)Stop(); }

Result<std::unique_ptr<Server>> Server::Start(ServerOptions options) {
  std::unique_ptr<Server> server(new Server(std::move(options)));
  Status st = server->Open();
  if (!st.ok()) {
    (void)server->Stop();
    return st;
  }
  return server;
}

Status Server::Open() {
  SL_RETURN_IF_ERROR(PrepareDataDir(options_.data_dir));
  const uint64_t open_files = RaiseOpenFileLimit();
  const uint64_t wanted_files = 2 * static_cast<uint64_t>(options_.http.max_connections) + 256;
  spdlog::info("open-file limit: {}", open_files);
  if (open_files < wanted_files) {
    spdlog::warn(
        "the open-file limit {} is below the {} that two listeners at --max-connections {} need beside the "
        "engine's files; new connections will wait for descriptors: raise the hard limit (LimitNOFILE=, ulimit "
        "-Hn) or lower --max-connections",
        open_files, wanted_files, options_.http.max_connections);
  }
  auto state = OpenStateStore(options_.state.empty() ? options_.data_dir : options_.state);
  if (!state.ok()) return state.status();
  state_ = std::move(state.value());
  auth_ = std::make_unique<Authenticator>(options_.auth, state_.get());
  login_ = std::make_unique<LoginService>(options_.login, auth_.get());

  RegisterBuiltinStores();
  StoreOptions store_options = options_.store;
  store_options.data_dir = options_.data_dir;
  store_options.read_connections = options_.read_connections;
  auto store = StoreRegistry::Instance().Open(options_.storage, store_options);
  if (!store.ok()) return store.status();
  store_ = std::move(store.value());
  for (int s = 0; s < kSignalCount; ++s) {
    auto sink = store_->NewSink(Signal(s));
    if (!sink.ok()) return sink.status();
    writers_[s] = std::make_unique<SignalWriter>(Signal(s), std::move(sink.value()), options_.writer);
    writers_[s]->Start();
  }
  gate_ = std::make_unique<AdmissionGate>(options_.gate);
  if (options_.min_free_disk_bytes == 0 && options_.storage == "duckdb") {
    // Seen in tests: a DuckDB write that meets a full disk crashed the server
    // once and stored a corrupted row once (docs/SECURITY.md).
    spdlog::warn(
        "--min-free-disk-bytes 0 turns the free-space floor off: on DuckDB a full disk can lose or corrupt "
        "acknowledged data; keep a floor in production");
  }
  disk_guard_ = std::make_unique<DiskGuard>(options_.data_dir, options_.min_free_disk_bytes,
                                            options_.low_disk_retry_after_seconds);
  maintenance_ =
      std::make_unique<MaintenanceService>(options_.maintenance, store_.get(), state_.get(), disk_guard_.get());
  maintenance_->Start();
  series_budget_ = std::make_unique<SeriesBudget>(options_.max_series_per_project);
  if (options_.max_series_per_project > 0) {
    SL_RETURN_IF_ERROR(
        store_->ForEachSeries([this](int64_t project, int64_t series) { series_budget_->AddKnown(project, series); }));
  }
  ingest_ = std::make_unique<IngestService>(
      options_.ingest, auth_.get(), gate_.get(),
      std::array<SignalWriter*, kSignalCount>{writers_[0].get(), writers_[1].get(), writers_[2].get()}, &metrics_,
      disk_guard_.get(), series_budget_.get());
  options_.api.default_retention_seconds = options_.maintenance.retention_seconds;
  options_.api.secure_cookie = !options_.http.tls_cert_file.empty();
  api_ = std::make_unique<ApiService>(options_.api, auth_.get(), login_.get(), state_.get(), store_.get());
  query_pool_ = std::make_unique<boost::asio::thread_pool>(std::max(1, options_.read_connections));
  http_ = std::make_unique<HttpServer>(
      &ioc_, ingest_.get(), api_.get(), query_pool_.get(),
      [this](const RouteRequest& request) { return Route(request); }, options_.http);
  auto otlp = http_->Listen(options_.otlp_http, /*api_port=*/false);
  if (!otlp.ok()) return otlp.status();
  otlp_port_ = *otlp;
  auto api = http_->Listen(options_.listen, /*api_port=*/true);
  if (!api.ok()) return api.status();
  api_port_ = *api;
  if (!options_.otlp_grpc.empty()) {
    GrpcServerOptions grpc = options_.grpc;
    grpc.max_message_bytes = options_.ingest.max_body_bytes;
    grpc.message_timeout_ms = options_.http.body_timeout_ms;
    grpc.tls_cert_file = options_.http.tls_cert_file;
    grpc.tls_key_file = options_.http.tls_key_file;
    grpc_ = std::make_unique<OtlpGrpcServer>(ingest_.get(), grpc);
    auto port = grpc_->Start(options_.otlp_grpc);
    if (!port.ok()) return port.status();
    grpc_port_ = *port;
  }
  // Last of all that can fail, so a first start that fails mints nothing
  // (its credentials would be stored hashed and never shown); no request is
  // served before this, as the io threads start below.
  SL_RETURN_IF_ERROR(SetUpCredentials());
  for (int i = 0; i < std::max(1, options_.io_threads); ++i) {
    io_threads_.emplace_back([this] {
      NameThisThread("sl-io");
      auto guard = boost::asio::make_work_guard(ioc_);
      ioc_.run();
    });
  }
  ready_ = true;
  return Status::Ok();
}

Status Server::SetUpCredentials() {
  // First start means no default project yet. Counting its tokens instead
  // would bring SIGHTLINE_INGEST_TOKEN (or a new token) back after an operator
  // revoked them all.
  auto default_project = state_->FindProject("default");
  if (!default_project.ok()) return default_project.status();
  const bool first_start = !default_project->has_value();
  if (!options_.ingest_token.empty()) {
    if (first_start) {
      SL_RETURN_IF_ERROR(AddToken(state_.get(), "default", options_.ingest_token));
    } else {
      auto known = FindToken(state_.get(), options_.ingest_token);
      if (!known.ok()) return known.status();
      if (!known->has_value() || (*known)->scope != TokenScope::kIngest) {
        spdlog::warn(
            "SIGHTLINE_INGEST_TOKEN ignored: it only applies on first start, and it is not (or no longer) "
            "an ingest token of the default project; mint one with `sightline token create`");
      }
    }
  } else if (first_start) {
    auto minted = MintToken(state_.get(), "default");
    if (!minted.ok()) return minted.status();
    minted_token_ = *minted;
  }

  // The UI's admin user: its password comes from SIGHTLINE_ADMIN_PASSWORD
  // (a new one ends the admin's sessions; the same one keeps them) or is
  // generated once and printed.
  if (!options_.admin_password.empty()) {
    auto changed = EnsureUserPassword(state_.get(), "admin", options_.admin_password);
    if (!changed.ok()) return changed.status();
  } else {
    auto admin = state_->FindUser("admin");
    if (!admin.ok()) return admin.status();
    if (!admin->has_value()) {
      auto password = RandomHex(12);
      if (!password.ok()) return password.status();
      minted_admin_password_ = *password;
      SL_RETURN_IF_ERROR(SetUserPassword(state_.get(), "admin", minted_admin_password_));
    }
  }
  return Status::Ok();
}

Status Server::Stop() {
  if (stopped_) return Status::Ok();
  stopped_ = true;
  ready_ = false;
  if (http_) http_->StopAccepting();
  if (gate_) gate_->Close();  // what arrives from now on is refused, retryable
  // Waits for the calls in flight (their exports finish: the writers run).
  if (grpc_) grpc_->Shutdown(options_.shutdown_timeout_ms);
  if (gate_) {
    if (!gate_->WaitIdle(options_.shutdown_timeout_ms)) {
      spdlog::warn("shutdown: requests still in flight after {} ms; their clients get no answer",
                   options_.shutdown_timeout_ms);
    }
  }
  if (maintenance_) maintenance_->Stop();  // a pass in progress finishes first
  for (auto& w : writers_) {
    if (w) w->Stop();  // commits everything queued
  }
  ioc_.stop();
  for (auto& t : io_threads_) t.join();
  io_threads_.clear();
  if (ingest_) ingest_->Stop();  // its decode pool
  if (query_pool_) query_pool_->join();
  if (login_) login_->Stop();
  http_.reset();
  for (auto& w : writers_) w.reset();
  maintenance_.reset();
  Status st;
  if (store_) st = store_->Close();
  store_.reset();
  login_.reset();
  auth_.reset();
  state_.reset();
  return st;
}

void Server::MeasureSignalBytesNow() {
  MutexLock measuring(&measure_mu_);
  const auto start = std::chrono::steady_clock::now();
  auto bytes = store_->Stats().reachable ? MeasureSignalBytes(*store_) : std::nullopt;
  const auto end = std::chrono::steady_clock::now();
  MutexLock lock(&signal_bytes_mu_);
  signal_bytes_ = std::move(bytes);
  signal_bytes_at_ = end;
  signal_bytes_cost_ = end - start;
}

HttpResponse Server::DeepHealth() {
  StoreStats s = store_->Stats();
  std::optional<std::array<SignalBytes, kSignalCount>> bytes;
  std::optional<double> bytes_age_s;
  {
    MutexLock lock(&signal_bytes_mu_);
    const auto now = std::chrono::steady_clock::now();
    // At most every kSignalBytesMaxAge, and at most 5% of the time when a
    // measurement takes longer than 3 s (a billion rows).
    const auto max_age = std::max<std::chrono::steady_clock::duration>(kSignalBytesMaxAge, signal_bytes_cost_ * 20);
    if (!signal_bytes_refreshing_ && (!signal_bytes_at_ || now - *signal_bytes_at_ >= max_age)) {
      signal_bytes_refreshing_ = true;
      boost::asio::post(*query_pool_, [this] {
        NameThisThread("sl-query");
        MeasureSignalBytesNow();
        MutexLock done(&signal_bytes_mu_);
        signal_bytes_refreshing_ = false;
      });
    }
    bytes = signal_bytes_;
    if (signal_bytes_at_) bytes_age_s = std::chrono::duration<double>(now - *signal_bytes_at_).count();
  }
  AdmissionGate::Stats g = gate_->GetStats();
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("status");
  w.String(!ready_ ? "stopping" : s.reachable ? "ok" : "degraded");
  w.Key("storage");
  w.String(store_->name());
  // The database's server, as it reports itself (the same on every node).
  w.Key("engine");
  w.BeginObject();
  w.Key("reachable");
  w.Bool(s.reachable);
  if (!s.engine_version.empty()) {
    w.Key("version");
    w.String(s.engine_version);
  }
  if (!s.reachable) {
    w.Key("error");
    w.String(s.engine_error);
  }
  for (const EngineGauge& e : s.engine_gauges) {
    w.Key(e.name);
    w.Double(e.value);
  }
  // What each signal's rows take on disk (docs/API.md); null where the engine cannot say.
  w.Key("signals");
  w.BeginObject();
  for (int i = 0; i < kSignalCount; ++i) {
    w.Key(SignalName(Signal(i)));
    w.BeginObject();
    w.Key("rows");
    w.Uint(s.rows[i]);
    w.Key("bytes");
    if (bytes) w.Uint((*bytes)[i].bytes);
    else w.Null();
    w.Key("stored_rows");
    if (bytes) w.Uint((*bytes)[i].stored_rows);
    else w.Null();
    w.Key("bytes_per_row");
    if (bytes && (*bytes)[i].stored_rows > 0) w.Double((*bytes)[i].per_row());
    else w.Null();
    w.EndObject();
  }
  w.EndObject();
  w.Key("signals_measured_seconds_ago");
  if (bytes_age_s) w.Double(std::max(0.0, *bytes_age_s));
  else w.Null();
  w.EndObject();
  w.Key("uptime_seconds");
  w.Double(std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
  w.Key("database_bytes");
  w.Uint(s.database_bytes);
  w.Key("wal_bytes");
  w.Uint(s.wal_bytes);
  w.Key("rows");
  w.BeginObject();
  w.Key("spans");
  w.Uint(s.rows[0]);
  w.Key("logs");
  w.Uint(s.rows[1]);
  w.Key("metric_points");
  w.Uint(s.rows[2]);
  w.EndObject();
  w.Key("metric_series");
  w.Uint(s.metric_series);
  w.Key("read_pool");
  w.BeginObject();
  w.Key("connections");
  w.Int(s.read_connections);
  w.Key("in_use");
  w.Int(s.read_connections_in_use);
  w.EndObject();
  w.Key("writer_queue");
  w.BeginObject();
  for (int i = 0; i < kSignalCount; ++i) {
    SignalWriter::Stats ws = writers_[i]->GetStats();
    w.Key(SignalName(Signal(i)));
    w.BeginObject();
    w.Key("batches");
    w.Uint(ws.queued_batches);
    w.Key("rows");
    w.Uint(ws.queued_rows);
    w.Key("commits");
    w.Uint(ws.commits);
    w.Key("failed_commits");
    w.Uint(ws.failed_commits);
    w.EndObject();
  }
  w.EndObject();
  w.Key("gate");
  w.BeginObject();
  w.Key("inflight_bytes");
  w.Uint(g.inflight_bytes);
  w.Key("inflight_requests");
  w.Int(g.inflight_requests);
  w.Key("peak_inflight_bytes");
  w.Uint(g.peak_inflight_bytes);
  w.Key("max_inflight_bytes");
  w.Uint(gate_->limits().max_inflight_bytes);
  w.Key("max_inflight_requests");
  w.Int(gate_->limits().max_inflight_requests);
  w.Key("admitted");
  w.Uint(g.admitted);
  w.Key("rejections");
  w.Uint(g.rejected_bytes + g.rejected_requests + g.rejected_project_share);
  w.Key("rejected_bytes_budget");
  w.Uint(g.rejected_bytes);
  w.Key("rejected_request_limit");
  w.Uint(g.rejected_requests);
  w.Key("rejected_project_share");
  w.Uint(g.rejected_project_share);
  w.Key("active_projects");
  w.Int(g.active_projects);
  w.EndObject();
  w.Key("connections");
  w.BeginObject();
  for (const ListenerStats& l : http_->GetListenerStats()) {
    w.Key(l.api_port ? "api" : "otlp");
    w.BeginObject();
    w.Key("open");
    w.Int(l.open_connections);
    w.Key("max");
    w.Int(options_.http.max_connections);
    w.Key("refused");
    w.Uint(l.refused_connections);
    w.EndObject();
  }
  w.EndObject();
  w.Key("disk");
  w.BeginObject();
  w.Key("available_bytes");
  w.Uint(disk_guard_->available_bytes());
  w.Key("min_free_bytes");
  w.Uint(disk_guard_->min_free_bytes());
  w.Key("ingest_refused");
  w.Bool(disk_guard_->low());
  w.Key("reason");
  w.String(disk_guard_->reason());
  w.EndObject();
  MaintenanceService::Stats m = maintenance_->GetStats();
  w.Key("maintenance");
  w.BeginObject();
  w.Key("passes");
  w.Uint(m.passes);
  w.Key("last_pass_seconds");
  w.Double(m.last_pass_seconds);
  w.Key("longest_delete_seconds");
  w.Double(m.longest_delete_seconds);
  w.Key("longest_reclaim_seconds");
  w.Double(m.longest_reclaim_seconds);
  w.Key("live_bytes");
  w.Uint(m.live_bytes);
  w.Key("max_disk_bytes");
  w.Uint(options_.maintenance.max_disk_bytes);
  w.Key("retention_seconds");
  w.BeginObject();
  for (int i = 0; i < kSignalCount; ++i) {
    w.Key(SignalName(Signal(i)));
    w.Int(options_.maintenance.retention_seconds[i]);
  }
  w.EndObject();
  for (const auto& [key, counts] :
       {std::pair{"retention_deleted", m.retention_deleted}, std::pair{"budget_deleted", m.budget_deleted}}) {
    w.Key(key);
    w.BeginObject();
    for (int i = 0; i < kSignalCount; ++i) {
      w.Key(SignalName(Signal(i)));
      w.Uint(counts[i]);
    }
    w.EndObject();
  }
  w.EndObject();
  w.Key("rss_bytes");
  w.Uint(ProcessRssBytes());
  w.EndObject();
  // 503 while the database cannot be reached, so a probe of this node sees it.
  return HttpResponse{s.reachable ? 200 : 503, "application/json", std::move(out), {}, false};
}

std::string Server::PrometheusText() {
  std::string out;
  AppendProcessMetrics(&out);
  metrics_.AppendPrometheus(&out);
  api_->query_metrics().AppendPrometheus(&out);
  StoreStats s = store_->Stats();
  AdmissionGate::Stats g = gate_->GetStats();
  auto gauge = [&out](const char* name, const char* help, uint64_t v, const char* labels = "") {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{}{} {}\n", name, help, name, name, labels, v);
  };
  gauge("sightline_engine_up", "1 when the telemetry engine's database answered this scrape.", s.reachable ? 1 : 0);
  for (const EngineGauge& e : s.engine_gauges) {
    out += fmt::format("# HELP sightline_engine_{} {}\n# TYPE sightline_engine_{} gauge\nsightline_engine_{} {}\n",
                       e.name, e.help, e.name, e.name, e.value);
  }
  gauge("sightline_storage_database_bytes", "Engine database file size.", s.database_bytes);
  gauge("sightline_storage_wal_bytes", "Engine write-ahead log size.", s.wal_bytes);
  out += "# HELP sightline_storage_rows Rows stored per signal.\n# TYPE sightline_storage_rows gauge\n";
  for (int i = 0; i < kSignalCount; ++i) {
    out += fmt::format("sightline_storage_rows{{signal=\"{}\"}} {}\n", SignalName(Signal(i)), s.rows[i]);
  }
  out +=
      "# HELP sightline_writer_queue_rows Rows decoded and waiting for commit.\n# TYPE sightline_writer_queue_rows "
      "gauge\n";
  for (int i = 0; i < kSignalCount; ++i) {
    out += fmt::format("sightline_writer_queue_rows{{signal=\"{}\"}} {}\n", SignalName(Signal(i)),
                       writers_[i]->GetStats().queued_rows);
  }
  gauge("sightline_read_pool_in_use", "Engine read connections leased to dashboard queries.",
        static_cast<uint64_t>(s.read_connections_in_use));
  gauge("sightline_gate_inflight_bytes", "Bytes held by admitted ingest requests.", g.inflight_bytes);
  gauge("sightline_gate_inflight_requests", "Admitted ingest requests in flight.",
        static_cast<uint64_t>(g.inflight_requests));
  out +=
      "# HELP sightline_gate_rejections_total Requests refused with 503 by the admission gate.\n"
      "# TYPE sightline_gate_rejections_total counter\n";
  out += fmt::format("sightline_gate_rejections_total{{reason=\"bytes\"}} {}\n", g.rejected_bytes);
  out += fmt::format("sightline_gate_rejections_total{{reason=\"requests\"}} {}\n", g.rejected_requests);
  out += fmt::format("sightline_gate_rejections_total{{reason=\"project_share\"}} {}\n", g.rejected_project_share);
  gauge("sightline_gate_active_projects", "Projects sharing the admission budget.",
        static_cast<uint64_t>(g.active_projects));
  out += fmt::format(
      "# HELP sightline_gate_pressure Share of recent ingest admissions refused (0..1); Retry-After grows with it.\n"
      "# TYPE sightline_gate_pressure gauge\nsightline_gate_pressure {}\n",
      g.pressure);
  const std::vector<ListenerStats> listeners = http_->GetListenerStats();
  out += "# HELP sightline_connections_open Open connections per listener.\n# TYPE sightline_connections_open gauge\n";
  for (const ListenerStats& l : listeners) {
    out += fmt::format("sightline_connections_open{{listener=\"{}\"}} {}\n", l.api_port ? "api" : "otlp",
                       l.open_connections);
  }
  out +=
      "# HELP sightline_connections_refused_total Connections refused at the --max-connections cap.\n"
      "# TYPE sightline_connections_refused_total counter\n";
  for (const ListenerStats& l : listeners) {
    out += fmt::format("sightline_connections_refused_total{{listener=\"{}\"}} {}\n", l.api_port ? "api" : "otlp",
                       l.refused_connections);
  }
  gauge("sightline_disk_available_bytes", "Free bytes on the data directory's filesystem at the last sample.",
        disk_guard_->available_bytes());
  gauge("sightline_ingest_refused_low_disk",
        "1 while ingest is refused for lack of disk space (--min-free-disk-bytes).", disk_guard_->low() ? 1 : 0);
  MaintenanceService::Stats m = maintenance_->GetStats();
  gauge("sightline_storage_live_bytes",
        "Database bytes holding data (file less reusable free space, plus WAL) at the last maintenance pass.",
        m.live_bytes);
  out +=
      "# HELP sightline_deleted_rows_total Rows deleted by retention or by the disk budget.\n"
      "# TYPE sightline_deleted_rows_total counter\n";
  for (int i = 0; i < kSignalCount; ++i) {
    out += fmt::format("sightline_deleted_rows_total{{signal=\"{}\",reason=\"retention\"}} {}\n", SignalName(Signal(i)),
                       m.retention_deleted[i]);
    out += fmt::format("sightline_deleted_rows_total{{signal=\"{}\",reason=\"budget\"}} {}\n", SignalName(Signal(i)),
                       m.budget_deleted[i]);
  }
  return out;
}

std::optional<RouteResponse> Server::Route(const RouteRequest& request) {
  const std::string_view method = request.method;
  const std::string_view path = request.path;
  const bool api_port = request.api_port;
  if (method != "GET" && method != "HEAD") {
    if (path == "/healthz" || path == "/readyz" || path == "/api/health/deep" || path == "/metrics") {
      return HttpResponse{405, "application/json", "{\"error\":\"use GET\"}", {{"Allow", "GET"}}, false};
    }
    return std::nullopt;
  }
  if (path == "/healthz") return HttpResponse{200, "application/json", "{\"status\":\"ok\"}", {}, false};
  if (path == "/readyz") {
    if (!ready_)
      return HttpResponse{503, "application/json", "{\"status\":\"stopping\"}", {{"Retry-After", "1"}}, false};
    if (disk_guard_->low()) {
      // Not ready to take data; the query API and the UI keep answering.
      std::string body;
      JsonWriter w(&body);
      w.BeginObject();
      w.Key("status");
      w.String("not_ready");
      w.Key("ingest");
      w.Bool(false);
      w.Key("reads");
      w.Bool(true);
      w.Key("reason");
      w.String(disk_guard_->reason());
      w.EndObject();
      return HttpResponse{503,
                          "application/json",
                          std::move(body),
                          {{"Retry-After", std::to_string(disk_guard_->retry_after_seconds())}},
                          false};
    }
    return HttpResponse{200, "application/json", "{\"status\":\"ready\"}", {}, false};
  }
  if (!api_port) return std::nullopt;
  // /metrics is also the UI's Metrics page: a browser loading it (Accept
  // names text/html) gets the app, a scraper the Prometheus text.
  const bool prometheus = path == "/metrics" && !AcceptsHtml(request.accept);
  if (options_.metrics_require_auth && (path == "/api/health/deep" || prometheus) &&
      !api_->MayRead(request.cookie, request.authorization)) {
    HttpResponse denied =
        ApiService::JsonError(401, "this server restricts " + std::string(path) +
                                       " (--metrics-require-auth): log in or send Authorization: Bearer <token>");
    denied.headers.emplace_back("WWW-Authenticate", "Bearer");
    return denied;
  }
  if (path == "/api/health/deep") {
    if (request.query.find("fresh=1") == std::string_view::npos) return DeepHealth();
    return BlockingRoute([this] {
      MeasureSignalBytesNow();
      return DeepHealth();
    });
  }
  if (prometheus) {
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", PrometheusText(), {}, false};
  }
  if (path.starts_with("/api/")) return std::nullopt;
  // The web UI: an asset, else index.html so deep links reach the client-side
  // router; a file that is not there (an old hashed asset, /favicon.ico) is a
  // 404, not the app.
  const UiAsset* asset = FindUiAsset(path);
  const bool hashed = asset != nullptr && path.starts_with("/assets/");
  if (asset == nullptr) {
    if (path.starts_with("/assets/") || NamesAFile(path)) return std::nullopt;
    asset = FindUiAsset("/index.html");
  }
  if (asset == nullptr) return std::nullopt;
  const bool gzip = asset->gzip_data != nullptr && AcceptsGzip(request.accept_encoding);
  HttpResponse r{200,
                 asset->content_type,
                 gzip ? std::string(reinterpret_cast<const char*>(asset->gzip_data), asset->gzip_size)
                      : std::string(reinterpret_cast<const char*>(asset->data), asset->size),
                 {},
                 false};
  r.headers.emplace_back("Cache-Control", hashed ? "public, max-age=31536000, immutable" : "no-cache");
  if (gzip) r.headers.emplace_back("Content-Encoding", "gzip");
  if (asset->gzip_data != nullptr) r.headers.emplace_back("Vary", "Accept-Encoding");
  return r;
}

}  // namespace sightline
