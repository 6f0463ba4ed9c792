#include "timeline.h"

#include <time.h>

#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include "clock.h"
#include "log.h"
#include "op_desc.h"
#include "params.h"
#include "strata/strata.h"

namespace strata::timeline {
namespace {

constexpr size_t kFlushBytes = 64 << 10;

// JSON string contents: what describes a call is ours, but quote it all the same.
std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

// The wall clock minus the clock nowSeconds() reads, in microseconds.
double wallOffsetMicros() {
  timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  return static_cast<double>(wall.tv_sec) * 1e6 + static_cast<double>(wall.tv_nsec) / 1e3 - micros(nowSeconds());
}

}  // namespace

Status Timeline::open(int rank, int nranks, uint64_t commTag, int nchannels, const std::string& transports,
                      std::unique_ptr<Timeline>* out) {
  out->reset();
  const std::string prefix = params::timeline();
  if (prefix.empty()) return Status::ok();
  std::unique_ptr<Timeline> t(new Timeline());
  t->rank_ = rank;
  t->transports_ = transports;
  t->path_ = format("%s.%016" PRIx64 ".rank%d.json", prefix.c_str(), commTag, rank);
  t->file_ = std::fopen(t->path_.c_str(), "w");
  if (!t->file_)
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "STRATA_TIMELINE: cannot write %s: %s", t->path_.c_str(),
                        errnoText(errno).c_str());
  std::fputs("[\n", t->file_);
  t->append(format(R"({"name":"process_name","ph":"M","pid":%d,"args":{"name":"rank %d of %d"}})", rank, rank, nranks));
  t->append(format(R"({"name":"process_sort_index","ph":"M","pid":%d,"args":{"sort_index":%d}})", rank, rank));
  t->append(format(R"({"name":"strata_clock","ph":"M","pid":%d,"args":{"wall_minus_ts_us":%.0f}})", rank,
                   wallOffsetMicros()));
  t->append(format(R"({"name":"thread_name","ph":"M","pid":%d,"tid":0,"args":{"name":"calls"}})", rank));
  for (int ch = 0; ch < nchannels; ++ch)
    t->append(format(R"({"name":"thread_name","ph":"M","pid":%d,"tid":%d,"args":{"name":"channel %d"}})", rank,
                     ch + 1, ch));
  STRATA_INFO(INIT, "STRATA_TIMELINE: rank %d writes %s", rank, t->path_.c_str());
  *out = std::move(t);
  return Status::ok();
}

Timeline::~Timeline() {
  std::lock_guard<std::mutex> lock(mutex_);
  flushLocked();
  std::fputs("\n]\n", file_);
  std::fclose(file_);
}

void Timeline::issued(uint64_t seq, uint64_t desc, const char* algo, int nchannels) {
  const double now = nowSeconds();
  std::lock_guard<std::mutex> lock(mutex_);
  pending_[seq] = Pending{desc, algo, nchannels, now};
}

void Timeline::completed(uint64_t seq, bool ok) {
  const double now = nowSeconds();
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pending_.find(seq);
  if (it == pending_.end()) return;
  const Pending p = it->second;
  pending_.erase(it);
  const OpDesc d = OpDesc::unpack(p.desc);
  const std::string what = d.describe();
  const uint64_t bytes = d.count * strata_datatype_size(d.datatype);
  appendLocked(format(R"({"name":"%s #%)" PRIu64 R"(","cat":"call","ph":"X","pid":%d,"tid":0,"ts":%.3f,"dur":%.3f,)"
                      R"("args":{"call":"%s","seq":%)" PRIu64 R"(,"bytes":%)" PRIu64
                      R"(,"algorithm":"%s","channels":%d,"transports":"%s","ok":%s}})",
                      escaped(what.substr(0, what.find('('))).c_str(), seq, rank_, micros(p.issuedAt),
                      micros(now - p.issuedAt), escaped(what).c_str(), seq, bytes, p.algo, p.nchannels,
                      escaped(transports_).c_str(), ok ? "true" : "false"));
}

void Timeline::channelSpan(int ch, uint64_t seq, double start, double end) {
  append(seq ? format(R"({"name":"#%)" PRIu64 R"(","cat":"channel","ph":"X","pid":%d,"tid":%d,"ts":%.3f,"dur":%.3f})",
                      seq, rank_, ch + 1, micros(start), micros(end - start))
             : format(R"({"name":"p2p","cat":"channel","ph":"X","pid":%d,"tid":%d,"ts":%.3f,"dur":%.3f})", rank_,
                      ch + 1, micros(start), micros(end - start)));
}

void Timeline::append(const std::string& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  appendLocked(event);
}

void Timeline::appendLocked(const std::string& event) {
  if (!first_) buffer_ += ",\n";
  first_ = false;
  buffer_ += event;
  if (buffer_.size() >= kFlushBytes) flushLocked();
}

void Timeline::flushLocked() {
  std::fwrite(buffer_.data(), 1, buffer_.size(), file_);
  buffer_.clear();
}

}  // namespace strata::timeline
