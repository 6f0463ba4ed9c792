/*
 * strata: collective communication for CPU (and later GPU) ranks.
 *
 * The public C API. Every call returns a strata_result_t; outputs are written
 * only on success. When a call fails, a message naming the argument and value
 * at fault is available from strata_comm_last_error() (for calls that take a
 * communicator) or strata_last_error() (the calling thread's most recent
 * failure, for every call).
 *
 * Threading: calls on one communicator must be issued in the same order on
 * every rank, from one thread at a time (as with NCCL and MPI). Different
 * communicators may be used from different threads. strata_test and
 * strata_wait may complete a request on another thread than the one issuing
 * calls (a completion thread, as the PyTorch backend has).
 */
#ifndef STRATA_STRATA_H
#define STRATA_STRATA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define STRATA_API __attribute__((visibility("default")))
#else
#define STRATA_API
#endif

#define STRATA_VERSION_MAJOR 0
#define STRATA_VERSION_MINOR 1
#define STRATA_VERSION_PATCH 0
#define STRATA_VERSION_CODE \
  (STRATA_VERSION_MAJOR * 10000 + STRATA_VERSION_MINOR * 100 + STRATA_VERSION_PATCH)

typedef enum {
  STRATA_SUCCESS = 0,
  STRATA_ERR_INVALID_ARGUMENT = 1, /* a bad value passed by the caller */
  STRATA_ERR_INVALID_USAGE = 2,    /* a valid value used wrongly, or ranks disagree */
  STRATA_ERR_SYSTEM = 3,           /* a system call failed (errno text in the message) */
  STRATA_ERR_INTERNAL = 4,         /* a bug in strata */
  STRATA_ERR_REMOTE = 5,           /* another rank failed, died or aborted */
  STRATA_ERR_TIMEOUT = 6,          /* no progress within STRATA_TIMEOUT seconds */
  STRATA_IN_PROGRESS = 7,          /* non-blocking work not finished yet */
  STRATA_ERR_CUDA = 8,             /* a CUDA call failed, or a stream or device buffer was
                                      passed where no GPU is usable (the CUDA error in the message) */
  STRATA_ERR_REVOKED = 9           /* a rank revoked the communicator (strata_comm_revoke) */
} strata_result_t;

typedef enum {
  STRATA_INT8 = 0,
  STRATA_UINT8 = 1,
  STRATA_INT32 = 2,
  STRATA_UINT32 = 3,
  STRATA_INT64 = 4,
  STRATA_UINT64 = 5,
  STRATA_FLOAT16 = 6,
  STRATA_BFLOAT16 = 7,
  STRATA_FLOAT32 = 8,
  STRATA_FLOAT64 = 9,
  STRATA_NUM_DATATYPES = 10
} strata_datatype_t;

/* Integer ops wrap modulo 2^bits. STRATA_AVG is the sum divided by the number
 * of ranks (integer division, truncating, for integer types). float16 and
 * bfloat16 are computed in float32 and rounded to nearest even. */
typedef enum {
  STRATA_SUM = 0,
  STRATA_PROD = 1,
  STRATA_MIN = 2,
  STRATA_MAX = 3,
  STRATA_AVG = 4,
  STRATA_NUM_OPS = 5
} strata_op_t;

#define STRATA_UNIQUE_ID_BYTES 128
/* Opaque; produced by strata_get_unique_id on one process and passed to every
 * rank out of band (like ncclUniqueId). It carries rank 0's bootstrap address
 * and a random secret that every connecting rank must present. */
typedef struct {
  char internal[STRATA_UNIQUE_ID_BYTES];
} strata_unique_id_t;

typedef struct strata_comm* strata_comm_t;
typedef struct strata_request* strata_request_t;

/* Version as STRATA_VERSION_CODE of the loaded library. */
STRATA_API strata_result_t strata_get_version(int* version);

/* The transports this build offers on this host, in the order strata
 * prefers them, as space-separated names ("shm ib tcp"), written
 * NUL-terminated into names (len bytes; 64 are always enough). A pair of
 * ranks still uses one only where both ends can: ib needs an RDMA device on
 * each, ucx is used only when STRATA_TRANSPORT=ucx asks for it. */
STRATA_API strata_result_t strata_get_transports(char* names, size_t len);

/* A static, human-readable name for a result code ("invalid argument", ...). */
STRATA_API const char* strata_result_string(strata_result_t result);

