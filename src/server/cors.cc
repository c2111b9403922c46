#include "server/cors.h"

#include <algorithm>
#include <cctype>

namespace sightline {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool HostChar(char c, bool ipv6) {
  if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') return true;
  return ipv6 && c == ':';
}

bool Digits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

Status Invalid(std::string_view entry, std::string_view why) {
  return Status::InvalidArgument("--cors-allowed-origins: '" + std::string(entry) + "' " + std::string(why));
}

// One origin as a browser serialises it in an Origin header, or why `entry`
// is not one.
Result<std::string> NormaliseOrigin(std::string_view entry) {
  const std::string lower = Lower(entry);
  if (entry == "*") return Invalid(entry, "is not accepted; name each origin that may send (docs/SECURITY.md)");
  if (lower == "null") return Invalid(entry, "is not accepted: every sandboxed frame and local file has that origin");
  std::string scheme;
  if (lower.starts_with("http://")) {
    scheme = "http";
  } else if (lower.starts_with("https://")) {
    scheme = "https";
  } else {
    return Invalid(entry, "is not http://HOST[:PORT] or https://HOST[:PORT]");
  }
  std::string_view rest = std::string_view(lower).substr(scheme.size() + 3);
  if (rest.ends_with("/")) rest.remove_suffix(1);
  if (rest.find_first_of("/?#@\\") != std::string_view::npos) {
    return Invalid(entry, "has a path, query or credentials; an origin is scheme://host[:port] only");
  }
  // host[:port], the host an IPv6 literal in brackets or a name.
  const bool ipv6 = rest.starts_with("[");
  size_t host_end = ipv6 ? rest.find(']') : rest.rfind(':');
  if (ipv6 && host_end == std::string_view::npos) return Invalid(entry, "has no ']'");
  if (ipv6) ++host_end;
  std::string_view host = rest.substr(0, host_end);
  std::string_view after = host_end == std::string_view::npos ? std::string_view() : rest.substr(host_end);
  std::string_view host_chars = ipv6 ? host.substr(1, host.size() - 2) : host;
  if (host_chars.empty() ||
      !std::all_of(host_chars.begin(), host_chars.end(), [ipv6](char c) { return HostChar(c, ipv6); })) {
    return Invalid(entry, "has no valid host (write an international name in its xn-- form)");
  }
  std::string out = scheme + "://" + std::string(host);
  if (after.empty()) return out;
  std::string_view port = after.substr(1);
  if (after.front() != ':' || !Digits(port) || port.size() > 5) return Invalid(entry, "has a bad port");
  const int n = std::stoi(std::string(port));
  if (n < 1 || n > 65535) return Invalid(entry, "has a bad port");
  // Browsers leave the scheme's default port out of an Origin.
  if ((scheme == "http" && n == 80) || (scheme == "https" && n == 443)) return out;
  return out + ":" + std::to_string(n);
}

}  // namespace

Result<CorsPolicy> CorsPolicy::Parse(std::string_view comma_separated) {
  CorsPolicy policy;
  while (!comma_separated.empty()) {
    size_t comma = comma_separated.find(',');
    std::string_view entry = Trim(comma_separated.substr(0, comma));
    comma_separated = comma == std::string_view::npos ? std::string_view() : comma_separated.substr(comma + 1);
    if (entry.empty()) continue;
    SL_ASSIGN_OR_RETURN(std::string origin, NormaliseOrigin(entry));
    if (std::find(policy.origins_.begin(), policy.origins_.end(), origin) == policy.origins_.end()) {
      policy.origins_.push_back(std::move(origin));
    }
  }
  return policy;
}

bool CorsPolicy::Allows(std::string_view origin) const {
  return !origin.empty() && std::find(origins_.begin(), origins_.end(), origin) != origins_.end();
}

bool CorsPolicy::IsPreflight(const CorsRequest& request) const {
  return enabled() && request.method == "OPTIONS" && !request.origin.empty() && !request.request_method.empty();
}

HttpResponse CorsPolicy::Preflight(const CorsRequest& request) const {
  HttpResponse r;
  r.headers.emplace_back("Vary", "Origin");
  if (!Allows(request.origin)) {
    r.status = 403;
    r.body = R"({"error":"this origin is not in --cors-allowed-origins"})";
    return r;
  }
  r.status = 204;
  r.content_type.clear();
  r.headers.emplace_back("Access-Control-Allow-Origin", std::string(request.origin));
  r.headers.emplace_back("Access-Control-Allow-Methods", "POST");
  r.headers.emplace_back("Access-Control-Allow-Headers", kCorsAllowedHeaders);
  r.headers.emplace_back("Access-Control-Max-Age", std::to_string(kCorsMaxAgeSeconds));
  return r;
}

void CorsPolicy::AddResponseHeaders(std::string_view origin, HttpResponse* response) const {
  if (!enabled()) return;
  response->headers.emplace_back("Vary", "Origin");
  if (!Allows(origin)) return;
  response->headers.emplace_back("Access-Control-Allow-Origin", std::string(origin));
  response->headers.emplace_back("Access-Control-Expose-Headers", "Retry-After");
}

}  // namespace sightline
