#include "tls_session.h"

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "clock.h"

namespace strata::security {
namespace {

// The key is HMAC-SHA256(secret, label): never the secret itself, and a key
// of its own should the secret ever MAC anything else.
constexpr char kPskLabel[] = "strata tls psk v1";
// What the client names its key by; the server knows no other.
constexpr unsigned char kIdentity[] = "strata-job-psk";
constexpr size_t kIdentityBytes = sizeof(kIdentity) - 1;
// TLS_AES_128_GCM_SHA256 on the wire (RFC 8446, B.4).
constexpr unsigned char kCipherId[] = {0x13, 0x01};
// TLS 1.3 carries at most this much plaintext per record.
constexpr size_t kRecordBytes = 16384;

// SSL_get_error reads this thread's error queue, which must be empty before
// each SSL call. Clearing it costs 16 slots' worth of work on every call
// (6% of a spinning receiver's time in a profile of 8-byte allreduces); it
// is almost always empty already, and peeking is cheap.
inline void emptyErrorQueue() {
  if (ERR_peek_error() != 0) ERR_clear_error();
}

int msUntil(double deadline) {
  double left = deadline - nowSeconds();
  return left <= 0 ? 0 : static_cast<int>(left * 1000) + 1;
}

// Every reason OpenSSL queued on this thread, oldest first; empties the queue.
std::string openSslErrors() {
  std::string text;
  while (unsigned long e = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(e);
    char buffer[256];
    if (!reason) {
      ERR_error_string_n(e, buffer, sizeof(buffer));
      reason = buffer;
    }
    if (text.find(reason) != std::string::npos) continue;
    text += (text.empty() ? "" : "; ") + std::string(reason);
  }
  return text;
}

// A socket BIO of our own, for two reasons: send() with MSG_NOSIGNAL (a
// write to a closed peer must be EPIPE, not SIGPIPE, which would kill a
// process that never asked for TLS's writes), and MSG_DONTWAIT whatever the
// fd's flags, so the owner's blocking or non-blocking use is left alone.
int fdOf(BIO* bio) { return static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(bio))); }

int bioWrite(BIO* bio, const char* data, int bytes) {
  BIO_clear_retry_flags(bio);
  ssize_t n;
  do {
    n = send(fdOf(bio), data, static_cast<size_t>(bytes), MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) BIO_set_retry_write(bio);
  return static_cast<int>(n);
}

int bioRead(BIO* bio, char* data, int bytes) {
  BIO_clear_retry_flags(bio);
  ssize_t n;
  do {
    n = recv(fdOf(bio), data, static_cast<size_t>(bytes), MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) BIO_set_retry_read(bio);
  if (n == 0) BIO_set_flags(bio, BIO_FLAGS_IN_EOF);  // OpenSSL asks BIO_CTRL_EOF
  return static_cast<int>(n);
}

long bioCtrl(BIO* bio, int cmd, long, void*) {
  switch (cmd) {
    case BIO_CTRL_FLUSH:
      return 1;
    case BIO_CTRL_EOF:
      return BIO_test_flags(bio, BIO_FLAGS_IN_EOF) ? 1 : 0;
    default:
      return 0;
  }
}

BIO_METHOD* socketMethod() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "strata socket");
    if (!m) return m;
    BIO_meth_set_write(m, bioWrite);
    BIO_meth_set_read(m, bioRead);
    BIO_meth_set_ctrl(m, bioCtrl);
    BIO_meth_set_create(m, [](BIO* bio) {
      BIO_set_init(bio, 1);
      return 1;
    });
    return m;
  }();
  return method;
}

// A TLS 1.3 session that holds only the external PSK and its suite: what
// OpenSSL's PSK callbacks hand over (they take ownership).
SSL_SESSION* pskSession(SSL* ssl, const uint8_t* key, size_t bytes) {
  const SSL_CIPHER* cipher = SSL_CIPHER_find(ssl, kCipherId);
  SSL_SESSION* session = cipher ? SSL_SESSION_new() : nullptr;
  if (session && SSL_SESSION_set1_master_key(session, key, bytes) && SSL_SESSION_set_cipher(session, cipher) &&
      SSL_SESSION_set_protocol_version(session, TLS1_3_VERSION))
    return session;
  SSL_SESSION_free(session);
  return nullptr;
}

}  // namespace