/* The calling thread's message for its most recent failed call ("" if none). */
STRATA_API const char* strata_last_error(void);

/* The message for the most recent failure on this communicator, including a
 * failure of another rank that this rank saw ("" if none). */
STRATA_API const char* strata_comm_last_error(strata_comm_t comm);

/* Creates a unique id for a new communicator. Its rank 0 may be the calling
 * process, a child it forks, or any new process on the same host (rank 0's
 * listening socket is handed over); the calling process must stay alive until
 * that rank 0 has called strata_comm_init_rank.
 * STRATA_BOOTSTRAP_ADDR (host[:port]) chooses the address it advertises. */
STRATA_API strata_result_t strata_get_unique_id(strata_unique_id_t* id);

/* Collective over nranks processes: every rank calls it with the same id and
 * nranks and a distinct rank in [0, nranks). Blocks until all have joined or
 * STRATA_TIMEOUT expires. */
STRATA_API strata_result_t strata_comm_init_rank(strata_comm_t* comm, int nranks,
                                                 strata_unique_id_t id, int rank);

/* A communicator's own settings, for strata_comm_init_rank_config (like
 * ncclConfig_t). A field left at 0 takes its STRATA_* variable's value.
 * Start from STRATA_CONFIG_INITIALIZER: `size` lets later versions grow the
 * struct without breaking programs built against this one. */
typedef struct {
  size_t size;            /* sizeof(strata_config_t) */
  double timeout_seconds; /* STRATA_TIMEOUT for this communicator's operations */
  /* 1: reproducible results (STRATA_REPRODUCIBLE=1 for this communicator;
   * strata_comm_is_reproducible says what it means), -1: not, 0: the variable. */
  int reproducible;
  /* STRATA_ALGO for this communicator's allreduces: one of
   * strata-info --algorithms, copied at init; NULL: the variable. */
  const char* algorithm;
  /* STRATA_NCHANNELS for this communicator, 1 to 32; 0: the variable. */
  int nchannels;
  /* The CUDA device (an index, as cudaSetDevice takes it) whose GPU this
   * rank's stream-ordered calls on GPU memory use, and where the topology
   * places the rank. STRATA_DEVICE_CURRENT (the initializer's; 0 is a
   * device): the calling thread's current device when the communicator is
   * created, as NCCL takes it, also for a non-blocking init, whose work runs
   * on a thread of its own. A device this process's CUDA does not have gets
   * STRATA_ERR_INVALID_ARGUMENT; where no GPU is usable any index is kept,
   * and means nothing. A split or dup keeps its parent's. (64 bits wide so
   * that it lies past the end of the struct before it, whose `size` then
   * says it is absent.) */
  int64_t device;
  /* STRATA_MEM_BUDGET for this communicator: bytes of host memory its
   * slots may take on this rank (strata_comm_memory); 0: the variable. */
  uint64_t memory_budget;
} strata_config_t;
#define STRATA_DEVICE_CURRENT (-1)
#define STRATA_CONFIG_INITIALIZER {sizeof(strata_config_t), 0.0, 0, NULL, 0, STRATA_DEVICE_CURRENT, 0}

/* strata_comm_init_rank with settings of its own (config NULL: none).
 * STRATA_ERR_INVALID_ARGUMENT names a field that is out of range.
 * Communicators made from it by strata_comm_split and strata_comm_dup
 * inherit them. */
STRATA_API strata_result_t strata_comm_init_rank_config(strata_comm_t* comm, int nranks,
                                                        strata_unique_id_t id, int rank,
                                                        const strata_config_t* config);

/* Like strata_comm_init_rank, but returns at once (after checking its
 * arguments): the bootstrap runs on a thread of its own.
 * strata_comm_get_async_error reports STRATA_IN_PROGRESS until it has ended,
 * then STRATA_SUCCESS or its error; every other call on the communicator first
 * waits for it to end (destroy and abort included). */
STRATA_API strata_result_t strata_comm_init_rank_nonblocking(strata_comm_t* comm, int nranks,
                                                             strata_unique_id_t id, int rank);
/* strata_comm_init_rank_nonblocking with settings of its own, as
 * strata_comm_init_rank_config takes them (checked before it returns). */
STRATA_API strata_result_t strata_comm_init_rank_config_nonblocking(strata_comm_t* comm, int nranks,
                                                                    strata_unique_id_t id, int rank,
                                                                    const strata_config_t* config);

