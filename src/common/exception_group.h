#pragma once

// The message part of an exception group's key. Exceptions group by type and
// this normalised message, so messages that differ only in the ids and numbers
// they carry ("user 12345 not found", "user 67890 not found") share one group.
// Computed once at ingest for span-event and log-record exceptions alike
// (spans.exception_group, logs.exception_group); docs/API.md lists the rules.

#include <string>
#include <string_view>

namespace sightline {

//! `message` with, token by token (a token is a run of ASCII letters and
//! digits; everything else is kept as is):
//!  - a UUID (8-4-4-4-12 hex digits)                       -> `<uuid>`
//!  - 0x followed by hex digits                            -> `<hex>`
//!  - 8 or more hex digits with at least one digit and one
//!    letter a-f (trace ids, hashes, object ids)           -> `<hex>`
//!  - every other run of digits, with a decimal part when
//!    one follows (`42`, `3.14`, the `7` of `worker7`)    -> `<n>`
//! Pure and deterministic: the same message always gives the same text, on
//! every engine and in every version that keeps these rules.
std::string NormalizeExceptionMessage(std::string_view message);

}  // namespace sightline