struct TlsCallbacks {
  // Client: offer the job's key under its one identity.
  static int useSession(SSL* ssl, const EVP_MD* md, const unsigned char** id, size_t* idBytes,
                        SSL_SESSION** session) {
    auto* self = static_cast<TlsSession*>(SSL_get_app_data(ssl));
    *session = nullptr;
    // A second call after a HelloRetryRequest names the digest the server
    // chose; ours is SHA-256, and with one suite allowed it always is.
    if (md && EVP_MD_get_type(md) != NID_sha256) return 1;
    *session = pskSession(ssl, self->psk_, sizeof(self->psk_));
    if (!*session) return 0;
    *id = kIdentity;
    *idBytes = kIdentityBytes;
    return 1;
  }

  // Server: the job's key for our identity, nothing for any other (the
  // handshake then fails: there are no certificates to fall back on).
  static int findSession(SSL* ssl, const unsigned char* identity, size_t bytes, SSL_SESSION** session) {
    auto* self = static_cast<TlsSession*>(SSL_get_app_data(ssl));
    *session = nullptr;
    if (bytes != kIdentityBytes || std::memcmp(identity, kIdentity, bytes) != 0) return 1;
    *session = pskSession(ssl, self->psk_, sizeof(self->psk_));
    return *session ? 1 : 0;
  }
};

namespace {

// One context for the process: the per-job key reaches the callbacks
// through each SSL's app data, so jobs with different secrets share it.
SSL_CTX* context() {
  static SSL_CTX* ctx = [] {
    SSL_CTX* c = SSL_CTX_new(TLS_method());
    if (!c) return c;
    bool ok = SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION) && SSL_CTX_set_max_proto_version(c, TLS1_3_VERSION) &&
              SSL_CTX_set_ciphersuites(c, "TLS_AES_128_GCM_SHA256");
    // No resumption: every connection is new, and tickets would be records
    // the server sends unasked after the handshake.
    SSL_CTX_set_num_tickets(c, 0);
    SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
    // A peer that closes without close_notify (it died, or shut the socket
    // down on abort) reads as a close, as with plain TCP: strata's messages
    // carry their lengths, so a truncation cannot pass unnoticed.
    SSL_CTX_set_options(c, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_TICKET);
    // Data path: write() returns after each record, like a partial send(),
    // and a retried write may come from another address (writev's packing).
    SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    // Read whatever the socket holds in one recv() instead of a header and a
    // body per record.
    SSL_CTX_set_read_ahead(c, 1);
    SSL_CTX_set_psk_use_session_callback(c, TlsCallbacks::useSession);
    SSL_CTX_set_psk_find_session_callback(c, TlsCallbacks::findSession);
    if (!ok) {
      SSL_CTX_free(c);
      c = nullptr;
    }
    return c;
  }();
  return ctx;
}

}  // namespace

TlsSession::TlsSession(int fd, TlsRole role, std::string peer) : fd_(fd), role_(role), peer_(std::move(peer)) {}

TlsSession::~TlsSession() {
  close();
  SSL_free(ssl_);
  OPENSSL_cleanse(psk_, sizeof(psk_));
}

Status TlsSession::create(int fd, TlsRole role, const Secret& secret, std::string peer,
                          std::unique_ptr<TlsSession>* out) {
  std::unique_ptr<TlsSession> s(new TlsSession(fd, role, std::move(peer)));
  ERR_clear_error();
  SSL_CTX* ctx = context();
  BIO_METHOD* method = socketMethod();
  s->ssl_ = ctx && method ? SSL_new(ctx) : nullptr;
  BIO* bio = s->ssl_ ? BIO_new(method) : nullptr;
  if (!bio) {
    std::string why = openSslErrors();
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "cannot set up TLS (OpenSSL %s) for the connection to %s: %s",
                        OpenSSL_version(OPENSSL_VERSION_STRING), s->peer_.c_str(),
                        why.empty() ? "no TLS 1.3 with TLS_AES_128_GCM_SHA256" : why.c_str());
  }
  BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(fd)));
  SSL_set_bio(s->ssl_, bio, bio);  // one reference, for both directions
  SSL_set_app_data(s->ssl_, s.get());
  const Mac key = mac(secret, {{kPskLabel, sizeof(kPskLabel) - 1}});
  static_assert(sizeof(key) == sizeof(s->psk_));
  std::memcpy(s->psk_, key.data(), sizeof(s->psk_));
  if (role == TlsRole::kClient)
    SSL_set_connect_state(s->ssl_);
  else
    SSL_set_accept_state(s->ssl_);
  *out = std::move(s);
  return Status::ok();
}