/* Initialises from torchrun-style variables: RANK, WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT (LOCAL_RANK is optional). Rank 0 listens on MASTER_ADDR:MASTER_PORT. */
STRATA_API strata_result_t strata_comm_init_env(strata_comm_t* comm);

/* Initialises a communicator over every process of the job, from whatever
 * launched it: under mpirun or srun --mpi=pmix (PMIX_NAMESPACE set) rank, size
 * and rank 0's bootstrap address come from PMIx, with no id to pass around;
 * otherwise from torchrun's variables as strata_comm_init_env. Collective over
 * the whole job; every call makes a new communicator. STRATA_ERR_INVALID_USAGE
 * when no launcher is found, when PMIx is needed but strata was built without
 * it, or when the launcher's variables disagree (WORLD_SIZE vs PMIx's size). */
STRATA_API strata_result_t strata_comm_init_world(strata_comm_t* comm);

/* Frees the communicator. Collective in spirit: call it on every rank once all
 * operations are done. Safe after an error. Requests still outstanding then
 * complete with an error (strata_test/strata_wait them to free them); the
 * communicator's memory goes with the last of them. */
STRATA_API strata_result_t strata_comm_destroy(strata_comm_t comm);

/* Marks the communicator failed: every pending and future operation on it (and
 * the peers' operations that depend on this rank) return an error; calls
 * blocked in other threads return. Frees the communicator, like
 * strata_comm_destroy (outstanding requests included). */
STRATA_API strata_result_t strata_comm_abort(strata_comm_t comm);

/* Collective over comm: the ranks passing the same color form a new
 * communicator, ranked by key, then by rank in comm. A rank passing
 * STRATA_SPLIT_NOCOLOR joins none and gets *newcomm = NULL. Independent of
 * comm afterwards (destroy each on its own). */
#define STRATA_SPLIT_NOCOLOR (-1)
STRATA_API strata_result_t strata_comm_split(strata_comm_t comm, int color, int key,
                                             strata_comm_t* newcomm);

/* Collective over comm: a new communicator with the same ranks in the same
 * order, whose operations never mix with comm's. */
STRATA_API strata_result_t strata_comm_dup(strata_comm_t comm, strata_comm_t* newcomm);

/* Without blocking: *error = STRATA_SUCCESS while the communicator is healthy,
 * STRATA_IN_PROGRESS while a non-blocking init runs, else the code of the
 * failure that stopped it (a failed init, a peer died, a timeout, an abort;
 * strata_comm_last_error has the message). */
STRATA_API strata_result_t strata_comm_get_async_error(strata_comm_t comm, strata_result_t* error);

/* Surviving a lost rank (like MPI's ULFM and NCCL's revoke and shrink).
 *
 * strata_comm_revoke: every pending and later operation on comm fails with
 * STRATA_ERR_REVOKED, on this rank at once and on every other live rank as
 * soon as the word reaches it (milliseconds: each rank's control plane, a
 * socket of its own, carries it), whatever those ranks are doing. Not
 * collective: any one rank may call it, once a peer died or before a
 * shrink, so that ranks blocked in a collective with the dead rank return
 * now instead of at STRATA_TIMEOUT. The communicator stays valid for
 * strata_comm_shrink and strata_comm_destroy. */
STRATA_API strata_result_t strata_comm_revoke(strata_comm_t comm);

/* Collective over comm's live ranks, after a failure or not: a new
 * communicator of the ranks that are alive and call it, without those in
 * exclude[0..nexclude) (left out even if alive), ranked in their order in
 * comm. Needs no new unique id and nothing of the dead ranks (rank 0
 * included). The live ranks agree on who is alive; a rank that dies while
 * they do is left out, and a live rank that does not call it within comm's
 * timeout (STRATA_TIMEOUT) is left out too. Every caller must pass the same
 * exclude list (STRATA_ERR_INVALID_USAGE otherwise); a rank in it that calls
 * gets *newcomm = NULL. Flags: STRATA_SHRINK_DEFAULT, or STRATA_SHRINK_ABORT
 * to revoke comm first (its pending operations fail with
 * STRATA_ERR_REVOKED). The new communicator inherits comm's settings; comm
 * stays to be destroyed (or shrunk again, should a survivor die while the
 * new communicator starts). */
