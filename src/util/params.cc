#include "params.h"

#include <cstdlib>
#include <mutex>
#include <sstream>
#include <utility>

namespace strata::params {
namespace {

template <typename T>
T parse(const char* text, const T& fallback);

template <>
int64_t parse(const char* text, const int64_t& fallback) {
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 0);
  return (end != text && *end == '\0') ? static_cast<int64_t>(v) : fallback;
}

template <>
double parse(const char* text, const double& fallback) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  return (end != text && *end == '\0') ? v : fallback;
}

template <>
std::string parse(const char* text, const std::string&) {
  return text;
}

struct Values {
#define STRATA_PARAM(accessor, envName, type, defaultValue, help) type accessor = defaultValue;
#include "params.def"
#undef STRATA_PARAM

  // Writes only the values that changed: another communicator's init may be
  // reading them on its own thread (a non-blocking init, or several inits in
  // one group), and an unchanged environment then writes nothing.
  void read() {
#define STRATA_PARAM(accessor, envName, type, defaultValue, help)                      \
  {                                                                                    \
    const char* s = std::getenv(envName);                                              \
    type v = (s && *s) ? parse<type>(s, type(defaultValue)) : type(defaultValue);      \
    if (!(v == accessor)) accessor = std::move(v);                                     \
  }
#include "params.def"
#undef STRATA_PARAM
  }
};

std::once_flag gOnce;
Values gValues;

Values& values() {
  std::call_once(gOnce, [] { gValues.read(); });
  return gValues;
}

template <typename T>
std::string show(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

#define STRATA_PARAM(accessor, envName, type, defaultValue, help) \
  const type& accessor() { return values().accessor; }
#include "params.def"
#undef STRATA_PARAM

void reload() { values().read(); }

std::vector<ParamInfo> all() {
  std::vector<ParamInfo> out;
#define STRATA_PARAM(accessor, envName, type, defaultValue, help) \
  out.push_back({envName, #type, show(type(defaultValue)), help});
#include "params.def"
#undef STRATA_PARAM
  return out;
}

}  // namespace strata::params
