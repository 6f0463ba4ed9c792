// What a call runs and why. strata_comm_explain against what the call then does: the record's
// algorithm and channels are strata_comm_algorithm's and the ones the
// collective's own trace line reports when it runs (STRATA_DEBUG=TRACE), its
// rule names what decided (the cost model, STRATA_ALGO, reproducible mode,
// the size), and bad arguments are refused by name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "multiproc.h"
#include "strata/strata.h"

namespace strata::test {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

// The text after "key": up to the next comma or bracket (a number or a quoted string).
std::string field(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return "(missing)";
  size_t begin = at + key.size() + 3, end = begin;
  if (json[begin] == '"') {
    end = json.find('"', begin + 1);
    return json.substr(begin + 1, end - begin - 1);
  }
  while (end < json.size() && json[end] != ',' && json[end] != '}' && json[end] != ']') ++end;
  return json.substr(begin, end - begin);
}

// This process's trace (STRATA_DEBUG_FILE=log.%p) holds "...: <w>" for each
// of `want`, in order: what each collective ran, as its trace line says.
void expectTraceLines(Reporter& r, const std::string& log, const std::vector<std::string>& want) {
  const std::string path = log + "." + std::to_string(getpid());
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  size_t from = 0;
  for (const std::string& w : want) {
    const size_t at = text.str().find(": " + w, from);
    if (at == std::string::npos) return r.fail("no trace line '%s' after offset %zu in %s", w.c_str(), from, path.c_str());
    from = at + 1;
  }
  std::remove(path.c_str());
}

struct Query {
  const char* collective;
  size_t count;
  strata_datatype_t datatype;
};

void explainAndRun(int rank, int nranks, const strata_unique_id_t& id, Reporter& r, const std::string& log,
                   const char* rule, const strata_config_t* config) {
  strata_comm_t comm = nullptr;
  if (!r.ok(strata_comm_init_rank_config(&comm, nranks, id, rank, config), nullptr, "init")) return;
  const std::vector<Query> queries = {{"allreduce", 3, STRATA_FLOAT32},
                                      {"allreduce", 300000, STRATA_FLOAT32},
                                      {"allreduce", 2000000, STRATA_BFLOAT16},
                                      {"reduce_scatter", 100000, STRATA_INT32},
                                      {"broadcast", 10, STRATA_UINT8}};
  std::vector<std::string> want;  // "algo on N channel(s)", per query, as the trace prints it
  for (const Query& q : queries) {
    size_t needed = 0;
    char tiny[8];
    if (strata_comm_explain(comm, q.collective, q.count, q.datatype, tiny, sizeof(tiny), &needed) !=
            STRATA_ERR_INVALID_ARGUMENT ||
        !std::strstr(strata_comm_last_error(comm), "len") || needed <= sizeof(tiny))
      r.fail("an 8-byte record was not refused naming len (needed %zu): %s", needed, strata_comm_last_error(comm));
    std::string json(needed, '\0');
    if (!r.ok(strata_comm_explain(comm, q.collective, q.count, q.datatype, json.data(), json.size(), nullptr), comm,
              "strata_comm_explain"))
      return;
    json.resize(needed - 1);
    char name[16];
    int channels = 0;
    if (!r.ok(strata_comm_algorithm(comm, q.collective, q.count, q.datatype, name, sizeof(name), &channels), comm,
              "strata_comm_algorithm"))
      return;
    if (field(json, "algorithm") != name || field(json, "channels") != std::to_string(channels))
      r.fail("%s of %zu: explain says %s on %s channels, strata_comm_algorithm %s on %d", q.collective, q.count,
             field(json, "algorithm").c_str(), field(json, "channels").c_str(), name, channels);
    if (field(json, "collective") != q.collective || field(json, "ranks") != std::to_string(nranks))
      r.fail("record names %s on %s ranks: %s", field(json, "collective").c_str(), field(json, "ranks").c_str(),
             json.c_str());
    const std::string decided = field(json, "decided_by");
    const bool allreduce = std::strcmp(q.collective, "allreduce") == 0;
    if (allreduce && decided.find(rule) == std::string::npos)
      r.fail("%s of %zu: decided_by '%s' does not say '%s'", q.collective, q.count, decided.c_str(), rule);
    if (!allreduce && q.collective[0] != 'a' && decided.empty())
      r.fail("%s: no rule in %s", q.collective, json.c_str());
    if (allreduce && (json.find("\"algorithm\":\"ring\",\"estimate_us\":") == std::string::npos ||
                      json.find("\"algorithm\":\"ordered\"") == std::string::npos))
      r.fail("the candidates miss an algorithm: %s", json.c_str());
    const std::string self = "\"transports\":[";
    const size_t t = json.find(self);
    std::string peers = t == std::string::npos ? "" : json.substr(t + self.size(), json.find(']', t) - t - self.size());
    int entries = peers.empty() ? 0 : 1;
    for (char c : peers) entries += c == ',';
    if (entries != nranks || peers.find("\"self\"") == std::string::npos)
      r.fail("transports [%s]: want %d entries with this rank's \"self\"", peers.c_str(), nranks);
    want.push_back(field(json, "algorithm") + " on " + field(json, "channels") + " channel(s)");
  }
  // Each query's collective, run: its trace line says what ran.
  std::vector<char> in(2000000 * 4, 0), out(2000000 * 4 * nranks, 0);
  for (const Query& q : queries) {
    const std::string c = q.collective;
    strata_result_t rc = c == "allreduce" ? strata_allreduce(in.data(), out.data(), q.count, q.datatype, STRATA_SUM, comm)
                         : c == "reduce_scatter"
                             ? strata_reduce_scatter(in.data(), out.data(), q.count, q.datatype, STRATA_SUM, comm)
                             : strata_broadcast(in.data(), out.data(), q.count, q.datatype, 0, comm);
    if (!r.ok(rc, comm, q.collective)) return;
  }
  strata_comm_destroy(comm);
  expectTraceLines(r, log, want);
}

void runCase(const Env& extra, const char* rule, const strata_config_t* config = nullptr) {
  const std::string log = ::testing::TempDir() + "strata_explain_" + std::to_string(getpid()) + ".log";
  Env env = {{"STRATA_DEBUG", "TRACE"}, {"STRATA_DEBUG_SUBSYS", "COLL,ALGO"}, {"STRATA_DEBUG_FILE", log + ".%p"}};
  env.insert(env.end(), extra.begin(), extra.end());
  auto outcomes = runRanks(3, 60, [&](int rank, int nranks, const strata_unique_id_t& id, Reporter& r) {
    explainAndRun(rank, nranks, id, r, log, rule, config);
  }, env);
  expectAllPassed(outcomes);
}

TEST(Explain, TheCostModelsChoiceMatchesWhatRuns) { runCase({}, "cost model"); }
TEST(Explain, AForcedAlgorithmSaysSo) { runCase({{"STRATA_ALGO", "ring"}}, "STRATA_ALGO=ring"); }
TEST(Explain, ReproducibleModeSaysSo) { runCase({{"STRATA_REPRODUCIBLE", "1"}}, "STRATA_REPRODUCIBLE=1"); }
// The communicator's own algorithm (strata_config_t, as the NCCL drop-in
// sets it from NCCL_ALGO) wins over STRATA_ALGO.
TEST(Explain, ACommunicatorsOwnAlgorithmSaysSo) {
  strata_config_t config = STRATA_CONFIG_INITIALIZER;
  config.algorithm = "tree";
  runCase({{"STRATA_ALGO", "ring"}}, "config->algorithm=tree", &config);
}

// Its own algorithm and channel count hold for what is split from it too,
// and bad ones are refused by name before the bootstrap.
TEST(Explain, ACommunicatorsOwnChoiceIsInheritedAndChecked) {
  auto outcomes = runRanks(2, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& r) {
    strata_config_t config = STRATA_CONFIG_INITIALIZER;
    strata_comm_t comm = nullptr;
    for (const char* bad : {"", "nope"}) {
      config.algorithm = bad;
      if (strata_comm_init_rank_config(&comm, nranks, id, rank, &config) != STRATA_ERR_INVALID_ARGUMENT ||
          !std::strstr(strata_last_error(), "config->algorithm"))
        r.fail("config->algorithm='%s' was not refused by name: %s", bad, strata_last_error());
    }
    config.algorithm = "rd";
    for (int bad : {-1, 33}) {
      config.nchannels = bad;
      if (strata_comm_init_rank_config(&comm, nranks, id, rank, &config) != STRATA_ERR_INVALID_ARGUMENT ||
          !std::strstr(strata_last_error(), "config->nchannels"))
        r.fail("config->nchannels=%d was not refused by name: %s", bad, strata_last_error());
    }
    config.nchannels = 3;
    if (!r.ok(strata_comm_init_rank_config(&comm, nranks, id, rank, &config), nullptr, "init")) return;
    strata_comm_t half = nullptr;
    if (!r.ok(strata_comm_split(comm, 0, rank, &half), comm, "split")) return;
    for (strata_comm_t c : {comm, half}) {
      char name[16];
      int channels = 0;
      if (r.ok(strata_comm_algorithm(c, "allreduce", 1 << 22, STRATA_FLOAT32, name, sizeof(name), &channels), c,
               "strata_comm_algorithm") &&
          (std::strcmp(name, "rd") != 0 || channels != 3))
        r.fail("%s: 16 MiB runs %s on %d channels, want rd on 3", c == comm ? "the communicator" : "its split",
               name, channels);
    }
    strata_comm_destroy(half);
    strata_comm_destroy(comm);
  });
  expectAllPassed(outcomes);
}

