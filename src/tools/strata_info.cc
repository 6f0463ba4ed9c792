// strata-info: what this build of strata is and how it can be configured.
//   strata-info             version, reduction instruction set, transports
//   strata-info --params    every STRATA_* variable as a Markdown table (the
//                           README's table is this output, checked by a test)
#include <cstdio>
#include <cstring>
#include <string>

#include "params.h"
#include "kernels.h"
#include "strata/strata.h"
#include "transport.h"

namespace {

std::string escapeCell(const std::string& text) {
  std::string out;
  for (char c : text) out += (c == '|') ? std::string("\\|") : std::string(1, c);
  return out;
}

void printParams() {
  std::printf("| Variable | Type | Default | Meaning |\n| --- | --- | --- | --- |\n");
  for (const auto& p : strata::params::all()) {
    std::string type = p.type;
    if (type == "int64_t") type = "integer";
    std::printf("| `%s` | %s | `%s` | %s |\n", p.name, type.c_str(),
                p.defaultValue.empty() ? "(empty)" : p.defaultValue.c_str(), escapeCell(p.help).c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--params") == 0) {
    printParams();
    return 0;
  }
  if (argc > 1) {
    std::fprintf(stderr, "usage: %s [--params]\n", argv[0]);
    return 2;
  }
  std::printf("strata %d.%d.%d\n", STRATA_VERSION_MAJOR, STRATA_VERSION_MINOR, STRATA_VERSION_PATCH);
  std::printf("reduction kernels: %s\n", strata::kernels::isaName(strata::kernels::selectedIsa()));
  std::printf("transports:");
  strata::topo::HostInfo self = strata::topo::probeHost();
  for (const auto& t : strata::makeTransports(&self)) std::printf(" %s", t->name());
  if (self.rdma[0]) std::printf(" (ib on %s)", self.rdma);
  std::printf("\n");
  return 0;
}
