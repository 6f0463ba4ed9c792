#include "status.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "log.h"

namespace strata {

const std::string& Status::noMessage() {
  static const std::string empty;  // a function's static: usable at any time of start-up or exit
  return empty;
}
namespace {

std::string vformat(const char* fmt, va_list ap) {
  char buf[1024];
  vsnprintf(buf, sizeof(buf), fmt, ap);
  return buf;
}

}  // namespace

std::string formatText(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string text = vformat(fmt, ap);
  va_end(ap);
  return text;
}

Status makeError(strata_result_t code, const char* file, int line, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  if (log::enabled(log::Level::Warn, log::COLL))
    log::write(log::Level::Warn, log::COLL, file, line, "%s: %s", strata_result_string(code),
               msg.c_str());
  return Status(code, std::move(msg));
}

Status makeErrorQuiet(strata_result_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  return Status(code, std::move(msg));
}

std::string errnoText(int err) {
  char buf[256];
  std::string text = strerror_r(err, buf, sizeof(buf));  // GNU variant returns the text
  // Whichever call ran out, the fix is the same.
  if (err == EMFILE || err == ENFILE) text += " (out of file descriptors: raise ulimit -n)";
  return text;
}

}  // namespace strata

extern "C" const char* strata_result_string(strata_result_t result) {
  switch (result) {
    case STRATA_SUCCESS: return "success";
    case STRATA_ERR_INVALID_ARGUMENT: return "invalid argument";
    case STRATA_ERR_INVALID_USAGE: return "invalid usage";
    case STRATA_ERR_SYSTEM: return "system error";
    case STRATA_ERR_INTERNAL: return "internal error";
    case STRATA_ERR_REMOTE: return "remote error";
    case STRATA_ERR_TIMEOUT: return "timeout";
    case STRATA_IN_PROGRESS: return "in progress";
    case STRATA_ERR_CUDA: return "CUDA error";
    case STRATA_ERR_REVOKED: return "revoked";
  }
  return "unknown result code";
}
