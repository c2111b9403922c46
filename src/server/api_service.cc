#include "server/api_service.h"

#include <simdjson.h>

#include <algorithm>
#include <new>

#include "common/json_writer.h"

namespace sightline {

namespace {

constexpr const char* kCookie = "sl_session";

std::string CookieValue(const std::string& header, const std::string& name) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(';', pos);
    std::string part = header.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    size_t start = part.find_first_not_of(' ');
    if (start != std::string::npos) part = part.substr(start);
    if (part.size() > name.size() && part.compare(0, name.size(), name) == 0 && part[name.size()] == '=') {
      return part.substr(name.size() + 1);
    }
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return "";
}

HttpResponse Json(int status, std::string body) {
  return HttpResponse{status, "application/json", std::move(body), {}, false};
}

}  // namespace

HttpResponse ApiService::JsonError(int status, const std::string& message) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("error");
  w.String(message);
  w.EndObject();
  return Json(status, std::move(out));
}

ApiService::ApiService(ApiOptions options, Authenticator* auth, LoginService* login, StateStore* state,
                       TelemetryStore* store)
    : options_(options), auth_(auth), login_(login), state_(state), store_(store), queries_(options.limits) {}

std::optional<std::string> ApiService::SessionUser(const ApiRequest& request) {
  std::string id = CookieValue(request.cookie, kCookie);
  if (id.empty()) return std::nullopt;
  auto user = auth_->SessionUser(id);
  if (!user.ok()) return std::nullopt;
  return *user;
}

bool ApiService::MayRead(std::string_view cookie, std::string_view authorization) {
  ApiRequest request;
  request.cookie = cookie;
  if (SessionUser(request)) return true;
  return auth_->ProjectForBearer(authorization, TokenScope::kRead).ok();
}

std::string ApiService::CookieAttributes() const {
  return options_.secure_cookie ? "; Path=/; HttpOnly; SameSite=Strict; Secure" : "; Path=/; HttpOnly; SameSite=Strict";
}

void ApiService::Login(const ApiCall& call, std::function<void(HttpResponse)> done) {
  const ApiLogin& login = *call.login;
  const int64_t ttl = options_.session_ttl_seconds;
  login_->Submit(
      login.peer, login.username, login.password, ttl,
      [ttl, attributes = CookieAttributes(), username = login.username, done = std::move(done)](LoginOutcome out) {
        if (out.status.ok()) {
          std::string body;
          JsonWriter w(&body);
          w.BeginObject();
          w.Key("username");
          w.String(username);
          w.EndObject();
          HttpResponse r = Json(200, std::move(body));
          r.headers.emplace_back("Set-Cookie", std::string(kCookie) + "=" + out.session_id + attributes +
                                                   "; Max-Age=" + std::to_string(ttl));
          done(std::move(r));
          return;
        }
        const StatusCode code = out.status.code();
        HttpResponse r = JsonError(code == StatusCode::kUnauthenticated     ? 401
                                   : code == StatusCode::kResourceExhausted ? 429
                                                                            : 503,
                                   out.status.message());
        if (code != StatusCode::kUnauthenticated) {
          r.headers.emplace_back("Retry-After", std::to_string(std::max<int64_t>(1, out.retry_after_seconds)));
        }
        done(std::move(r));
      });
}

HttpResponse ApiService::Logout(const ApiRequest& request) {
  std::string id = CookieValue(request.cookie, kCookie);
  if (!id.empty()) (void)auth_->Logout(id);
  HttpResponse r = Json(200, "{}");
  r.headers.emplace_back("Set-Cookie", std::string(kCookie) + "=" + CookieAttributes() + "; Max-Age=0");
  return r;
}

