#include "env_job.h"

#include <sys/socket.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "log.h"
#include "socket.h"

namespace strata::launch {

Status envInt(const char* name, long minValue, long maxValue, long* out) {
  const char* text = std::getenv(name);
  if (!text || !*text) return STRATA_INVALID_ARG("environment variable %s is not set", name);
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < minValue || v > maxValue)
    return STRATA_INVALID_ARG("environment variable %s='%s' is not an integer in %ld..%ld", name,
                              text, minValue, maxValue);
  *out = v;
  return Status::ok();
}

Status envJobConfig(boot::BootstrapConfig* config) {
  long size = 0, rank = 0, port = 0;
  STRATA_CHECK(envInt("WORLD_SIZE", 1, INT_MAX, &size));
  STRATA_CHECK(envInt("RANK", 0, size - 1, &rank));
  STRATA_CHECK(envInt("MASTER_PORT", 1, 65535, &port));
  const char* masterAddr = std::getenv("MASTER_ADDR");
  if (!masterAddr || !*masterAddr) return STRATA_INVALID_ARG("environment variable MASTER_ADDR is not set");
  // LOCAL_RANK is optional (shared memory is found from host fingerprints),
  // but a malformed one points at a broken launch script: say so.
  long localRank = 0;
  if (std::getenv("LOCAL_RANK")) STRATA_CHECK(envInt("LOCAL_RANK", 0, INT_MAX, &localRank));

  SockAddr master;
  STRATA_CHECK(net::resolve(masterAddr, static_cast<int>(port), &master));
  boot::BootstrapConfig c;
  std::memset(&c.id, 0, sizeof(c.id));
  c.rank = static_cast<int>(rank);
  c.nranks = static_cast<int>(size);
  // Rank 0 listens on every address of MASTER_ADDR's family, so a hostname
  // that resolves to another of its addresses still reaches it.
  SockAddr bindAddr = master;
  if (rank == 0) {
    const char* any = master.get()->sa_family == AF_INET6 ? "::" : "0.0.0.0";
    STRATA_CHECK(net::resolve(any, static_cast<int>(port), &bindAddr));
  }
  std::memcpy(&c.id.root, &bindAddr.storage, bindAddr.len);
  c.id.rootLen = bindAddr.len;
  // Launchers pass no secret: derive one from what every rank of this job
  // (and no stray process) is told, so at least foreign jobs are kept out.
  std::string job = std::string(masterAddr) + "|" + std::to_string(port) + "|" + std::to_string(size);
  if (const char* run = std::getenv("TORCHELASTIC_RUN_ID")) job += std::string("|") + run;
  uint64_t h[2] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
  for (char ch : job)
    for (uint64_t& x : h) x = (x ^ static_cast<uint8_t>(ch)) * 0x100000001b3ull;
  static_assert(sizeof(h) == boot::kSecretBytes, "two 64-bit hashes fill the secret");
  std::memcpy(c.id.secret, h, sizeof(h));
  STRATA_INFO(INIT, "env init: rank %ld of %ld (local rank %ld), master %s", rank, size, localRank,
              toString(master).c_str());
  *config = c;
  return Status::ok();
}

}  // namespace strata::launch
