#pragma once

namespace sightline {

//! The production SQLite settings of DESIGN.md: WAL, synchronous=NORMAL, 8 KiB
//! pages, 256 MiB page cache, reads through a 256 MiB memory map. One copy, so
//! the state store and `sightline bench oltp` (which reproduces a published
//! table measured with exactly these) cannot drift apart. page_size comes first
//! because it only takes effect before the database switches to WAL.
inline constexpr const char* kSqliteProductionPragmas =
    "PRAGMA page_size=8192; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
    "PRAGMA cache_size=-262144; PRAGMA mmap_size=268435456;";

}  // namespace sightline
