#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace sightline {

//! What went wrong, coarse enough to map onto HTTP and gRPC codes in one place
//! (HttpStatusFor / GrpcCodeFor). Retryable codes are kUnavailable and
//! kResourceExhausted: a client may send the same data again later.
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // malformed payload or parameter: 400, never retried
  kUnauthenticated,    // missing or wrong token: 401
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
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status PayloadTooLarge(std::string m) { return {StatusCode::kPayloadTooLarge, std::move(m)}; }
  static Status UnsupportedMedia(std::string m) { return {StatusCode::kUnsupportedMedia, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status DeadlineExceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
  static Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  //! True when sending the same data again later may succeed.
  bool retryable() const {
    return code_ == StatusCode::kUnavailable || code_ == StatusCode::kResourceExhausted;
  }
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

//! A value or the Status saying why there is none (abseil StatusOr).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }

 private:
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

#define SL_RETURN_IF_ERROR(expr)               \
  do {                                         \
    ::sightline::Status _st = (expr);          \
    if (!_st.ok()) return _st;                 \
  } while (0)
