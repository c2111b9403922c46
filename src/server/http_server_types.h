#pragma once

#include <string>
#include <utility>
#include <vector>

namespace sightline {

//! A response as the HTTP layer sends it.
struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  bool close = false;  // send Connection: close and end the connection
};

}  // namespace sightline