Status TlsSession::start(int fd, TlsRole role, const Secret& secret, std::string peer, double deadline,
                         std::unique_ptr<TlsSession>* out) {
  std::unique_ptr<TlsSession> s;
  STRATA_CHECK(create(fd, role, secret, std::move(peer), &s));
  STRATA_CHECK(s->handshake(deadline));
  *out = std::move(s);
  return Status::ok();
}

ssize_t TlsSession::ioResult(int ret) {
  const int kind = SSL_get_error(ssl_, ret);
  const int err = errno;
  switch (kind) {
    case SSL_ERROR_WANT_READ:
      want_ = POLLIN;
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_WANT_WRITE:
      want_ = POLLOUT;
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_ZERO_RETURN:
      lastError_ = "the peer closed the connection";
      ERR_clear_error();
      return 0;
    case SSL_ERROR_SYSCALL:
      broken_ = true;
      lastError_ = openSslErrors();
      if (err == 0 && lastError_.empty()) {
        lastError_ = "the peer closed the connection";
        return 0;
      }
      if (err != 0) lastError_ = errnoText(err) + (lastError_.empty() ? "" : " (" + lastError_ + ")");
      errno = err != 0 ? err : EPROTO;
      return -1;
    default:  // SSL_ERROR_SSL: the peer is not speaking our TLS, or a record failed its check
      broken_ = true;
      lastError_ = openSslErrors();
      if (lastError_.empty()) lastError_ = "TLS error " + std::to_string(kind);
      errno = EPROTO;
      return -1;
  }
}

ssize_t TlsSession::read(void* data, size_t bytes) {
  if (broken_) {
    errno = EPROTO;
    return -1;
  }
  if (bytes == 0) return 0;
  emptyErrorQueue();
  size_t got = 0;
  int r = SSL_read_ex(ssl_, data, bytes, &got);
  if (r == 1) return static_cast<ssize_t>(got);
  return ioResult(r);
}

ssize_t TlsSession::write(const void* data, size_t bytes) {
  if (broken_) {
    errno = EPROTO;
    return -1;
  }
  if (bytes == 0) return 0;
  emptyErrorQueue();
  size_t done = 0;
  int r = SSL_write_ex(ssl_, data, std::min<size_t>(bytes, INT_MAX), &done);
  if (r == 1) return static_cast<ssize_t>(done);
  return ioResult(r);
}

ssize_t TlsSession::writev(const iovec* iov, int iovcnt) {
  int first = 0;
  while (first < iovcnt && iov[first].iov_len == 0) ++first;
  if (first == iovcnt) return 0;
  // A piece of a record or more goes out from where it is; a small one is
  // packed with what follows it, so a 24-byte header does not cost a record
  // (and a send()) of its own. The same list offered again after -1/EAGAIN
  // packs the same bytes, as a retried write must.
  if (iov[first].iov_len >= kRecordBytes || first + 1 == iovcnt) return write(iov[first].iov_base, iov[first].iov_len);
  if (!gather_) gather_.reset(new char[kRecordBytes]);
  size_t packed = 0;
  for (int i = first; i < iovcnt && packed < kRecordBytes; ++i) {
    const size_t take = std::min(iov[i].iov_len, kRecordBytes - packed);
    std::memcpy(gather_.get() + packed, iov[i].iov_base, take);
    packed += take;
  }
  return write(gather_.get(), packed);
}

size_t TlsSession::pending() const { return static_cast<size_t>(SSL_pending(ssl_)); }

bool TlsSession::hasBuffered() const { return SSL_has_pending(ssl_) == 1; }

