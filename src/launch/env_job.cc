#include "env_job.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "log.h"
#include "params.h"
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

namespace {

// The secret file's contents, trailing whitespace trimmed. Symlinks are
// followed: orchestrators mount secrets through them.
Status readSecretFile(const std::string& path, std::string* text) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return STRATA_INVALID_ARG("STRATA_SECRET_FILE='%s' cannot be opened: %s", path.c_str(), errnoText(errno).c_str());
  struct stat st;
  if (fstat(fd, &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)))
    STRATA_WARN(INIT, "STRATA_SECRET_FILE='%s' is readable by other users (mode %o): chmod 600 it", path.c_str(),
                static_cast<unsigned>(st.st_mode & 07777));
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof(buf));
  close(fd);
  if (n < 0) return STRATA_INVALID_ARG("STRATA_SECRET_FILE='%s' cannot be read: %s", path.c_str(), errnoText(errno).c_str());
  text->assign(buf, static_cast<size_t>(n));
  while (!text->empty() && std::isspace(static_cast<unsigned char>(text->back()))) text->pop_back();
  return Status::ok();
}

}  // namespace

Status envSecret(const std::string& published, security::Secret* out, bool* given) {
  *given = true;
  if (!params::secret().empty()) return security::secretFromText(params::secret(), "STRATA_SECRET", out);
  if (!params::secretFile().empty()) {
    std::string text;
    STRATA_CHECK(readSecretFile(params::secretFile(), &text));
    return security::secretFromText(text, ("STRATA_SECRET_FILE='" + params::secretFile() + "'").c_str(), out);
  }
  // No secret: derive one from what every rank of this job (and no stray
  // process of another job) is told, which keeps foreign jobs out but not
  // an attacker who reads the launcher's variables.
  *given = false;
  std::string text = "strata env job|" + published;
  return security::secretFromText(text, "the launcher's variables", out);
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
  bool given = false;
  std::string job = std::string(masterAddr) + "|" + std::to_string(port) + "|" + std::to_string(size);
  if (const char* run = std::getenv("TORCHELASTIC_RUN_ID")) job += std::string("|") + run;
  STRATA_CHECK(envSecret(job, &c.id.secret, &given));
  // With a secret, rank 0 listens on every address of MASTER_ADDR's family,
  // so a hostname that resolves to another of its addresses still reaches
  // it. Without one, it shows itself no further than it must.
  SockAddr bindAddr = master;
  if (rank == 0 && given) {
    const char* any = master.get()->sa_family == AF_INET6 ? "::" : "0.0.0.0";
    STRATA_CHECK(net::resolve(any, static_cast<int>(port), &bindAddr));
  }
  if (!given)
    STRATA_WARN(INIT,
                "no STRATA_SECRET or STRATA_SECRET_FILE: any process that reaches MASTER_ADDR:MASTER_PORT (%s) "
                "or this job's data ports can join it or inject data, since the secret is derived from what "
                "the launcher publishes. To close it, give every rank the same random secret, e.g. "
                "export STRATA_SECRET=$(openssl rand -hex 16) before launching%s",
                toString(master).c_str(), rank == 0 ? "; rank 0 listens only on MASTER_ADDR's address" : "");
  std::memcpy(&c.id.root, &bindAddr.storage, bindAddr.len);
  c.id.rootLen = bindAddr.len;
  STRATA_INFO(INIT, "env init: rank %ld of %ld (local rank %ld), master %s", rank, size, localRank,
              toString(master).c_str());
  *config = c;
  return Status::ok();
}

}  // namespace strata::launch