ApiCall ApiService::Prepare(const ApiRequest& request) {
  ApiCall call;
  std::string op = request.path.substr(std::string("/api/v1/").size());
  if (op == "login") {
    if (request.method != "POST") {
      call.immediate = JsonError(405, "use POST");
      return call;
    }
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    std::string_view username, password;
    if (parser.parse(request.body).get(doc) != simdjson::SUCCESS || doc["username"].get_string().get(username) ||
        doc["password"].get_string().get(password)) {
      call.immediate = JsonError(400, "login wants a JSON body {\"username\": ..., \"password\": ...}");
      return call;
    }
    call.login = ApiLogin{request.peer, std::string(username), std::string(password)};
    return call;
  }
  if (op == "logout") {
    call.immediate = request.method == "POST" ? Logout(request) : JsonError(405, "use POST");
    return call;
  }
  // Who is asking: a UI session (every project) or a project's read token
  // (that project). An ingest token is refused here: the credential every
  // exporter holds must not read what it sent.
  std::optional<std::string> user = SessionUser(request);
  std::optional<int64_t> token_project;
  if (!user) {
    auto p = auth_->ProjectForBearer(request.authorization, TokenScope::kRead);
    if (!p.ok()) {
      switch (p.status().code()) {
        case StatusCode::kUnauthenticated:
          call.immediate = JsonError(401, "log in (POST /api/v1/login) or send Authorization: Bearer <read token>");
          break;
        case StatusCode::kPermissionDenied: call.immediate = JsonError(403, p.status().message()); break;
        default: call.immediate = JsonError(503, p.status().message());
      }
      return call;
    }
    token_project = *p;
  }
  if (request.method != "GET") {
    call.immediate = JsonError(405, "use GET");
    return call;
  }
  if (op == "me") {
    std::string body;
    JsonWriter w(&body);
    w.BeginObject();
    w.Key("username");
    if (user) w.String(*user);
    else w.Null();
    w.EndObject();
    call.immediate = Json(200, std::move(body));
    return call;
  }
  if (op == "projects") {
    auto projects = state_->ListProjects();
    auto overrides = state_->ListRetention();
    if (!projects.ok() || !overrides.ok()) {
      call.immediate = JsonError(503, (projects.ok() ? overrides.status() : projects.status()).message());
      return call;
    }
    std::string body;
    JsonWriter w(&body);
    w.BeginObject();
    w.Key("projects");
    w.BeginArray();
    for (const auto& p : *projects) {
      if (token_project && p.id != *token_project) continue;
      w.BeginObject();
      w.Key("id");
      w.Int(p.id);
      w.Key("name");
      w.String(p.name);
      // How long each signal's data is kept: the project's own override, else
      // the server's flag; seconds null = forever.
      w.Key("retention");
      w.BeginObject();
      for (int s = 0; s < kSignalCount; ++s) {
        const char* signal = SignalName(Signal(s));
        std::optional<int64_t> own;
        for (const RetentionRecord& r : *overrides) {
          if (r.project_id == p.id && r.signal == signal) own = r.seconds;
        }
        const int64_t seconds = own.value_or(options_.default_retention_seconds[s]);
        w.Key(signal);
        w.BeginObject();
        w.Key("seconds");
        if (seconds > 0) w.Int(seconds);
        else w.Null();
        w.Key("source");
        w.String(own ? "project" : "server");
        w.EndObject();
      }
      w.EndObject();
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    call.immediate = Json(200, std::move(body));
    return call;
  }
  if (!QueryService::Knows(op)) {
    call.immediate = JsonError(404, "no such API call: " + request.path);
    return call;
  }
  auto params = ApiParams::Parse(request.query);
  if (!params.ok()) {
    call.immediate = JsonError(400, params.status().message());
    return call;
  }
  std::string project = params->Get("project").value_or("default");
  auto id = state_->FindProject(project);
  if (!id.ok()) {
    call.immediate = JsonError(503, id.status().message());
    return call;
  }
  // A token of another project gets the answer a missing project gets, so a
  // token cannot tell which other projects exist.
  if (!id->has_value() || (token_project && **id != *token_project)) {
    call.immediate = JsonError(404, "no project '" + project + "'" + (token_project ? " for this credential" : ""));
    return call;
  }
  call.op = op;
  call.params = std::move(params.value());
  call.project_id = **id;
  return call;
}

HttpResponse ApiService::Execute(const ApiCall& call, TelemetryReader* reader) const {
  // The one boundary where an allocation failure inside a query (or an
  // engine library) ends the call instead of the process. The caps in
  // QueryLimits keep answers far below it.
  Result<std::string> result = Status::Internal("query did not run");
  try {
    result = queries_.Run(call.op, call.params, call.project_id, reader);
  } catch (const std::bad_alloc&) {
    return JsonError(503, "the server ran out of memory for this query; narrow the range or the filters");
  }
  if (result.ok()) return Json(200, std::move(result.value()));
  const Status& st = result.status();
  switch (st.code()) {
    case StatusCode::kInvalidArgument: return JsonError(400, st.message());
    case StatusCode::kNotFound: return JsonError(404, st.message());
    case StatusCode::kCancelled:
    case StatusCode::kDeadlineExceeded:
      return JsonError(504, "query interrupted: passed its deadline of " + std::to_string(options_.query_timeout_ms) +
                                " ms or the client went away");
    case StatusCode::kUnavailable: {
      HttpResponse r = JsonError(503, "storage unavailable, retry shortly: " + st.message());
      r.headers.emplace_back("Retry-After", "1");
      return r;
    }
    default: return JsonError(500, "query failed: " + st.message());
  }
}

}  // namespace sightline
