#pragma once

#include <cstddef>
#include <string_view>

namespace sightline {

//! One file of the built web UI, compiled into the binary.
struct UiAsset {
  const char* path;  // "/index.html", "/assets/index-abc.js"
  const char* content_type;
  const unsigned char* data;
  size_t size;
  //! The same bytes gzip-compressed at build time (scripts/build_ui.sh), or
  //! nullptr where that would not be smaller.
  const unsigned char* gzip_data;
  size_t gzip_size;
};

//! The asset at `path`, or nullptr. Generated at build time from ui/dist.
const UiAsset* FindUiAsset(std::string_view path);

}  // namespace sightline