#define STRATA_SHRINK_DEFAULT 0
#define STRATA_SHRINK_ABORT 1
STRATA_API strata_result_t strata_comm_shrink(strata_comm_t comm, const int* exclude, int nexclude, int flags,
                                              strata_comm_t* newcomm);

/* Growing a communicator with new processes (a replaced node, after a
 * shrink). Rank 0 of comm makes an id with strata_comm_grow_id and hands it
 * to the joining processes as it would a unique id. Then, collectively:
 * comm's members call strata_comm_grow(comm, nranks, id, -1, &newcomm), with
 * id on rank 0 and NULL elsewhere, and keep their ranks; each joining
 * process calls strata_comm_grow(NULL, nranks, &id, rank, &newcomm) with a
 * distinct rank in [size of comm, nranks). */
STRATA_API strata_result_t strata_comm_grow_id(strata_comm_t comm, strata_unique_id_t* id);
STRATA_API strata_result_t strata_comm_grow(strata_comm_t comm, int nranks, const strata_unique_id_t* id, int rank,
                                            strata_comm_t* newcomm);

/* A stall report: where every rank of comm stands, from each rank's log of
 * its recent collectives (kept always), asked for over the control plane
 * from this rank alone (not collective; a rank stuck in its own code, or in
 * a call, still answers; a dead one is reported gone). Its first line says
 * which ranks wait in which collective and for whom ("ranks 0-6 wait in
 * allreduce(...) #1042 for rank 7; rank 7 completed #1041, issued 2.0 s
 * ago, and has issued nothing since"), then one line per rank lists its recent
 * operations. Written NUL-terminated into report (len bytes, truncated), or,
 * with report NULL, to strata's log. A timeout's error message carries the
 * first line; with STRATA_DUMP_ON_SIGNAL=1 a SIGUSR1 logs the whole report
 * for every communicator of the process. */
STRATA_API strata_result_t strata_comm_dump(strata_comm_t comm, char* report, size_t len);

/* Collective: diagnostics of the job behind comm (what STRATA_CHECK=1 runs
 * at init, and strata-doctor on demand). Every rank's fingerprint (library
 * version and build, STRATA_* environment, kernel and the features of it
 * strata uses, usable transports, free /dev/shm) is compared, naming the
 * ranks that differ; then every pair of ranks is tested on the transport
 * comm uses (a pattern written and read back, 8-byte round trips, 1 MiB
 * exchanges), naming a pair far slower than the median pair ("rank 3 ->
 * rank 9 over tcp: 0.11 GB/s, median pair 1.9 GB/s"). Every rank gets the
 * same report, NUL-terminated in report (len bytes, truncated), or with
 * report NULL logged by rank 0; *findings (when not NULL) counts its
 * findings. STRATA_ERR_REMOTE when a pair's bytes arrived wrong. */
STRATA_API strata_result_t strata_comm_check(strata_comm_t comm, char* report, size_t len, int* findings);

STRATA_API strata_result_t strata_comm_rank(strata_comm_t comm, int* rank);
STRATA_API strata_result_t strata_comm_size(strata_comm_t comm, int* size);
/* Memory comm holds for its transfers, by where it lives (NCCL's
 * ncclCommMemStats, per kind): the slots of every transport it has
 * connected so far (with STRATA_CONNECT=lazy pairs connect at their first
 * call, so this grows as calls reach new peers), the pinned staging of
 * stream-ordered calls (its cache included), and the scratch of cached
 * plans. Not counted: the caller's buffers and memory registered for them,
 * the kernel's socket buffers, bookkeeping. STRATA_MEM_BUDGET caps the
 * slots. A call on comm like the others: not alongside another thread's
 * calls on it. Start from STRATA_MEMORY_INITIALIZER; fields past `size`
 * are not written. */
typedef struct {
  size_t size;           /* sizeof(strata_memory_t) */
  uint64_t shared_bytes; /* shared memory this rank created (/dev/shm): its incoming shm slots */
  uint64_t host_bytes;   /* private host memory: tcp and ucx slots, plan scratch */
  uint64_t pinned_bytes; /* host memory pinned for a device: ib's registered FIFOs, stream staging */
  uint64_t device_bytes; /* GPU memory: the cuda transport's slots */
} strata_memory_t;
#define STRATA_MEMORY_INITIALIZER {sizeof(strata_memory_t), 0, 0, 0, 0}
STRATA_API strata_result_t strata_comm_memory(strata_comm_t comm, strata_memory_t* usage);

