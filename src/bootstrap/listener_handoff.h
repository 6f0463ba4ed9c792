// Rank 0's listening socket for a unique id, from strata_get_unique_id to rank 0.
//
// strata_get_unique_id listens on the id's address at once, so that ranks
// starting before rank 0 wait in its backlog instead of being refused. The
// creating process keeps that socket until rank 0 of the id takes it:
//  - rank 0 in the creating process, or in a child forked from it (which has
//    inherited the descriptor), takes it from this process's registry;
//  - rank 0 started as a new program on the same host (spawn, exec, another
//    launcher) copies it out of the creator with pidfd_getfd(2), using the
//    creator's pid and descriptor number that the id carries;
//  - with no creator left (it has exited), rank 0 listens on the address itself.
// No thread and no service: the kernel does the handoff, so the creator may
// fork its ranks at any moment (a thread in the creator would make every
// fork a multi-threaded one, which sanitizers and POSIX frown upon).
// pidfd_getfd needs ptrace rights over the creator: the same user (or root)
// and no stricter Yama policy than the default.
#pragma once

#include "status.h"
#include "unique_id.h"

namespace strata::boot {

// Keeps fd, listening on id->root, for rank 0 of the id, and records in *id
// where another process of this host finds it.
void rememberListener(IdContents* id, int fd);

// Rank 0's listening socket for id, wherever it is now; else a new one on
// id.root. When `needed` is false (a single-rank job) *fd is -1 unless this
// process held one, which is taken all the same so that it is closed.
Status takeIdListener(const IdContents& id, bool needed, int* fd);

}  // namespace strata::boot
