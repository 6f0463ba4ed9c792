// Status: a result code plus the message a user will read. Success carries no
// message and costs nothing; an error is logged once, where it is first made
// (the place that knows the syscall, errno, peer and value), and then passed up
// unchanged with STRATA_CHECK.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "strata/strata.h"

namespace strata {

class Status {
 public:
  Status() = default;
  Status(const Status& other)
      : code_(other.code_), message_(other.message_ ? std::make_unique<std::string>(*other.message_) : nullptr) {}
  Status(Status&&) noexcept = default;
  Status& operator=(const Status& other) {
    if (this != &other) *this = Status(other);
    return *this;
  }
  Status& operator=(Status&&) noexcept = default;
  static Status ok() { return Status(); }

  bool isOk() const { return code_ == STRATA_SUCCESS; }
  strata_result_t code() const { return code_; }
  const std::string& message() const { return message_ ? *message_ : noMessage(); }

 private:
  friend Status makeError(strata_result_t, const char*, int, const char*, ...);
  friend Status makeErrorQuiet(strata_result_t, const char*, ...);
  Status(strata_result_t code, std::string message)
      : code_(code), message_(new std::string(std::move(message))) {}

  static const std::string& noMessage();
  strata_result_t code_ = STRATA_SUCCESS;
  // Held by pointer so that a success, which every call on the fast path
  // builds and drops several times, is two words and no string.
  std::unique_ptr<std::string> message_;
};

// Builds an error and logs it at WARN with file:line. Prefer the macros below.
Status makeError(strata_result_t code, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

// Builds an error without logging: for argument validation, where the caller
// made the mistake and reads it from the returned code and message.
Status makeErrorQuiet(strata_result_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// "strerror(errno)" text for messages, thread-safe.
std::string errnoText(int err);

// printf into a string (at most 1 KiB), for messages and reports.
std::string formatText(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace strata

#define STRATA_ERROR(code, ...) ::strata::makeError(code, __FILE__, __LINE__, __VA_ARGS__)
#define STRATA_INVALID_ARG(...) ::strata::makeErrorQuiet(STRATA_ERR_INVALID_ARGUMENT, __VA_ARGS__)

#define STRATA_CHECK(expr)                   \
  do {                                       \
    ::strata::Status strataStatus_ = (expr); \
    if (!strataStatus_.isOk()) return strataStatus_; \
  } while (0)
