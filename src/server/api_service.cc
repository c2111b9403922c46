#include "server/api_service.h"

#include <simdjson.h>

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

ApiService::ApiService(ApiOptions options, Authenticator* auth, StateStore* state, TelemetryStore* store)
    : options_(options), auth_(auth), state_(state), store_(store) {}

std::optional<std::string> ApiService::SessionUser(const ApiRequest& request) {
  std::string id = CookieValue(request.cookie, kCookie);
  if (id.empty()) return std::nullopt;
  auto user = auth_->SessionUser(id);
  if (!user.ok()) return std::nullopt;
  return *user;
}

HttpResponse ApiService::Login(const ApiRequest& request) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string_view username, password;
  if (parser.parse(request.body).get(doc) != simdjson::SUCCESS || doc["username"].get_string().get(username) ||
      doc["password"].get_string().get(password)) {
    return JsonError(400, "login wants a JSON body {\"username\": ..., \"password\": ...}");
  }
  auto session = auth_->Login(std::string(username), password, options_.session_ttl_seconds);
  if (!session.ok()) {
    return JsonError(session.status().code() == StatusCode::kUnauthenticated ? 401 : 503, session.status().message());
  }
  std::string body;
  JsonWriter w(&body);
  w.BeginObject();
  w.Key("username");
  w.String(username);
  w.EndObject();
  HttpResponse r = Json(200, std::move(body));
  r.headers.emplace_back(
      "Set-Cookie", std::string(kCookie) + "=" + *session +
                        "; Path=/; HttpOnly; SameSite=Strict; Max-Age=" + std::to_string(options_.session_ttl_seconds));
  return r;
}

HttpResponse ApiService::Logout(const ApiRequest& request) {
  std::string id = CookieValue(request.cookie, kCookie);
  if (!id.empty()) (void)auth_->Logout(id);
  HttpResponse r = Json(200, "{}");
  r.headers.emplace_back("Set-Cookie", std::string(kCookie) + "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
  return r;
}

ApiCall ApiService::Prepare(const ApiRequest& request) {
  ApiCall call;
  std::string op = request.path.substr(std::string("/api/v1/").size());
  if (op == "login") {
    call.immediate = request.method == "POST" ? Login(request) : JsonError(405, "use POST");
    return call;
  }
  if (op == "logout") {
    call.immediate = request.method == "POST" ? Logout(request) : JsonError(405, "use POST");
    return call;
  }
  // Who is asking: a UI session (every project) or a project's token (that project).
  std::optional<std::string> user = SessionUser(request);
  std::optional<int64_t> token_project;
  if (!user) {
    auto p = auth_->ProjectForBearer(request.authorization);
    if (!p.ok()) {
      call.immediate = p.status().code() == StatusCode::kUnauthenticated
                           ? JsonError(401, "log in (POST /api/v1/login) or send Authorization: Bearer <token>")
                           : JsonError(503, p.status().message());
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
  if (!id->has_value()) {
    call.immediate = JsonError(404, "no project '" + project + "'");
    return call;
  }
  if (token_project && **id != *token_project) {
    call.immediate = JsonError(403, "this token belongs to another project");
    return call;
  }
  call.op = op;
  call.params = std::move(params.value());
  call.project_id = **id;
  return call;
}

HttpResponse ApiService::Execute(const ApiCall& call, TelemetryReader* reader) const {
  auto result = queries_.Run(call.op, call.params, call.project_id, reader);
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