/* The CUDA device comm was created for (strata_config_t's `device`); -1 when
 * it was created on a thread without one (no usable GPU). Answers at once,
 * also while a non-blocking init is still running. */
STRATA_API strata_result_t strata_comm_device(strata_comm_t comm, int* device);

/* *reproducible = 1 when comm runs in reproducible mode (STRATA_REPRODUCIBLE=1,
 * or its config's `reproducible`): allreduce, reduce and reduce_scatter then
 * give the same bits, for the same inputs on the same number of ranks,
 * whatever the algorithm, channel count, slot size, transports, ranks per
 * node and buffer sizes of the job (every element is folded in rank order,
 * in_0 op in_1 op ... op in_{n-1}, every datatype and op, AVG included).
 * Only the algorithms that fold in rank order run ("oneshot", "ordered");
 * forcing another with STRATA_ALGO or config->algorithm fails the init. GPU buffers are staged
 * through host memory in this mode. Otherwise 0: the same configuration
 * gives the same bits, another may not. */
STRATA_API strata_result_t strata_comm_is_reproducible(strata_comm_t comm, int* reproducible);

/* The transport that carries comm's traffic between this rank and `peer`
 * ("shm", "ib", "tcp", or "self" for this rank), written NUL-terminated into
 * name (len bytes; 8 are always enough). */
STRATA_API strata_result_t strata_comm_peer_transport(strata_comm_t comm, int peer, char* name, size_t len);

/* The algorithm comm would run `collective` with ("allreduce", "broadcast",
 * "reduce", "allgather", "reduce_scatter" or "alltoall") on `count` elements
 * of `datatype` (per rank for allgather, reduce_scatter and alltoall): its
 * name ("ring", "oneshot", "rd", "hd", "tree", "hier", "ordered", "direct",
 * "chain", "pairwise", "bruck"), at most 15 characters, written NUL-terminated into name (len
 * bytes), and, when nchannels is not NULL, the channels it would use. Local:
 * every rank gets the same answer without communicating. */
STRATA_API strata_result_t strata_comm_algorithm(strata_comm_t comm, const char* collective, size_t count,
                                                 strata_datatype_t datatype, char* name, size_t len,
                                                 int* nchannels);

/* Why: what comm would do for `collective` on `count` elements of `datatype`
 * (as strata_comm_algorithm takes them), as one JSON object written
 * NUL-terminated into record (len bytes): "algorithm" and "channels" (what
 * strata_comm_algorithm answers), "decided_by" (config->algorithm or
 * STRATA_ALGO, the cost model,
 * reproducible mode, or the size rule of broadcast, reduce and
 * reduce_scatter), "candidates" (every allreduce algorithm with the cost
 * model's estimate in microseconds, null where it cannot carry the size, and
 * "why_not" where it was not considered), "transports" (to each rank, by
 * rank), "peers" (the ranks this rank's plan for the call sends to or
 * receives from) and "connected_peers" (how many ranks this rank holds
 * connections to), "slot_bytes", "progress_threads", "reproducible", and "by_size"
 * (the allreduce table of the communicator). *needed (when not NULL) gets
 * the record's size with its NUL; a record too small gets
 * STRATA_ERR_INVALID_ARGUMENT naming len and that size. Local, like
 * strata_comm_algorithm. strata-info --explain prints it for a job. */
STRATA_API strata_result_t strata_comm_explain(strata_comm_t comm, const char* collective, size_t count,
                                               strata_datatype_t datatype, char* record, size_t len,
                                               size_t* needed);

/* recvbuf[i] = op over ranks of sendbuf[i], for i < count. In place when
 * sendbuf == recvbuf. Buffers may not otherwise overlap. Blocking. */
STRATA_API strata_result_t strata_allreduce(const void* sendbuf, void* recvbuf, size_t count,
                                            strata_datatype_t datatype, strata_op_t op,
                                            strata_comm_t comm);

/* Non-blocking allreduce: the buffers must stay valid and untouched until the
 * request completes. *request is NULL when count == 0. */
STRATA_API strata_result_t strata_iallreduce(const void* sendbuf, void* recvbuf, size_t count,
                                             strata_datatype_t datatype, strata_op_t op,
                                             strata_comm_t comm, strata_request_t* request);

