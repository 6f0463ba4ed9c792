// A POSIX shared-memory segment: the shm transport's FIFOs, and the flags
// the cuda transport's streams signal through. Its name is unlinked as soon as every peer
// has mapped it, so nothing is left in /dev/shm when a process dies later;
// segments orphaned by a process killed during setup are swept by the next
// communicator created on the host (their names carry the creator's pid and
// pid namespace).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "status.h"

namespace strata::shm {

class Segment {
 public:
  Segment() = default;
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Creates and maps a zero-filled segment, its pages reserved in /dev/shm
  // and pre-faulted. `sizing` says what the size is made of, for the error
  // when /dev/shm is too full for it.
  Status create(const std::string& name, size_t bytes, const std::string& sizing);
  // Maps a peer's segment, waiting until it exists and has its size; refuses
  // one that is not this user's alone.
  Status open(const std::string& name, size_t bytes, double deadline);
  // Removes the name (the mapping stays valid).
  void unlink();

  char* base() const { return static_cast<char*>(base_); }

 private:
  void* base_ = nullptr;
  size_t bytes_ = 0;
  std::string name_;
  bool ownsName_ = false;
};

// "/strata-<commTag>-r<rank>-p<pid>-n<pid namespace inode>"
std::string segmentName(uint64_t commTag, int rank, int pid, uint64_t pidNamespace);
// The creator's pid and pid namespace from a /dev/shm entry's name (no
// leading slash); false if it is not a segment name.
bool parseSegmentName(const char* name, int* pid, uint64_t* pidNamespace);

// Unlinks /dev/shm/strata-* segments made in pid namespace `ownPidNamespace`
// (this process's) by a process that no longer exists. Segments of other pid
// namespaces are left alone: their pids cannot be checked from here.
void sweepOrphans(uint64_t ownPidNamespace);

}  // namespace strata::shm