void TlsSession::close() {
  if (!ssl_ || !handshakeDone_ || broken_ || (SSL_get_shutdown(ssl_) & SSL_SENT_SHUTDOWN)) return;
  ERR_clear_error();
  (void)SSL_shutdown(ssl_);  // queues close_notify; a full socket drops it, the peer then reads EOF
  ERR_clear_error();
}

Status TlsSession::waitFor(short events, double deadline, const char* what) {
  for (;;) {
    pollfd p{fd_, events, 0};
    int n = poll(&p, 1, msUntil(deadline));
    if (n > 0) return Status::ok();
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      return STRATA_ERROR(STRATA_ERR_SYSTEM, "poll() on the TLS connection to %s failed: %s", peer_.c_str(),
                          errnoText(err).c_str());
    }
    return STRATA_ERROR(STRATA_ERR_TIMEOUT, "TLS %s %s timed out%s", what, peer_.c_str(),
                        handshakeDone_ ? "" : " (does it run with STRATA_TLS=1 too?)");
  }
}

Status TlsSession::handshakeFailed() {
  if (lastError_.empty()) lastError_ = "the peer closed the connection";
  return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                      "TLS handshake with %s failed: %s (do both ends run with STRATA_TLS=1 and hold the same "
                      "job secret?)",
                      peer_.c_str(), lastError_.c_str());
}

int TlsSession::stepHandshake() {
  emptyErrorQueue();
  int r = SSL_do_handshake(ssl_);
  if (r == 1) {
    handshakeDone_ = true;
    return 1;
  }
  ssize_t n = ioResult(r);
  return n < 0 && errno == EAGAIN ? 0 : -1;
}

Status TlsSession::handshake(double deadline) { return handshakeAll({this}, deadline); }

Status TlsSession::handshakeAll(const std::vector<TlsSession*>& sessions, double deadline) {
  std::vector<TlsSession*> left;
  for (TlsSession* s : sessions)
    if (!s->handshakeDone_) left.push_back(s);
  std::vector<pollfd> fds;
  while (!left.empty()) {
    for (size_t i = 0; i < left.size();) {
      TlsSession* s = left[i];
      if (s->broken_) return s->handshakeFailed();
      int r = s->stepHandshake();
      if (r < 0) return s->handshakeFailed();
      if (r == 1) {
        left[i] = left.back();
        left.pop_back();
      } else {
        ++i;
      }
    }
    if (left.empty()) break;
    fds.clear();
    for (TlsSession* s : left) fds.push_back({s->fd_, s->want_, 0});
    int n = poll(fds.data(), fds.size(), msUntil(deadline));
    if (n < 0 && errno != EINTR) {
      int err = errno;
      return STRATA_ERROR(STRATA_ERR_SYSTEM, "poll() during TLS handshakes failed: %s", errnoText(err).c_str());
    }
    if (n == 0 && nowSeconds() >= deadline) {
      std::string names;
      for (TlsSession* s : left) names += (names.empty() ? "" : ", ") + s->peer_;
      return STRATA_ERROR(STRATA_ERR_TIMEOUT,
                          "no TLS handshake from %s before the deadline (does it run with STRATA_TLS=1 too?)",
                          names.c_str());
    }
  }
  return Status::ok();
}

Status TlsSession::sendAll(const void* data, size_t bytes, double deadline) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = write(p, bytes);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EAGAIN) {
      STRATA_CHECK(waitFor(want_, deadline, "send to"));
      continue;
    }
    return STRATA_ERROR(STRATA_ERR_REMOTE, "TLS connection to %s failed while sending: %s", peer_.c_str(),
                        lastError_.c_str());
  }
  return Status::ok();
}

Status TlsSession::recvAll(void* data, size_t bytes, double deadline) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = read(p, bytes);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EAGAIN) {
      STRATA_CHECK(waitFor(want_, deadline, "receive from"));
      continue;
    }
    if (n == 0)
      return STRATA_ERROR(STRATA_ERR_REMOTE, "%s closed its TLS connection (did it exit or fail?)", peer_.c_str());
    return STRATA_ERROR(STRATA_ERR_REMOTE, "TLS connection to %s failed while receiving: %s", peer_.c_str(),
                        lastError_.c_str());
  }
  return Status::ok();
}

}  // namespace strata::security