/* The collectives below follow NCCL's and MPI's conventions. Counts are in
 * elements; "block" means count elements. Every rank passes the same count,
 * datatype, op and root (v-variants: the same counts and displacements where
 * they describe the same blocks). Blocking forms return when this rank's part
 * is done; the strata_i* forms return a request at once (NULL when there is
 * nothing to do) and need their buffers untouched until it completes. A count
 * of 0 moves nothing and returns at once (allgatherv/alltoallv still take part).
 * Buffers that must not overlap get STRATA_ERR_INVALID_ARGUMENT if they do. */

/* The root's sendbuf reaches every rank's recvbuf. sendbuf is read on the root
 * only (may be NULL elsewhere); in place when sendbuf == recvbuf. */
STRATA_API strata_result_t strata_broadcast(const void* sendbuf, void* recvbuf, size_t count,
                                            strata_datatype_t datatype, int root,
                                            strata_comm_t comm);
STRATA_API strata_result_t strata_ibroadcast(const void* sendbuf, void* recvbuf, size_t count,
                                             strata_datatype_t datatype, int root,
                                             strata_comm_t comm, strata_request_t* request);

/* The root's recvbuf[i] = op over ranks of sendbuf[i]. recvbuf is written on
 * the root only (may be NULL elsewhere); in place when sendbuf == recvbuf. */
STRATA_API strata_result_t strata_reduce(const void* sendbuf, void* recvbuf, size_t count,
                                         strata_datatype_t datatype, strata_op_t op, int root,
                                         strata_comm_t comm);
STRATA_API strata_result_t strata_ireduce(const void* sendbuf, void* recvbuf, size_t count,
                                          strata_datatype_t datatype, strata_op_t op, int root,
                                          strata_comm_t comm, strata_request_t* request);

/* recvbuf (nranks blocks) gets rank r's sendbuf (one block) as block r. In
 * place when sendbuf == recvbuf + rank * count elements. */
STRATA_API strata_result_t strata_allgather(const void* sendbuf, void* recvbuf, size_t count,
                                            strata_datatype_t datatype, strata_comm_t comm);
STRATA_API strata_result_t strata_iallgather(const void* sendbuf, void* recvbuf, size_t count,
                                             strata_datatype_t datatype, strata_comm_t comm,
                                             strata_request_t* request);

/* Like allgather with recvcounts[r] elements from rank r placed at
 * recvbuf + displs[r] elements; sendcount must equal recvcounts[rank]. In
 * place when sendbuf == recvbuf + displs[rank] elements. */
STRATA_API strata_result_t strata_allgatherv(const void* sendbuf, size_t sendcount, void* recvbuf,
                                             const size_t* recvcounts, const size_t* displs,
                                             strata_datatype_t datatype, strata_comm_t comm);
STRATA_API strata_result_t strata_iallgatherv(const void* sendbuf, size_t sendcount,
                                              void* recvbuf, const size_t* recvcounts,
                                              const size_t* displs, strata_datatype_t datatype,
                                              strata_comm_t comm, strata_request_t* request);

/* recvbuf (one block) = op over ranks of block `rank` of sendbuf (nranks
 * blocks). In place when recvbuf == sendbuf + rank * count elements. */
STRATA_API strata_result_t strata_reduce_scatter(const void* sendbuf, void* recvbuf, size_t count,
                                                 strata_datatype_t datatype, strata_op_t op,
                                                 strata_comm_t comm);
STRATA_API strata_result_t strata_ireduce_scatter(const void* sendbuf, void* recvbuf,
                                                  size_t count, strata_datatype_t datatype,
                                                  strata_op_t op, strata_comm_t comm,
                                                  strata_request_t* request);

/* Block p of sendbuf goes to rank p, where it lands as block `rank` of
 * recvbuf (both nranks blocks). Not in place: the buffers may not overlap. */
STRATA_API strata_result_t strata_alltoall(const void* sendbuf, void* recvbuf, size_t count,
                                           strata_datatype_t datatype, strata_comm_t comm);
STRATA_API strata_result_t strata_ialltoall(const void* sendbuf, void* recvbuf, size_t count,
                                            strata_datatype_t datatype, strata_comm_t comm,
                                            strata_request_t* request);

/* sendcounts[p] elements from sendbuf + sdispls[p] go to rank p, which
 * receives them as recvcounts[rank] elements at recvbuf + rdispls[rank].
 * sendcounts[rank] must equal recvcounts[rank]. Not in place. */
