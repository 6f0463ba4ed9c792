// The topology in words, for people (a tree) and for programs (JSON): what
// strata-topo prints, and what a user pastes into a bug report.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hierarchy.h"
#include "hwloc_probe.h"

namespace strata::topo {

// cluster: 2 nodes, 4 ranks
//   node 0 hostA (2 packages, 2 NUMA, 4 cores, 4 PUs, nic eth0)
//     socket 0: ranks 0 1
//     socket 1: ranks 2
std::string describeTree(const Hierarchy& h, const std::vector<HostInfo>& all);
// {"nranks":..,"nodes":[{..,"sockets":[{"package":0,"ranks":[0,1]}]}],"ranks":[{..}]}
std::string describeJson(const Hierarchy& h, const std::vector<HostInfo>& all);

// One machine as hwloc sees it, and where this rank sits in it.
std::string describeMachine(const TopologyProbe& probe);
std::string describeMachineJson(const TopologyProbe& probe);

// An n x n table with row and column indexes, cells 6 characters wide,
// cell(row, col) giving each one's text; no newline after the last row.
std::string matrixText(int n, const std::function<std::string(int row, int col)>& cell);

// `text` as a JSON string literal (quoted, escaped; bytes that are not UTF-8
// become U+FFFD so the document stays valid).
std::string jsonQuote(const std::string& text);

}  // namespace strata::topo
