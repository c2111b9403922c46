#include "state/testing/postgres_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <thread>

namespace sightline::testing {

namespace {

namespace fs = std::filesystem;

//! The directory holding initdb and postgres, or "".
std::string FindBinDir() {
  if (const char* env = std::getenv("SIGHTLINE_PG_BINDIR"); env && *env) {
    return fs::exists(fs::path(env) / "initdb") ? env : "";
  }
  std::string best;
  int best_version = -1;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string name = entry.path().filename().string();
    const int version = std::atoi(name.c_str());
    if (version > best_version && fs::exists(entry.path() / "bin" / "initdb") &&
        fs::exists(entry.path() / "bin" / "postgres")) {
      best_version = version;
      best = (entry.path() / "bin").string();
    }
  }
  return best;
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

std::string Tail(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string all(std::istreambuf_iterator<char>(in), {});
  return all.size() > 3000 ? all.substr(all.size() - 3000) : all;
}

//! Who the server runs as: the postgres user when we are root, else ourselves.
struct RunAs {
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

//! Starts `argv` with stdout and stderr appended to `log`, as `as`; the child
//! gets SIGQUIT (PostgreSQL's immediate shutdown) when this thread dies.
Result<pid_t> Spawn(const std::vector<std::string>& argv, const std::string& log, const RunAs& as) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError("cannot open " + log);
  if (as.switch_user && ::fchown(fd, as.uid, as.gid) != 0) {
    ::close(fd);
    return Status::IoError("cannot chown " + log);
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    return Status::IoError("fork failed");
  }
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec.
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    if (as.switch_user) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(as.gid) != 0 || ::setuid(as.uid) != 0) ::_exit(126);
    }
    // Set after the uid change, which clears it.
    ::prctl(PR_SET_PDEATHSIG, SIGQUIT);
    if (::getppid() != parent) ::_exit(125);
    // The test's working directory may be closed to the postgres user.
    if (::chdir("/") != 0) ::_exit(124);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fd);
  return pid;
}

PGconn* ConnectOrNull(const std::string& url) {
  PGconn* conn = PQconnectdb(url.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    PQfinish(conn);
    return nullptr;
  }
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  return conn;
}

}  // namespace

Result<PostgresServer*> PostgresServer::Shared() {
  static std::unique_ptr<PostgresServer> server;
  static std::optional<Status> failed;
  if (server) return server.get();
  if (failed) return *failed;
  std::unique_ptr<PostgresServer> s(new PostgresServer());
  Status st = s->Start();
  if (!st.ok()) {
    failed = st;
    return st;
  }
  server = std::move(s);
  return server.get();
}

Status PostgresServer::Start() {
  const std::string bin = FindBinDir();
  if (bin.empty()) {
    return Status::NotFound(
        "PostgreSQL server binaries not found (initdb, postgres in /usr/lib/postgresql/<version>/bin or "
        "$SIGHTLINE_PG_BINDIR): install the Debian package postgresql-15 (scripts/setup.sh --test)");
  }
  RunAs as;
  if (::geteuid() == 0) {
    const passwd* pw = ::getpwnam("postgres");
    if (!pw) return Status::NotFound("running as root and there is no 'postgres' user to run PostgreSQL as");
    as = {true, pw->pw_uid, pw->pw_gid};
  }
  std::string tmpl = (fs::temp_directory_path() / "sightline-pg-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return Status::IoError("mkdtemp failed");
  root_ = tmpl;
  if (as.switch_user && ::chown(root_.c_str(), as.uid, as.gid) != 0) return Status::IoError("chown " + root_);
  const std::string data = root_ + "/data", log = root_ + "/server.log";

  auto initdb = Spawn(
      {bin + "/initdb", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "--no-instructions", "-D", data},
      log, as);
  if (!initdb.ok()) return initdb.status();
  int wstatus = 0;
  ::waitpid(*initdb, &wstatus, 0);
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return Status::IoError("initdb failed (status " + std::to_string(wstatus) + "):\n" + Tail(log));
  }

  for (int attempt = 0; attempt < 3; ++attempt) {
    port_ = FreePort();
    auto pid = Spawn(
        {bin + "/postgres", "-D", data, "-p", std::to_string(port_), "-k", root_, "-c", "listen_addresses=127.0.0.1",
         "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200"},
        log, as);
    if (!pid.ok()) return pid.status();
    pid_ = *pid;
    const std::string ping = Url("postgres");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (PQping(ping.c_str()) == PQPING_OK) return Status::Ok();
      if (::waitpid(pid_, &wstatus, WNOHANG) == pid_) break;  // exited: maybe the port was taken
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (::waitpid(pid_, &wstatus, WNOHANG) == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &wstatus, 0);
    }
    pid_ = -1;
  }
  return Status::IoError("PostgreSQL did not start:\n" + Tail(log));
}

PostgresServer::~PostgresServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGINT);  // fast shutdown: rolls back and disconnects every session
    int wstatus = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (::waitpid(pid_, &wstatus, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &wstatus, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (!root_.empty()) {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
}

std::string PostgresServer::Url(const std::string& database) const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

std::string PostgresServer::DatabaseOf(const std::string& url) {
  const size_t slash = url.rfind('/');
  const size_t query = url.find('?', slash);
  return url.substr(slash + 1, query == std::string::npos ? std::string::npos : query - slash - 1);
}

Result<std::string> PostgresServer::NewDatabase() {
  const std::string name = "t" + std::to_string(::getpid()) + "_" + std::to_string(++databases_);
  // FILE_COPY: a fifth of the default WAL_LOG's time with fsync off (~40 ms).
  SL_RETURN_IF_ERROR(PgExec(Url("postgres"), "CREATE DATABASE " + name + " STRATEGY = FILE_COPY"));
  return Url(name);
}

Status PgExec(const std::string& url, const std::string& sql) {
  PGconn* conn = ConnectOrNull(url);
  if (!conn) return Status::IoError("cannot connect to " + url);
  PGresult* res = PQexec(conn, sql.c_str());
  const ExecStatusType st = PQresultStatus(res);
  Status out = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK
                   ? Status::Ok()
                   : Status::IoError(std::string(PQresultErrorMessage(res)) + " in: " + sql);
  PQclear(res);
  PQfinish(conn);
  return out;
}

Result<std::vector<std::vector<std::string>>> PgQuery(const std::string& url, const std::string& sql) {
  PGconn* conn = ConnectOrNull(url);
  if (!conn) return Status::IoError("cannot connect to " + url);
  PGresult* res = PQexec(conn, sql.c_str());
  Result<std::vector<std::vector<std::string>>> out = Status::IoError("");
  if (PQresultStatus(res) == PGRES_TUPLES_OK) {
    std::vector<std::vector<std::string>> rows;
    for (int r = 0; r < PQntuples(res); ++r) {
      std::vector<std::string> row;
      for (int c = 0; c < PQnfields(res); ++c) row.emplace_back(PQgetvalue(res, r, c));
      rows.push_back(std::move(row));
    }
    out = std::move(rows);
  } else {
    out = Status::IoError(std::string(PQresultErrorMessage(res)) + " in: " + sql);
  }
  PQclear(res);
  PQfinish(conn);
  return out;
}

}  // namespace sightline::testing
