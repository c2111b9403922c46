#include "common/status.h"

#include <cstdio>
#include <cstdlib>

namespace sightline {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kUnauthenticated: return "UNAUTHENTICATED";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kPayloadTooLarge: return "PAYLOAD_TOO_LARGE";
    case StatusCode::kUnsupportedMedia: return "UNSUPPORTED_MEDIA_TYPE";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kIoError: return "IO_ERROR";
  }
  return "UNKNOWN";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kUnauthenticated: return 401;
    case StatusCode::kPermissionDenied: return 403;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kPayloadTooLarge: return 413;
    case StatusCode::kUnsupportedMedia: return 415;
    case StatusCode::kResourceExhausted: return 429;
    case StatusCode::kUnavailable: return 503;
    case StatusCode::kDeadlineExceeded: return 408;  // not sent for OTLP: a late body is a retryable 503
    case StatusCode::kCancelled: return 499;
    case StatusCode::kInternal: return 500;
    case StatusCode::kIoError: return 500;
  }
  return 500;
}

int GrpcCodeFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return 0;                 // OK
    case StatusCode::kCancelled: return 1;          // CANCELLED
    case StatusCode::kInvalidArgument: return 3;    // INVALID_ARGUMENT
    case StatusCode::kUnsupportedMedia: return 3;   // INVALID_ARGUMENT
    case StatusCode::kDeadlineExceeded: return 4;   // DEADLINE_EXCEEDED
    case StatusCode::kNotFound: return 5;           // NOT_FOUND
    case StatusCode::kPayloadTooLarge: return 8;    // RESOURCE_EXHAUSTED
    case StatusCode::kResourceExhausted: return 8;  // RESOURCE_EXHAUSTED
    case StatusCode::kInternal: return 13;          // INTERNAL
    case StatusCode::kIoError: return 13;           // INTERNAL
    case StatusCode::kUnavailable: return 14;       // UNAVAILABLE
    case StatusCode::kUnauthenticated: return 16;   // UNAUTHENTICATED
    case StatusCode::kPermissionDenied: return 7;   // PERMISSION_DENIED
  }
  return 2;  // UNKNOWN
}

namespace internal {

void ResultValueOfError(const Status& status) {
  std::fprintf(stderr, "Result::value() of an error: %s\n", status.ToString().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace internal

}  // namespace sightline