TEST(Explain, BadArgumentsAreRefusedByName) {
  auto outcomes = runRanks(2, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& r) {
    strata_comm_t comm = nullptr;
    if (!r.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    char record[4096];
    struct {
      strata_result_t rc;
      const char* needle;
    } cases[] = {
        {strata_comm_explain(comm, nullptr, 1, STRATA_FLOAT32, record, sizeof(record), nullptr), "collective"},
        {strata_comm_explain(comm, "allgatherz", 1, STRATA_FLOAT32, record, sizeof(record), nullptr), "allgatherz"},
        {strata_comm_explain(comm, "allreduce", 1, static_cast<strata_datatype_t>(99), record, sizeof(record),
                             nullptr),
         "datatype"},
        {strata_comm_explain(comm, "allreduce", 1, STRATA_FLOAT32, nullptr, 0, nullptr), "len"},
        {strata_comm_explain(nullptr, "allreduce", 1, STRATA_FLOAT32, record, sizeof(record), nullptr), "comm"},
    };
    for (const auto& c : cases)
      if (c.rc != STRATA_ERR_INVALID_ARGUMENT) r.fail("case '%s' returned %s", c.needle, strata_result_string(c.rc));
    strata_comm_destroy(comm);
  });
  expectAllPassed(outcomes);
}

