#include "storage/clickhouse/chdb_transport.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "storage/clickhouse/formats.h"
#include "storage/clickhouse/http_client.h"

#ifndef SIGHTLINE_CHDB_DEFAULT_LIB
#define SIGHTLINE_CHDB_DEFAULT_LIB "libchdb.so"
#endif

namespace sightline::clickhouse {

namespace {

//! The few functions of chdb's C API used here (chdb.h ships with chdb's
//! sources, not with the library): a connection is `chdb_connection`, an
//! opaque pointer, which chdb_connect returns by address; a result is an
//! opaque `chdb_result*`.
struct ChdbApi {
  using Conn = void*;
  using ResultPtr = void*;
  Conn* (*connect)(int argc, char** argv) = nullptr;
  void (*close_conn)(Conn* conn) = nullptr;
  ResultPtr (*query_n)(Conn conn, const char* query, size_t query_len, const char* format, size_t format_len) = nullptr;
  char* (*result_buffer)(ResultPtr result) = nullptr;
  size_t (*result_length)(ResultPtr result) = nullptr;
  const char* (*result_error)(ResultPtr result) = nullptr;
  void (*destroy_result)(ResultPtr result) = nullptr;
};

template <typename F>
bool Bind(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(::dlsym(lib, name));
  return *out != nullptr;
}

//! One statement on a chdb connection: the answer, or its error as the
//! HTTP interface would report it (ErrorStatus reads "Code: N").
Result<std::string> RunOn(const ChdbApi& api, ChdbApi::Conn conn, std::string_view sql, std::string_view format) {
  ChdbApi::ResultPtr r = api.query_n(conn, sql.data(), sql.size(), format.data(), format.size());
  if (r == nullptr) return Status::Unavailable("chdb: the query returned no result");
  Result<std::string> out = std::string();
  if (const char* error = api.result_error(r); error != nullptr) {
    out = ErrorStatus(500, error);
  } else if (const char* buffer = api.result_buffer(r); buffer != nullptr) {
    out = std::string(buffer, api.result_length(r));
  }
  api.destroy_result(r);
  return out;
}

//! The process's engine: the library and the data directory it runs on.
//! chdb boots the engine with the first open connection and shuts it down
//! with the last one closed, so the process exits with no engine running
//! (one left up when exit() runs the library's static destructors crashes
//! in them, and its fatal signal handler then holds the process for
//! minutes).
class Engine {
 public:
  //! The engine on `path`, loading the library on the first call.
  static Result<Engine*> Get(const std::string& path) {
    static Mutex mu;
    static Engine* engine = nullptr;  // never freed: the library stays loaded
    static Status failed;
    MutexLock lock(&mu);
    if (engine == nullptr && failed.ok()) {
      auto e = std::unique_ptr<Engine>(new Engine());
      failed = e->Load(path);
      if (failed.ok()) engine = e.release();
    }
    if (!failed.ok()) return failed;
    if (std::filesystem::path(path).lexically_normal() != std::filesystem::path(engine->path_).lexically_normal()) {
      return Status::InvalidArgument("chdb: this process runs its in-process ClickHouse on " + engine->path_ +
                                     ", not " + path + " (one data directory per process)");
    }
    return engine;
  }

  const ChdbApi& api() const { return api_; }

  //! A new session on the engine's data directory (the first one boots it).
  Result<ChdbApi::Conn*> NewConnection() EXCLUDES(mu_) {
    std::string arg0 = "clickhouse", path = "--path=" + path_;
    char* argv[] = {arg0.data(), path.data()};
    MutexLock lock(&mu_);
    ChdbApi::Conn* conn = api_.connect(2, argv);
    if (conn == nullptr || *conn == nullptr) return Status::Unavailable("chdb: cannot connect on " + path_);
    return conn;
  }

  //! Closes a session (the last one shuts the engine down).
  void Close(ChdbApi::Conn* conn) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    api_.close_conn(conn);
  }

  //! Kills the statements running with this log_comment (KILL QUERY ASYNC:
  //! marks them, does not wait for them to end), from a session of its own.
  //! REQUIRES: a session is open (the engine is up).
  void Kill(const std::string& tag) {
    Result<ChdbApi::Conn*> killer = NewConnection();
    if (!killer.ok()) return;
    (void)RunOn(api_, **killer, "KILL QUERY WHERE Settings['log_comment'] = " + Quote(tag) + " ASYNC", "TabSeparated");
    Close(*killer);
  }

 private:
  Engine() = default;

  Status Load(const std::string& path) {
    const std::string lib = ChdbLibraryPath();
    void* handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      return Status::Unavailable("chdb: cannot load " + lib + " (scripts/setup.sh --test fetches it; or set " +
                                 "SIGHTLINE_CHDB_LIB): " + (why != nullptr ? why : "dlopen failed"));
    }
    if (!Bind(handle, "chdb_connect", &api_.connect) || !Bind(handle, "chdb_close_conn", &api_.close_conn) ||
        !Bind(handle, "chdb_query_n", &api_.query_n) || !Bind(handle, "chdb_result_buffer", &api_.result_buffer) ||
        !Bind(handle, "chdb_result_length", &api_.result_length) ||
        !Bind(handle, "chdb_result_error", &api_.result_error) ||
        !Bind(handle, "chdb_destroy_query_result", &api_.destroy_result)) {
      return Status::Unavailable("chdb: " + lib +
                                 " lacks a function of chdb's C API (chdb_connect, chdb_query_n, ...)");
    }
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return Status::IoError("chdb: cannot create " + path + ": " + ec.message());
    path_ = path;
    return Status::Ok();
  }

