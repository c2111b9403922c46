#pragma once

// Test support: a fresh directory under the system temp dir, removed with
// everything in it when the object goes away. Unique per call (mkdtemp), so
// tests of one binary, or two binaries at once, never share one.

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace sightline::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "sightline-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  //! Empty when the directory could not be made.
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace sightline::testing