STRATA_API strata_result_t strata_alltoallv(const void* sendbuf, const size_t* sendcounts,
                                            const size_t* sdispls, void* recvbuf,
                                            const size_t* recvcounts, const size_t* rdispls,
                                            strata_datatype_t datatype, strata_comm_t comm);
STRATA_API strata_result_t strata_ialltoallv(const void* sendbuf, const size_t* sendcounts,
                                             const size_t* sdispls, void* recvbuf,
                                             const size_t* recvcounts, const size_t* rdispls,
                                             strata_datatype_t datatype, strata_comm_t comm,
                                             strata_request_t* request);

/* Point-to-point: messages between two ranks match in the order they were
 * posted, with the same count and datatype. A blocking send may wait for its
 * receiver; post exchanges (each rank sends to and receives from others)
 * between strata_group_start/end so they progress together. A rank may send
 * to itself inside a group. */
STRATA_API strata_result_t strata_send(const void* sendbuf, size_t count,
                                       strata_datatype_t datatype, int peer, strata_comm_t comm);
STRATA_API strata_result_t strata_recv(void* recvbuf, size_t count, strata_datatype_t datatype,
                                       int peer, strata_comm_t comm);
STRATA_API strata_result_t strata_isend(const void* sendbuf, size_t count,
                                        strata_datatype_t datatype, int peer, strata_comm_t comm,
                                        strata_request_t* request);
STRATA_API strata_result_t strata_irecv(void* recvbuf, size_t count, strata_datatype_t datatype,
                                        int peer, strata_comm_t comm, strata_request_t* request);

/* Returns once every rank has entered the barrier. */
STRATA_API strata_result_t strata_barrier(strata_comm_t comm);
STRATA_API strata_result_t strata_ibarrier(strata_comm_t comm, strata_request_t* request);

/* Stream-ordered calls (NCCL's semantics), for buffers in GPU memory as well
 * as host memory. A strata_stream_t is a cudaStream_t.
 *
 * Each strata_*_ex call with options->stream set enqueues the operation on
 * that stream and returns at once: the operation starts once the stream's
 * earlier work is done, and the stream's later work sees its result. The
 * host thread never waits for the GPU. Each buffer may be host memory
 * (pageable or pinned), managed or device memory of any device; ranks may
 * mix them. Device and managed buffers are staged through pinned host memory
 * chunk by chunk (STRATA_GPU_CHUNK_BYTES) while the collective runs over any
 * transport. A failure (a peer died, a timeout, an abort) never leaves the
 * stream blocked: its waits are released, the output's contents are then
 * undefined, and the error is reported by strata_comm_get_async_error on
 * every rank. Streams being captured into a CUDA graph are refused
 * (STRATA_ERR_INVALID_USAGE). Without a usable GPU a non-NULL stream gets
 * STRATA_ERR_CUDA with CUDA's reason. The communicator's own GPU work (its
 * GPU-to-GPU copies and kernels) runs on its device (strata_config_t's
 * `device`, strata_comm_device) whichever device is current; where the
 * driver lacks stream memory operations a call also launches a small kernel
 * on `stream`, which needs that stream's device current, as any launch does.
 *
 * Inside strata_group_start/end they are issued at the outermost group end,
 * which waits for the group's host-ordered calls only; one group's
 * stream-ordered calls on one communicator must name one stream.
 *
 * With options NULL or options->stream NULL, a call on host buffers is the
 * blocking form (strata_allreduce, ...); one on GPU buffers (or with its
 * premul_scalar in GPU memory) is enqueued on the legacy default stream, as
 * NCCL does for stream 0. */
typedef void* strata_stream_t;

typedef struct {
  size_t size;                /* sizeof(strata_call_options_t): fields past it are not read */
  strata_stream_t stream;     /* NULL: a blocking call on host memory */
  /* Reductions only, with op STRATA_SUM: every rank's input is multiplied by
   * this scalar (one element of the call's datatype, in host or device
   * memory) before the sum; device memory is read when the operation runs on
   * the stream, host memory when the call is made. NULL: no scaling. */
  const void* premul_scalar;
  /* This call's own choice (NCCL 2.31's per-call config), the same on every
   * rank; NULL / 0 leave the communicator's. Each is checked, and a bad one
   * gets STRATA_ERR_INVALID_ARGUMENT naming it.
   * algorithm: for allreduce, one of strata-info --algorithms (in
   * reproducible mode, one that folds in rank order); for broadcast, reduce
   * and reduce_scatter "direct" (one hop to or from every rank) or
   * "pipelined" (chains and rings), for broadcast also "tree" (a binomial
   * tree, ceil(log2 n) hops deep), and for reduce_scatter also "bruck"
   * (ceil(log2 n) rounds; not in reproducible mode); for allgather
   * "pairwise" (one hop to every peer) or "bruck"; for alltoall "pairwise".
   * channels: 1 to the communicator's channel count (STRATA_NCHANNELS).
   * chunk_bytes: the most a pipelined step moves, a multiple of 64 from 4096
   * to STRATA_SLOT_BYTES. Calls with a choice run on host memory (GPU
   * buffers are staged) and are not fused with others in a group. */
  const char* algorithm;
  int channels;
  size_t chunk_bytes;
} strata_call_options_t;