  ChdbApi api_;
  std::string path_;
  Mutex mu_;  // connects and closes, one at a time (they boot and shut down the engine)
};

class ChdbTransport final : public Transport {
 public:
  explicit ChdbTransport(Endpoint endpoint) : endpoint_(std::move(endpoint)) {
    static std::atomic<uint64_t> n{0};
    tag_ = "sightline-chdb-" + std::to_string(n.fetch_add(1));
  }
  ~ChdbTransport() override { Drop(); }

  Result<std::string> Execute(const Request& request) override EXCLUDES(mu_);
  void Abort() override EXCLUDES(mu_);
  void ClearAbort() override EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    aborted_ = false;
  }
  const Endpoint& endpoint() const override { return endpoint_; }

 private:
  //! Boots or finds the engine and opens this connection's session, its
  //! statements marked with this connection's log_comment.
  Status EnsureConnected();
  Result<std::string> Run(std::string_view sql, std::string_view format = "TabSeparated") {
    return RunOn(engine_->api(), *conn_, sql, format);
  }
  //! Closes the session (the next Execute opens a new one).
  void Drop() {
    if (conn_ != nullptr) engine_->Close(conn_);
    conn_ = nullptr;
    database_.clear();
  }
  bool aborted() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return aborted_;
  }

  const Endpoint endpoint_;
  std::string tag_;  // this connection's log_comment
  Engine* engine_ = nullptr;
  ChdbApi::Conn* conn_ = nullptr;
  std::string database_;  // the session's current database
  Mutex mu_;
  bool aborted_ GUARDED_BY(mu_) = false;
  bool running_ GUARDED_BY(mu_) = false;
};

Status ChdbTransport::EnsureConnected() {
  if (conn_ != nullptr) return Status::Ok();
  SL_ASSIGN_OR_RETURN(engine_, Engine::Get(endpoint_.chdb_path));
  SL_ASSIGN_OR_RETURN(conn_, engine_->NewConnection());
  database_ = "default";
  Status tagged = Run("SET log_comment = " + Quote(tag_)).status();
  if (!tagged.ok()) Drop();
  return tagged;
}

Result<std::string> ChdbTransport::Execute(const Request& request) {
  const Status cancelled = Status::Cancelled("clickhouse: the query was interrupted");
  if (aborted()) return cancelled;
  SL_RETURN_IF_ERROR(EnsureConnected());
  // Without ?database= the HTTP interface runs in the user's default one.
  const std::string& database = request.use_database ? endpoint_.database : std::string("default");
  if (database != database_) {
    SL_RETURN_IF_ERROR(Run("USE " + QuoteIdentifier(database)).status());
    database_ = database;
  }
  std::string format = "TabSeparated";
  std::vector<std::string> set;
  for (const auto& [name, value] : request.settings) {
    if (name == "default_format") {
      format = value;
    } else if (name != "wait_end_of_query") {
      if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
        return Status::InvalidArgument("chdb: not a setting name: " + name);
      }
      set.push_back(name);
      Status s = Run("SET " + name + " = " + Quote(value)).status();
      if (!s.ok()) {
        Drop();  // whatever was set stays with the closed session
        return s;
      }
    }
  }
  std::string sql = request.query;
  std::string body_file;
  if (!request.body.empty()) {
    // The body as a file the statement reads (FROM INFILE, before its
    // FORMAT): inline data after the statement's text ends at the first
    // blank line ("\n\n") in-process, which RowBinary holds anywhere.
    const size_t format = sql.rfind(" FORMAT ");
    if (format == std::string::npos) {
      return Status::InvalidArgument("chdb: a statement with data must end with FORMAT <name>: " + sql);
    }
    static std::atomic<uint64_t> n{0};
    const std::filesystem::path dir = std::filesystem::path(endpoint_.chdb_path) / "sightline-inserts";
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    body_file = (dir / (tag_ + "-" + std::to_string(n.fetch_add(1)) + ".bin")).string();
    {
      std::ofstream out(body_file, std::ios::binary | std::ios::trunc);
      out.write(request.body.data(), static_cast<std::streamsize>(request.body.size()));
      if (!out) return Status::IoError("chdb: cannot write " + body_file);
    }
    sql.insert(format, " FROM INFILE " + Quote(body_file));
  }
  {
    MutexLock lock(&mu_);
    if (aborted_) return cancelled;
    running_ = true;
  }
  Result<std::string> out = Run(sql, format);
  {
    MutexLock lock(&mu_);
    running_ = false;
  }
  if (!body_file.empty()) {
    std::error_code ec;
    std::filesystem::remove(body_file, ec);
  }
  for (const std::string& name : set) {
    if (!Run("SET " + name + " = DEFAULT").ok()) {
      Drop();
      break;
    }
  }
  if (aborted()) return cancelled;
  return out;
}

void ChdbTransport::Abort() {
  {
    MutexLock lock(&mu_);
    aborted_ = true;
    if (!running_) return;
  }
  // In-process there is no socket to shut: the running statement is killed,
  // and its Execute() returns as soon as the engine notices.
  engine_->Kill(tag_);
}

}  // namespace

std::string ChdbLibraryPath() {
  if (const char* env = std::getenv("SIGHTLINE_CHDB_LIB"); env != nullptr && *env != '\0') return env;
  return SIGHTLINE_CHDB_DEFAULT_LIB;
}

std::unique_ptr<Transport> ConnectChdb(const Endpoint& endpoint) { return std::make_unique<ChdbTransport>(endpoint); }

}  // namespace sightline::clickhouse
