#pragma once

// Debug asserts for bugs, never for user input or engine failures (those are a
// Status). DuckDB's D_ASSERT: checked in Debug builds (the ASan, TSan and unit
// test builds), compiled out where NDEBUG is set (release), where the condition
// is not evaluated at all, so it may be as expensive as it needs to be.
//
//   SL_DCHECK(rows <= capacity_);

namespace sightline::internal {

//! Prints "file:line: check failed: expr" to stderr and aborts.
[[noreturn]] void DCheckFailed(const char* expr, const char* file, int line);

}  // namespace sightline::internal

#ifdef NDEBUG
// sizeof keeps the expression type-checked (and its variables used) without evaluating it.
#define SL_DCHECK(cond) static_cast<void>(sizeof(static_cast<bool>(cond)))
#else
#define SL_DCHECK(cond) \
  (static_cast<bool>(cond) ? static_cast<void>(0) : ::sightline::internal::DCheckFailed(#cond, __FILE__, __LINE__))
#endif
