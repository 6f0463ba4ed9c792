// What the security tests share: a secret made from a seed (two seeds, two
// jobs) and a listening socket on loopback.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

#include "secret.h"
#include "socket.h"

namespace strata::security {

inline Secret secretOf(uint8_t seed) {
  Secret s;
  for (size_t i = 0; i < kSecretBytes; ++i) s.bytes[i] = static_cast<uint8_t>(seed * 31 + i);
  return s;
}

// A listener on 127.0.0.1, any free port.
struct Listener {
  SockAddr addr;
  int fd = -1;
  Listener() {
    EXPECT_TRUE(net::resolve("127.0.0.1", 0, &addr).isOk());
    EXPECT_TRUE(net::listenOn(&addr, &fd).isOk());
  }
  ~Listener() {
    if (fd >= 0) close(fd);
  }
  int accept() const { return ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
};

}  // namespace strata::security