// strata_call_options_t's per-call choice: the call runs what it asked for
// (its trace line says so) and gets the sum the reference gives; the next
// call without one runs the communicator's choice again; bad choices are
// refused by name.
void perCall(int rank, int nranks, const strata_unique_id_t& id, Reporter& r, const std::string& log) {
  strata_comm_t comm = nullptr;
  if (!r.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
  const size_t count = 200000;
  std::vector<float> in(count * nranks), out(count * nranks);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float((rank + 1) * (i % 1000));
  auto sumOf = [&](size_t i) { return float(nranks * (nranks + 1) / 2 * (i % 1000)); };
  strata_call_options_t o = STRATA_CALL_OPTIONS_INIT;
  o.algorithm = "ring";
  o.channels = 2;
  o.chunk_bytes = 16384;
  std::vector<std::string> want = {"ring on 2 channel(s)"};
  if (!r.ok(strata_allreduce_ex(in.data(), out.data(), count, STRATA_FLOAT32, STRATA_SUM, comm, &o), comm, "ring"))
    return;
  for (size_t i = 0; i < count; ++i)
    if (out[i] != sumOf(i)) return r.fail("ring, 2 channels, 16 KiB chunks: out[%zu]=%g, want %g", i, out[i], sumOf(i));
  o = STRATA_CALL_OPTIONS_INIT;
  o.algorithm = "tree";
  want.push_back("tree on");
  if (!r.ok(strata_allreduce_ex(in.data(), out.data(), count, STRATA_FLOAT32, STRATA_SUM, comm, &o), comm, "tree"))
    return;
  for (size_t i = 0; i < count; ++i)
    if (out[i] != sumOf(i)) return r.fail("tree: out[%zu]=%g", i, out[i]);
  char name[16];
  int channels = 0;
  strata_comm_algorithm(comm, "allreduce", count, STRATA_FLOAT32, name, sizeof(name), &channels);
  want.push_back(std::string(name) + " on " + std::to_string(channels) + " channel(s)");
  if (!r.ok(strata_allreduce(in.data(), out.data(), count, STRATA_FLOAT32, STRATA_SUM, comm), comm, "default")) return;
  o = STRATA_CALL_OPTIONS_INIT;
  o.algorithm = "pipelined";
  want.push_back("ring on");
  if (!r.ok(strata_reduce_scatter_ex(in.data(), out.data(), count, STRATA_FLOAT32, STRATA_SUM, comm, &o), comm,
            "reduce_scatter, pipelined"))
    return;
  for (size_t i = 0; i < count; ++i)
    if (out[i] != sumOf(rank * count + i)) return r.fail("reduce_scatter: out[%zu]=%g", i, out[i]);
  o.algorithm = "bruck";
  want.push_back("bruck on");
  if (!r.ok(strata_reduce_scatter_ex(in.data(), out.data(), count, STRATA_FLOAT32, STRATA_SUM, comm, &o), comm,
            "reduce_scatter, bruck"))
    return;
  for (size_t i = 0; i < count; ++i)
    if (out[i] != sumOf(rank * count + i)) return r.fail("reduce_scatter, bruck: out[%zu]=%g", i, out[i]);
  o.algorithm = "direct";
  want.push_back("direct on");
  if (!r.ok(strata_broadcast_ex(in.data(), out.data(), count, STRATA_FLOAT32, 1, comm, &o), comm, "broadcast, direct"))
    return;
  for (size_t i = 0; i < count; ++i)
    if (out[i] != float(2 * (i % 1000))) return r.fail("broadcast: out[%zu]=%g", i, out[i]);
  // One host, where the model keeps the chain at this size.
  o.algorithm = "tree";
  want.push_back("tree on");
  if (!r.ok(strata_broadcast_ex(in.data(), out.data(), count, STRATA_FLOAT32, nranks - 1, comm, &o), comm,
            "broadcast, tree"))
    return;
  for (size_t i = 0; i < count; ++i)
    if (out[i] != float(nranks * (i % 1000))) return r.fail("broadcast, tree: out[%zu]=%g", i, out[i]);
  // 1000 elements per rank: a block on one host, where the model keeps one hop.
  o.algorithm = "bruck";
  want.push_back("bruck on");
  if (!r.ok(strata_allgather_ex(in.data(), out.data(), 1000, STRATA_FLOAT32, comm, &o), comm, "allgather, bruck"))
    return;
  for (int p = 0; p < nranks; ++p)
    for (size_t i = 0; i < 1000; ++i)
      if (out[p * 1000 + i] != float((p + 1) * i)) return r.fail("allgather: out[%d][%zu]=%g", p, i, out[p * 1000 + i]);

  struct Bad {
    const char* algorithm;
    int channels;
    size_t chunk;
    const char* needle;
  } bad[] = {{"bogus", 0, 0, "options->algorithm='bogus'"},
             {nullptr, 99, 0, "options->channels=99"},
             {nullptr, -1, 0, "options->channels=-1"},
             {nullptr, 0, 1000, "options->chunk_bytes=1000"},
             {"oneshot", 0, 0, "cannot carry"}};
  for (const Bad& b : bad) {
    o = STRATA_CALL_OPTIONS_INIT;
    o.algorithm = b.algorithm;
    o.channels = b.channels;
    o.chunk_bytes = b.chunk;
    const strata_result_t rc = strata_allreduce_ex(in.data(), out.data(), count, STRATA_FLOAT32, STRATA_SUM, comm, &o);
    if (rc != STRATA_ERR_INVALID_ARGUMENT || !std::strstr(strata_comm_last_error(comm), b.needle))
      r.fail("%s: got %s, '%s'", b.needle, strata_result_string(rc), strata_comm_last_error(comm));
  }
  o = STRATA_CALL_OPTIONS_INIT;
  o.algorithm = "ring";
  if (strata_broadcast_ex(in.data(), out.data(), count, STRATA_FLOAT32, 0, comm, &o) != STRATA_ERR_INVALID_ARGUMENT)
    r.fail("broadcast took algorithm 'ring'");
  if (strata_allgather_ex(in.data(), out.data(), 1000, STRATA_FLOAT32, comm, &o) != STRATA_ERR_INVALID_ARGUMENT ||
      !std::strstr(strata_comm_last_error(comm), "allgather's: pairwise, bruck"))
    r.fail("allgather with algorithm 'ring': %s", strata_comm_last_error(comm));
  // The refused calls took no sequence number: the ranks are still in step.
  if (!r.ok(strata_allreduce(in.data(), out.data(), count, STRATA_FLOAT32, STRATA_SUM, comm), comm, "after refusals"))
    return;
  strata_comm_destroy(comm);
  expectTraceLines(r, log, want);
}

TEST(PerCall, TheCallRunsWhatItAskedForAndBadChoicesAreRefused) {
  const std::string log = ::testing::TempDir() + "strata_percall_" + std::to_string(getpid()) + ".log";
  auto outcomes = runRanks(3, 60, [&](int rank, int nranks, const strata_unique_id_t& id, Reporter& r) {
    perCall(rank, nranks, id, r, log);
  }, {{"STRATA_DEBUG", "TRACE"}, {"STRATA_DEBUG_SUBSYS", "COLL"}, {"STRATA_DEBUG_FILE", log + ".%p"},
      {"STRATA_NCHANNELS", "4"}});
  expectAllPassed(outcomes);
}

TEST(PerCall, AReproducibleCommunicatorRefusesAnotherOrder) {
  auto outcomes = runRanks(2, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& r) {
    strata_comm_t comm = nullptr;
    if (!r.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    float v = 1, sum = 0;
    strata_call_options_t o = STRATA_CALL_OPTIONS_INIT;
    o.algorithm = "ring";
    if (strata_allreduce_ex(&v, &sum, 1, STRATA_FLOAT32, STRATA_SUM, comm, &o) != STRATA_ERR_INVALID_ARGUMENT ||
        !std::strstr(strata_comm_last_error(comm), "rank order"))
      r.fail("ring on a reproducible communicator: %s", strata_comm_last_error(comm));
    float pair[2] = {1, 2};
    o.algorithm = "bruck";
    if (strata_reduce_scatter_ex(pair, &sum, 1, STRATA_FLOAT32, STRATA_SUM, comm, &o) != STRATA_ERR_INVALID_ARGUMENT ||
        !std::strstr(strata_comm_last_error(comm), "reproducible"))
      r.fail("bruck reduce_scatter on a reproducible communicator: %s", strata_comm_last_error(comm));
    o.algorithm = "ordered";
    if (r.ok(strata_allreduce_ex(&v, &sum, 1, STRATA_FLOAT32, STRATA_SUM, comm, &o), comm, "ordered") && sum != 2)
      r.fail("ordered: %g", sum);
    strata_comm_destroy(comm);
  }, {{"STRATA_REPRODUCIBLE", "1"}});
  expectAllPassed(outcomes);
}

std::string writeFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name + "_" + std::to_string(getpid());
  std::ofstream(path) << text;
  return path;
}

