// The agreement behind strata_comm_shrink: which ranks of a communicator,
// some of them perhaps dead, go on together, and the id of their new
// communicator, reached over the control plane alone (no collective, no
// bootstrap root, nothing of a dead rank).
//
// The coordinator is the lowest rank that is neither excluded nor gone (its
// control plane refuses connections). Every other survivor proposes to it
// (its exclude list, signed) and waits for the decision. The coordinator
// takes proposals until every rank it does not know dead has proposed,
// probing the silent ones; a rank that is alive but does not call shrink
// within `waitSeconds` is left out. It then creates the new communicator's
// id (it is the new rank 0, so it holds the listener), and answers each
// proposer with the survivors and the id, less its secret, which each
// survivor derives from the parent's (ControlPlane::derive).
//
// A further failure while it runs: a rank that dies before it proposes is
// found by the coordinator's probes, one that dies after it proposed by its
// closed connection when the coordinator decides; a coordinator that dies
// closes its proposers' connections, and they propose to the next rank up,
// which takes over. A survivor that dies after the decision leaves the new
// communicator's bootstrap to time out; shrinking the parent again then
// leaves it out.
#pragma once

#include <functional>
#include <vector>

#include "control_plane.h"
#include "unique_id.h"

namespace strata::fault {

struct ShrinkOutcome {
  std::vector<int> survivors;  // parent ranks, ascending; this rank is survivors[newRank]
  int newRank = -1;
  boot::IdContents id{};  // the new communicator's, its derived secret included
};

// `exclude`: parent ranks to leave out even if alive, sorted, without this
// rank (a rank that excludes itself takes no part). Every survivor must pass
// the same list: a difference fails the shrink on all of them
// (STRATA_ERR_INVALID_USAGE, naming a rank that differs). `makeId` creates,
// on the coordinator, a unique id that carries the given secret.
using MakeId = std::function<Status(const security::Secret&, boot::IdContents*)>;
Status agreeOnSurvivors(ControlPlane& cp, const std::vector<int>& exclude, double waitSeconds, const MakeId& makeId,
                        ShrinkOutcome* out);

}  // namespace strata::fault
