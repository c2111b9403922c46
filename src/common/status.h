#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "common/assert.h"

namespace sightline {

//! What went wrong, coarse enough to map onto HTTP and gRPC codes in one place
//! (HttpStatusFor / GrpcCodeFor). Retryable codes are kUnavailable and
//! kResourceExhausted: a client may send the same data again later.
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // malformed payload or parameter: 400, never retried
  kUnauthenticated,    // missing or wrong token: 401
  kPermissionDenied,   // a valid credential that may not do this: 403
  kNotFound,           // 404
  kPayloadTooLarge,    // body over the configured limit: 413
  kUnsupportedMedia,   // content type or encoding we do not speak: 415
  kResourceExhausted,  // a client sent too much too fast: 429 + Retry-After
  kUnavailable,        // overload or shutting down: 503 + Retry-After
  kDeadlineExceeded,   // a request or query ran past its deadline
  kCancelled,          // the client went away
  kInternal,           // a bug or an engine failure: 500
  kIoError,            // the disk or the engine failed: 500
};

//! A value-typed error. Cheap when ok (no allocation).
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status Unauthenticated(std::string m) { return {StatusCode::kUnauthenticated, std::move(m)}; }
  static Status PermissionDenied(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status PayloadTooLarge(std::string m) { return {StatusCode::kPayloadTooLarge, std::move(m)}; }
  static Status UnsupportedMedia(std::string m) { return {StatusCode::kUnsupportedMedia, std::move(m)}; }
  static Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status DeadlineExceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
  static Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  //! True when sending the same data again later may succeed.
  bool retryable() const { return code_ == StatusCode::kUnavailable || code_ == StatusCode::kResourceExhausted; }
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

namespace internal {
//! Prints the status to stderr and aborts: reading the value of an error Result is a bug.
[[noreturn]] void ResultValueOfError(const Status& status);
}  // namespace internal

//! A value or the Status saying why there is none (abseil StatusOr).
//! Reading the value of an error (value(), *, ->) is a bug and aborts with the
//! status in every build; check ok() first, or use SL_ASSIGN_OR_RETURN.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  //! `status` must be an error; an OK status without a value is a bug (it
  //! becomes an Internal error in release builds, as abseil's StatusOr does).
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    SL_DCHECK(!status_.ok());
    if (status_.ok()) status_ = Status::Internal("Result constructed from an OK status without a value");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return Checked(); }
  const T& value() const& { return Checked(); }
  T&& value() && { return std::move(Checked()); }
  T* operator->() { return &Checked(); }
  const T* operator->() const { return &Checked(); }
  T& operator*() & { return Checked(); }
  const T& operator*() const& { return Checked(); }
  T&& operator*() && { return std::move(Checked()); }

 private:
  T& Checked() {
    if (!value_.has_value()) internal::ResultValueOfError(status_);
    return *value_;
  }
  const T& Checked() const {
    if (!value_.has_value()) internal::ResultValueOfError(status_);
    return *value_;
  }

  Status status_;
  std::optional<T> value_;
};

const char* StatusCodeName(StatusCode code);
//! The one place error codes become HTTP status codes (OTLP/HTTP and the API).
int HttpStatusFor(StatusCode code);
//! The one place error codes become gRPC status codes (google.rpc.Code), as
//! the OTLP specification maps them: UNAVAILABLE (retryable) for overload and
//! shutdown, INVALID_ARGUMENT for malformed data, UNAUTHENTICATED for a bad token.
int GrpcCodeFor(StatusCode code);

}  // namespace sightline

#define SL_RETURN_IF_ERROR(expr)      \
  do {                                \
    ::sightline::Status _st = (expr); \
    if (!_st.ok()) return _st;        \
  } while (0)

#define SL_STATUS_CONCAT_INNER(a, b) a##b
#define SL_STATUS_CONCAT(a, b) SL_STATUS_CONCAT_INNER(a, b)

//! `SL_ASSIGN_OR_RETURN(auto x, F());` evaluates F() (a Result<T>); on an
//! error returns its Status from the enclosing function (which returns Status
//! or any Result<U>), otherwise moves the value into `lhs`, which may be a
//! declaration or an existing variable. Expands to several statements, so it
//! cannot be the body of an unbraced if. `lhs` cannot contain an unparenthesised
//! comma (declare `std::pair<A, B> p;` first, then assign to `p`).
#define SL_ASSIGN_OR_RETURN(lhs, expr) SL_ASSIGN_OR_RETURN_IMPL(SL_STATUS_CONCAT(_sl_result_, __LINE__), lhs, expr)
#define SL_ASSIGN_OR_RETURN_IMPL(result, lhs, expr) \
  auto result = (expr);                             \
  if (!result.ok()) return result.status();         \
  lhs = std::move(result).value()