// STRATA_TUNER_FILE: the first matching rule chooses, explain names its
// line, calls no rule matches keep the cost model's choice, and the sums
// are right whatever ran.
TEST(TunerFile, TheFirstMatchingRuleChoosesAndExplainNamesIt) {
  const std::string rules = writeFile("strata_tuner",
                                      "# collective bytes ranks per-node datatype -> algorithm channels chunk\n"
                                      "allreduce 0-1K * * * -> rd * *\n"
                                      "allreduce 1K-* 3 * float32 -> ring 2 16K  # this job\n"
                                      "allreduce 1K-* 2 * * -> hd * *\n"
                                      "\n"
                                      "reduce_scatter * * * * -> pipelined * *\n");
  const std::string log = ::testing::TempDir() + "strata_tuner_" + std::to_string(getpid()) + ".log";
  auto outcomes = runRanks(3, 60, [&](int rank, int nranks, const strata_unique_id_t& id, Reporter& r) {
    strata_comm_t comm = nullptr;
    if (!r.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    const size_t count = 100000;
    std::vector<int32_t> ints(count * nranks, rank + 1), isum(count * nranks);
    std::vector<float> in(count * nranks, float(rank + 1)), out(count * nranks);
    const float want = float(nranks * (nranks + 1) / 2);
    auto check = [&](const char* what, size_t n) {
      for (size_t i = 0; i < n; ++i)
        if (out[i] != want) return r.fail("%s: out[%zu]=%g, want %g", what, i, out[i], want);
    };
    std::vector<std::string> expectTrace;
    if (r.ok(strata_allreduce(in.data(), out.data(), 8, STRATA_FLOAT32, STRATA_SUM, comm), comm, "8 floats"))
      check("8 floats", 8);
    expectTrace.push_back("rd on");
    if (r.ok(strata_allreduce(in.data(), out.data(), count, STRATA_FLOAT32, STRATA_SUM, comm), comm, "float32"))
      check("float32", count);
    expectTrace.push_back("ring on 2 channel(s)");
    char name[16];
    int channels = 0;
    strata_comm_algorithm(comm, "allreduce", count, STRATA_INT32, name, sizeof(name), &channels);
    if (r.ok(strata_allreduce(ints.data(), isum.data(), count, STRATA_INT32, STRATA_SUM, comm), comm, "int32") &&
        isum[count - 1] != nranks * (nranks + 1) / 2)
      r.fail("int32: %d", isum[count - 1]);
    expectTrace.push_back(std::string(name) + " on " + std::to_string(channels) + " channel(s)");
    if (r.ok(strata_reduce_scatter(in.data(), out.data(), count, STRATA_FLOAT32, STRATA_SUM, comm), comm, "rs"))
      check("reduce_scatter", count);
    expectTrace.push_back("ring on");
    char record[8192];
    strata_comm_explain(comm, "allreduce", count, STRATA_FLOAT32, record, sizeof(record), nullptr);
    if (!std::strstr(record, ("STRATA_TUNER_FILE=" + rules + " line 3").c_str()))
      r.fail("explain does not name the rule: %s", record);
    strata_comm_explain(comm, "allreduce", count, STRATA_INT32, record, sizeof(record), nullptr);
    if (!std::strstr(record, "\"decided_by\":\"cost model")) r.fail("no rule matches int32, yet: %s", record);
    strata_comm_destroy(comm);
    expectTraceLines(r, log, expectTrace);
  }, {{"STRATA_TUNER_FILE", rules}, {"STRATA_NCHANNELS", "4"}, {"STRATA_DEBUG", "TRACE"},
      {"STRATA_DEBUG_SUBSYS", "COLL"}, {"STRATA_DEBUG_FILE", log + ".%p"}});
  expectAllPassed(outcomes);
  std::remove(rules.c_str());
}

// A file that cannot be read, or any malformed line, fails the creation
// naming the line and why, whether or not the line would match.
TEST(TunerFile, AMalformedFileFailsCreationNamingTheLine) {
  const struct {
    const char* text;
    const char* needle;
  } cases[] = {
      {"allreduce * * * * -> ring * *\nallreduce * * * * -> ringg * *\n", "line 2: algorithm='ringg'"},
      {"allreduce * * * * ring * *\n", "line 1: want 'collective"},
      {"# ok\nallreduce 12Q * * * -> ring * *\n", "line 2: bytes '12Q'"},
      {"allreduce * * * float33 -> ring * *\n", "line 1: 'float33' is not a datatype"},
      {"allreduce * 64 * * -> ring 9 *\n", "line 1: channels=9"},
      {"allreduce * * * * -> ring * 100\n", "line 1: chunk_bytes=100"},
      {"allgatherz * * * * -> * * *\n", "line 1: 'allgatherz' is not a collective"},
      {"broadcast * * * * -> ring * *\n", "line 1: algorithm='ring' is not one of broadcast's"},
  };
  int k = 0;
  for (const auto& c : cases) {
    const std::string path = writeFile("strata_tuner_bad" + std::to_string(k++), c.text);
    const std::string needle = c.needle;
    auto outcomes = runRanks(2, 60, [&](int rank, int nranks, const strata_unique_id_t& id, Reporter& r) {
      strata_comm_t comm = nullptr;
      const strata_result_t rc = strata_comm_init_rank(&comm, nranks, id, rank);
      if (rc != STRATA_ERR_INVALID_ARGUMENT || !std::strstr(strata_last_error(), needle.c_str()))
        r.fail("%s: init returned %s: %s", needle.c_str(), strata_result_string(rc), strata_last_error());
      if (comm) strata_comm_destroy(comm);
    }, {{"STRATA_TUNER_FILE", path}, {"STRATA_NCHANNELS", "4"}});
    expectAllPassed(outcomes);
    std::remove(path.c_str());
  }
  auto outcomes = runRanks(2, 60, [&](int rank, int nranks, const strata_unique_id_t& id, Reporter& r) {
    strata_comm_t comm = nullptr;
    if (strata_comm_init_rank(&comm, nranks, id, rank) != STRATA_ERR_INVALID_ARGUMENT ||
        !std::strstr(strata_last_error(), "cannot be read"))
      r.fail("a missing file: %s", strata_last_error());
    if (comm) strata_comm_destroy(comm);
  }, {{"STRATA_TUNER_FILE", "/nonexistent/strata.rules"}});
  expectAllPassed(outcomes);
}

}  // namespace
}  // namespace strata::test
