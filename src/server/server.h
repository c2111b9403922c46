#pragma once

// The whole process: state and auth, engine, writers, admission gate, the
// maintenance service (retention, disk budget, free-space floor), ingest and
// the HTTP listeners, started in that order and stopped in reverse.
//
// Stop() is the graceful path (SIGTERM): stop accepting, refuse new requests
// with 503, let every admitted request finish (its rows committed and its
// response written), drain the writers, checkpoint and close the engine.

#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "auth/authenticator.h"
#include "auth/login_service.h"
#include "common/mutex.h"
#include "common/status.h"
#include "ingest/admission_gate.h"
#include "ingest/ingest_metrics.h"
#include "ingest/ingest_service.h"
#include "maintenance/disk_guard.h"
#include "maintenance/maintenance_service.h"
#include "server/api_service.h"
#include "server/grpc_server.h"
#include "server/http_server.h"
#include "state/state_store.h"
#include "storage/signal_bytes.h"
#include "storage/telemetry_store.h"
#include "storage/writer.h"

namespace sightline {

struct ServerOptions {
  std::string data_dir = "./data";
  //! Where projects, tokens, users and sessions live (state/state_store.h):
  //! "" = state.sqlite in data_dir; `postgres://...` = a PostgreSQL database
  //! that several nodes share.
  std::string state;
  std::string otlp_http = "0.0.0.0:4318";
  std::string otlp_grpc = "0.0.0.0:4317";  // "" = no OTLP/gRPC listener
  //! Metric series a project may hold; points of new series past it are
  //! refused (partial_success). 0 = no cap.
  size_t max_series_per_project = 1000000;
  std::string listen = "0.0.0.0:8080";
  std::string storage = "duckdb";
  StoreOptions store;  // data_dir is filled from data_dir
  IngestOptions ingest;
  AdmissionGate::Limits gate;
  HttpServerOptions http;
  //! Its message limit, message timeout and TLS files are taken from
  //! `ingest` and `http` at start.
  GrpcServerOptions grpc;
  SignalWriter::Options writer;
  int io_threads = 2;
  int shutdown_timeout_ms = 30000;
  ApiOptions api;
  AuthOptions auth;
  LoginOptions login;
  int read_connections = 4;    // query pool and engine read connections
  std::string admin_password;  // SIGHTLINE_ADMIN_PASSWORD: sets the UI admin's password
  std::string ingest_token;    // SIGHTLINE_INGEST_TOKEN: the default project's token on first start
  //! /metrics and /api/health/deep answer only a read credential (a UI
  //! session or a project's token); /healthz and /readyz stay open.
  bool metrics_require_auth = false;
  //! Retention, the disk budget and the passes' interval.
  MaintenanceOptions maintenance;
  //! Below this much free space in the data directory ingest is refused
  //! (0: no floor).
  uint64_t min_free_disk_bytes = 512u << 20;
  int low_disk_retry_after_seconds = 10;  // Retry-After while refused for disk space
};

class Server {
 public:
  //! Opens everything and starts serving; returns once listening.
  static Result<std::unique_ptr<Server>> Start(ServerOptions options);
  ~Server();

  //! Graceful stop; idempotent. Returns the engine's close status.
  Status Stop();

  int otlp_port() const { return otlp_port_; }
  int api_port() const { return api_port_; }
  //! 0 when OTLP/gRPC is off.
  int grpc_port() const { return grpc_port_; }
  //! Both listeners speak TLS (--tls-cert).
  bool tls() const { return !options_.http.tls_cert_file.empty(); }
  //! Plaintext of a token minted at this start (first start only), else "".
  const std::string& minted_token() const { return minted_token_; }
  //! The admin password generated at first start (when none was configured), else "".
  const std::string& minted_admin_password() const { return minted_admin_password_; }

  //! Answers at once, with the last measurement of the signals' bytes; when
  //! that is older than kSignalBytesMaxAge (or 20x its own duration, when
  //! longer), a new one starts on the query pool for the next call.
  HttpResponse DeepHealth();
  //! Measures the signals' bytes now (after any measurement in progress);
  //! blocks for as long as that takes, so never on an IO thread.
  void MeasureSignalBytesNow() EXCLUDES(measure_mu_, signal_bytes_mu_);
  static constexpr std::chrono::seconds kSignalBytesMaxAge{60};
  std::string PrometheusText();

 private:
  explicit Server(ServerOptions options);
  Status Open();
  //! The default project's token and the admin's password: set from the
  //! options, or minted on first start (kept for printing).
  Status SetUpCredentials();
  std::optional<RouteResponse> Route(const RouteRequest& request);

  ServerOptions options_;
  std::chrono::steady_clock::time_point started_;
  std::unique_ptr<StateStore> state_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<LoginService> login_;
  std::unique_ptr<TelemetryStore> store_;
  std::array<std::unique_ptr<SignalWriter>, kSignalCount> writers_;
  std::unique_ptr<AdmissionGate> gate_;
  std::unique_ptr<DiskGuard> disk_guard_;
  std::unique_ptr<MaintenanceService> maintenance_;
  IngestMetrics metrics_;
  std::unique_ptr<IngestService> ingest_;
  std::unique_ptr<ApiService> api_;
  std::unique_ptr<boost::asio::thread_pool> query_pool_;
  boost::asio::io_context ioc_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<OtlpGrpcServer> grpc_;
  std::unique_ptr<SeriesBudget> series_budget_;
  std::vector<std::thread> io_threads_;
  std::atomic<bool> ready_{false};
  bool stopped_ = false;
  int otlp_port_ = 0;
  int api_port_ = 0;
  int grpc_port_ = 0;
  std::string minted_token_;
  std::string minted_admin_password_;
  // Deep health's bytes per signal: measured at most every
  // kSignalBytesMaxAge (the cost grows with the data, storage/signal_bytes.h),
  // one measurement at a time, off the IO threads.
  Mutex measure_mu_;  // held while measuring (before signal_bytes_mu_)
  Mutex signal_bytes_mu_;
  bool signal_bytes_refreshing_ GUARDED_BY(signal_bytes_mu_) = false;  // a refresh is queued or running
  std::optional<std::chrono::steady_clock::time_point> signal_bytes_at_ GUARDED_BY(signal_bytes_mu_);
  std::optional<std::array<SignalBytes, kSignalCount>> signal_bytes_ GUARDED_BY(signal_bytes_mu_);
  std::chrono::steady_clock::duration signal_bytes_cost_ GUARDED_BY(signal_bytes_mu_){};  // the last measurement's
};

//! Resident set size of this process in bytes (from /proc/self/statm).
uint64_t ProcessRssBytes();

//! Raises this process's soft RLIMIT_NOFILE to its hard limit; returns the
//! soft limit in force afterwards.
uint64_t RaiseOpenFileLimit();

}  // namespace sightline
