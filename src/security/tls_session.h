// TLS 1.3 over a socket that is already connected and authenticated by
// strata's own handshake (STRATA_TLS=1): the bootstrap's tree and the tcp
// transport's connections. No certificates: both ends hold the job's secret,
// and the session's key is an external pre-shared key derived from it
// (HMAC-SHA256 of a fixed label), so a peer without the secret fails the
// handshake (its PSK binder does not verify) and the session authenticates
// both ends as well as encrypting. One cipher suite, TLS_AES_128_GCM_SHA256
// (AES-NI and carry-less multiply on every x86 this runs on); the key
// exchange adds ECDHE (psk_dhe_ke), so a secret that leaks later does not
// decrypt recorded traffic.
//
// The session does not own the socket: whoever owns the fd keeps it (and
// closes it after destroying the session). All I/O on the fd goes through
// send/recv with MSG_DONTWAIT | MSG_NOSIGNAL, so the fd's own flags do not
// matter and a closed peer is an error code, never SIGPIPE.
//
// Not thread-safe: one thread at a time may call into a session (the tcp
// transport's two connectors of a link are driven under their channel's lock).
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <memory>
#include <string>
#include <vector>

#include "secret.h"
#include "status.h"

typedef struct ssl_st SSL;

namespace strata::security {

enum class TlsRole {
  kClient,  // the end that connected
  kServer,  // the end that accepted
};

class TlsSession {
 public:
  // A session on `fd` that has not shaken hands yet. `peer` names the other
  // end in every error ("rank 3 on node7").
  static Status create(int fd, TlsRole role, const Secret& secret, std::string peer,
                       std::unique_ptr<TlsSession>* out);
  // create() and handshake(): a session ready to carry data, or an error.
  static Status start(int fd, TlsRole role, const Secret& secret, std::string peer, double deadline,
                      std::unique_ptr<TlsSession>* out);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Blocking handshake until `deadline` (nowSeconds() clock). On a wrong
  // secret both ends fail with an error naming the peer; on the deadline,
  // STRATA_ERR_TIMEOUT.
  Status handshake(double deadline);
  // Handshakes of several sessions at once, over one poll: each end of a
  // mesh may take its peers in any order without waiting on one another.
  static Status handshakeAll(const std::vector<TlsSession*>& sessions, double deadline);

  // Blocking transfers of exactly `bytes` until `deadline` (the bootstrap's
  // sendAll/recvAll).
  Status sendAll(const void* data, size_t bytes, double deadline);
  Status recvAll(void* data, size_t bytes, double deadline);

  // Non-blocking, with send/recv's results: bytes moved (> 0); 0 when the
  // peer closed the connection (read only); -1 with errno EAGAIN when
  // nothing can move now, or another errno on failure (EPROTO for a TLS
  // error, whose text lastError() holds). After a write returned -1/EAGAIN
  // the next write must offer the same bytes again first (TLS may already
  // have encrypted them; the buffer may move). A write returns as soon as a
  // TLS record (16 KiB of plaintext) has gone out, like a partial send();
  // call again for more.
  ssize_t read(void* data, size_t bytes);
  ssize_t write(const void* data, size_t bytes);
  // write() over a gather list: small leading pieces (a header before its
  // payload) are packed into one record instead of a record each.
  ssize_t writev(const iovec* iov, int iovcnt);

  // Decrypted bytes that OpenSSL holds and read() would return without
  // touching the socket.
  size_t pending() const;
  // Whether OpenSSL holds anything unread (decrypted bytes or raw records
  // read ahead): a reader that sleeps on the socket while this is true may
  // stall, since the socket need not become readable again. After read()
  // returned -1/EAGAIN nothing usable is buffered (at most the start of a
  // record whose rest the socket has yet to deliver), so sleeping on the
  // socket is then safe.
  bool hasBuffered() const;

  // Sends close_notify if the connection is healthy (best effort, never
  // blocks); the peer's read() then returns 0. The destructor does it too.
  void close();

  int fd() const { return fd_; }
  const std::string& peer() const { return peer_; }
  // OpenSSL's reasons for the last failed call.
  const std::string& lastError() const { return lastError_; }

 private:
  TlsSession(int fd, TlsRole role, std::string peer);
  // After an SSL call returned `ret` <= 0: -1 with errno set (EAGAIN for
  // WANT_READ/WANT_WRITE, which also sets want_), or 0 on close_notify/EOF.
  ssize_t ioResult(int ret);
  // One non-blocking handshake step: 1 done, 0 waits for want_, -1 failed.
  int stepHandshake();
  Status waitFor(short events, double deadline, const char* what);
  Status handshakeFailed();

  SSL* ssl_ = nullptr;
  int fd_;
  TlsRole role_;
  std::string peer_;
  uint8_t psk_[32];
  bool handshakeDone_ = false;
  bool broken_ = false;  // a fatal error: no close_notify, no more I/O
  short want_ = 0;       // POLLIN or POLLOUT: what the last -1/EAGAIN waits for
  std::string lastError_;
  std::unique_ptr<char[]> gather_;  // writev's packed record

  friend struct TlsCallbacks;
};

}  // namespace strata::security
