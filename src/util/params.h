// Typed, cached accessors for every entry of params.def. Values are read from
// the environment on first use and again by reload() (called at each
// communicator init, so a process can change its environment between comms).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::params {

using string = std::string;

#define STRATA_PARAM(accessor, envName, type, defaultValue, help) const type& accessor();
#include "params.def"
#undef STRATA_PARAM

struct ParamInfo {
  const char* name;
  const char* type;
  std::string defaultValue;
  std::string help;
};

// Re-reads every variable from the environment.
void reload();

// Every parameter, in registry order (for strata-info --params and the README).
std::vector<ParamInfo> all();

}  // namespace strata::params
