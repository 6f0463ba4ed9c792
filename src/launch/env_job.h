// Joining a job described by torchrun-style environment variables: RANK,
// WORLD_SIZE, MASTER_ADDR, MASTER_PORT (LOCAL_RANK optional). Rank 0 listens
// at MASTER_ADDR:MASTER_PORT and every other rank connects there; the
// launcher passes no unique id, so the bootstrap's id is made from these.
#pragma once

#include <string>

#include "bootstrap.h"
#include "status.h"

namespace strata::launch {

// An integer environment variable in [minValue, maxValue]; INVALID_ARGUMENT
// naming the variable when it is unset or malformed.
Status envInt(const char* name, long minValue, long maxValue, long* out);

// The secret of an env job: STRATA_SECRET, else the contents of
// STRATA_SECRET_FILE (`*given` true); else, with `*given` false, one derived
// from `published` (what the launcher tells every rank), which only keeps
// other jobs out.
Status envSecret(const std::string& published, security::Secret* out, bool* given);

// This process's bootstrap configuration from the variables above.
Status envJobConfig(boot::BootstrapConfig* config);

}  // namespace strata::launch
