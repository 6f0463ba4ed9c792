// Connectors: the seam between algorithms and transports.
//
// A connector is a one-directional FIFO of fixed-size slots between two ranks,
// for one channel. The sender acquires a free slot, fills it and publishes it;
// the receiver peeks at the oldest published slot, consumes it (reducing
// straight out of it where it can) and releases it. Nothing blocks: a full or
// empty FIFO is reported as "not now" (nullptr) and the caller retries later,
// checking health() and its deadline while it waits.
//
// Every published slot carries a SlotTag so the receiver can verify that the
// sender is running the same operation (collective, datatype, op, count) at
// the same sequence number: ranks that disagree fail with a clear error instead
// of silently reducing unrelated bytes.
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "memory_held.h"
#include "status.h"

namespace strata {

struct SlotTag {
  uint64_t seq;   // operation sequence number on the communicator
  uint64_t desc;  // packed (collective, datatype, op, count), see OpDesc
};

// What both ends of a connector offer.
class Connector {
 public:
  virtual ~Connector() = default;

  // OK while the peer is alive and nobody aborted the connection.
  virtual Status health() = 0;

  // Tells the peer, now and for good, that this side failed.
  virtual void abort() = 0;

  // Transports whose bytes move only when someone calls into them (sockets)
  // do that work here; the channel calls it on every poll. Returns true if
  // anything moved. Memory transports need none of it.
  virtual bool needsProgress() const { return false; }
  virtual bool progress() { return false; }

  // False while published bytes still wait in this process to be sent: an
  // operation is not finished until they are on their way.
  virtual bool flushed() const { return true; }

  // File descriptors a waiting thread may sleep on (poll) until this
  // connector can move again: readable for receivers, writable for senders
  // with unsent bytes. None for memory transports.
  virtual void addPollFds(std::vector<pollfd>& /*out*/) const {}

  // Connectors whose slots are GPU memory (the cuda transport): the CUDA
  // stream their slots are ordered on. The slot acquire() or peek() returns
  // is written, or read, by work enqueued on this stream before publish()
  // or release(), never by the host. Null for host-memory slots.
  virtual void* deviceStream() const { return nullptr; }

  // The memory this connector allocated itself (slots, staging), not what
  // its transport holds for all of them; read from any thread.
  virtual MemoryHeld held() const { return {}; }
};

class SendConnector : public Connector {
 public:

  // A writable slot for up to `bytes` (<= slotBytes()) bytes, or nullptr when
  // all slots are in flight. Small payloads may be placed inline with the
  // slot's flag, so pass the real size.
  virtual void* acquire(size_t bytes) = 0;

  // Makes the slot returned by the last acquire() visible to the receiver.
  virtual void publish(size_t bytes, const SlotTag& tag) = 0;

  // Transports that move bytes with system calls (sockets) can send straight
  // from the caller's memory instead of a slot: publishFrom() takes a slot's
  // place in the FIFO (false, and nothing happens, when none is free) and
  // reads `data` until flushed(), so it must stay unchanged until then.
  virtual bool sendsFromCaller() const { return false; }
  virtual bool publishFrom(const void* /*data*/, size_t /*bytes*/, const SlotTag& /*tag*/) { return false; }

  virtual size_t slotBytes() const = 0;

  // Whether a plain copy (no reduction) of `bytes` into the slot acquire()
  // returned, for the operation `tag`, should use non-temporal stores, which
  // send the bytes to memory instead of this core's cache. The transport's
  // own choice (shared memory times both ways: transports/shm/README.md),
  // asked only for copies of at least the size it declared: the smallest
  // operations, which need speed most, pay no call for it.
  bool nonTemporalStores(const SlotTag& tag, size_t bytes) {
    return bytes >= nonTemporalMinBytes_ && chooseNonTemporal(tag, bytes);
  }

 protected:
  // Transports that may fill slots with non-temporal stores declare from
  // which copy size on, and choose in chooseNonTemporal().
  void declareNonTemporalFrom(size_t bytes) { nonTemporalMinBytes_ = bytes; }
  virtual bool chooseNonTemporal(const SlotTag& /*tag*/, size_t /*bytes*/) { return false; }

 private:
  size_t nonTemporalMinBytes_ = SIZE_MAX;
};

class RecvConnector : public Connector {
 public:

  // The oldest published slot, or nullptr if none is ready. The pointer stays
  // valid until release().
  virtual const void* peek(size_t* bytes, SlotTag* tag) = 0;

  // Hands the slot returned by the last peek() back to the sender.
  virtual void release() = 0;

  // Receives that can land straight in the caller's memory, saving the copy
  // out of the slot (tcp reads the payload into it). The executor names, in
  // the order it will consume them, where its next messages from this
  // connector go: `dst` for a message of `bytes` bytes tagged `tag`, or null
  // for the slot. A message whose header matches its posting lands at dst,
  // and peek() then returns dst; any other, and one whose header was in
  // before its posting, lands in its slot. False: the connector holds a
  // posting for each of its slots already, or takes none (the default).
  virtual bool landsInCaller() const { return false; }
  virtual bool post(void* /*dst*/, size_t /*bytes*/, const SlotTag& /*tag*/) { return false; }
  // Forgets every posting, and sends what is still to arrive of messages
  // landing in the caller's memory to their slots: their operation failed,
  // and its buffers are the caller's again.
  virtual void dropPostings() {}
};

}  // namespace strata