#define STRATA_CALL_OPTIONS_INIT {sizeof(strata_call_options_t), NULL, NULL, NULL, 0, 0}

STRATA_API strata_result_t strata_allreduce_ex(const void* sendbuf, void* recvbuf, size_t count,
                                               strata_datatype_t datatype, strata_op_t op,
                                               strata_comm_t comm, const strata_call_options_t* options);
STRATA_API strata_result_t strata_broadcast_ex(const void* sendbuf, void* recvbuf, size_t count,
                                               strata_datatype_t datatype, int root, strata_comm_t comm,
                                               const strata_call_options_t* options);
STRATA_API strata_result_t strata_reduce_ex(const void* sendbuf, void* recvbuf, size_t count,
                                            strata_datatype_t datatype, strata_op_t op, int root,
                                            strata_comm_t comm, const strata_call_options_t* options);
STRATA_API strata_result_t strata_allgather_ex(const void* sendbuf, void* recvbuf, size_t count,
                                               strata_datatype_t datatype, strata_comm_t comm,
                                               const strata_call_options_t* options);
STRATA_API strata_result_t strata_reduce_scatter_ex(const void* sendbuf, void* recvbuf, size_t count,
                                                    strata_datatype_t datatype, strata_op_t op,
                                                    strata_comm_t comm, const strata_call_options_t* options);
STRATA_API strata_result_t strata_alltoall_ex(const void* sendbuf, void* recvbuf, size_t count,
                                              strata_datatype_t datatype, strata_comm_t comm,
                                              const strata_call_options_t* options);
STRATA_API strata_result_t strata_send_ex(const void* sendbuf, size_t count, strata_datatype_t datatype,
                                          int peer, strata_comm_t comm, const strata_call_options_t* options);
STRATA_API strata_result_t strata_recv_ex(void* recvbuf, size_t count, strata_datatype_t datatype, int peer,
                                          strata_comm_t comm, const strata_call_options_t* options);

/* GPU memory for buffers (ncclMemAlloc's analogue): bytes of device memory
 * on the calling thread's current CUDA device. STRATA_ERR_CUDA when no GPU
 * is usable. strata_mem_free(NULL) does nothing. */
STRATA_API strata_result_t strata_mem_alloc(void** ptr, size_t bytes);
STRATA_API strata_result_t strata_mem_free(void* ptr);

/* Groups (like ncclGroupStart/End), per calling thread, nestable: blocking
 * calls made inside a group are validated and queued, and return at once;
 * strata_group_end issues them (each communicator's collectives in call
 * order, then its sends and receives as one exchange that progresses
 * together) and waits for all of them. The strata_i* forms are not allowed
 * inside a group. Buffers must stay valid until strata_group_end returns. */
STRATA_API strata_result_t strata_group_start(void);
STRATA_API strata_result_t strata_group_end(void);

/* Sets *done to 1 and frees the request when it has completed (successfully
 * or not: the result says which); otherwise sets *done to 0 and returns
 * STRATA_SUCCESS. A NULL request is complete. Each call moves the
 * communicator's operations on; in a polling loop, calls that find nothing
 * to do yield the core after STRATA_SPIN of them (at once with more ranks
 * than cores), as strata_wait does. */
STRATA_API strata_result_t strata_test(strata_request_t request, int* done);

/* Waits for the request to complete and frees it. A NULL request is complete. */
STRATA_API strata_result_t strata_wait(strata_request_t request);

/* Size in bytes of one element of datatype, or 0 if it is invalid. */
STRATA_API size_t strata_datatype_size(strata_datatype_t datatype);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_STRATA_H */
