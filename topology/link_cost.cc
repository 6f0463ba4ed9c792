#include "link_cost.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace strata {

Status parseLinkCost(const std::string& text, const char* var, LinkCost* out) {
  char* end = nullptr;
  const char* s = text.c_str();
  double lat = std::strtod(s, &end);
  double bw = 0, flight = 0;
  bool shared = false;
  bool ok = end != s && *end == ',';
  if (ok) {
    const char* b = end + 1;
    bw = std::strtod(b, &end);
    ok = end != b && (*end == '\0' || *end == ',') && lat >= 0 && bw > 0 && std::isfinite(lat) && std::isfinite(bw);
  }
  if (ok && *end == ',' && std::strcmp(end + 1, "shared") != 0) {
    const char* f = end + 1;
    flight = std::strtod(f, &end);
    ok = end != f && (*end == '\0' || *end == ',') && flight >= 0 && flight <= lat;
  }
  if (ok && *end == ',') {
    shared = std::strcmp(end + 1, "shared") == 0;
    ok = shared;
  }
  if (!ok)
    return makeErrorQuiet(STRATA_ERR_INVALID_ARGUMENT,
                          "%s='%s' is not 'latency_us,GB/s[,in_flight_us][,shared]' (latency >= 0, bandwidth > 0, "
                          "0 <= in-flight part <= latency)",
                          var, text.c_str());
  *out = {lat, bw, flight, shared};
  return Status::ok();
}

}  // namespace strata
