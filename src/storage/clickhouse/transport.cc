#include "storage/clickhouse/transport.h"

#include "storage/clickhouse/chdb_transport.h"
#include "storage/clickhouse/http_client.h"

namespace sightline::clickhouse {

Result<Endpoint> ParseTarget(std::string_view url) {
  constexpr std::string_view kChdb = "chdb://";
  if (!url.starts_with(kChdb)) return ParseUrl(url);
  std::string_view path = url.substr(kChdb.size());
  while (path.size() > 1 && path.ends_with('/')) path.remove_suffix(1);
  if (!path.starts_with('/') || path.find('?') != std::string_view::npos) {
    return Status::InvalidArgument("clickhouse url must be chdb:///absolute/data/dir: " + std::string(url));
  }
  Endpoint e;
  e.host.clear();
  e.port.clear();
  e.chdb_path = std::string(path);
  return e;
}

std::unique_ptr<Transport> Connect(const Endpoint& endpoint) {
  if (!endpoint.chdb_path.empty()) return ConnectChdb(endpoint);
  return std::make_unique<Connection>(endpoint);
}

}  // namespace sightline::clickhouse
