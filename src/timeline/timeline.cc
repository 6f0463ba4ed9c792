#include "timeline.h"

#include <time.h>

#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "clock.h"
#include "log.h"
#include "op_desc.h"
#include "params.h"
#include "strata/strata.h"

namespace strata::timeline {
namespace {

// JSON string contents: what describes a call is ours, but quote it all the same.
std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
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
  t->path_ = formatText("%s.%016" PRIx64 ".rank%d.json", prefix.c_str(), commTag, rank);
  t->file_ = std::fopen(t->path_.c_str(), "w");
  if (!t->file_)
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "STRATA_TIMELINE: cannot write %s: %s", t->path_.c_str(),
                        errnoText(errno).c_str());
  std::string head = "[\n";
  head += formatText(R"({"name":"process_name","ph":"M","pid":%d,"args":{"name":"rank %d of %d"}})",
                                   rank, rank, nranks);
  head += formatText(R"(,{"name":"process_sort_index","ph":"M","pid":%d,"args":{"sort_index":%d}})",
                                   rank, rank);
  head += formatText(R"(,{"name":"strata_clock","ph":"M","pid":%d,"args":{"wall_minus_ts_us":%.0f}})",
                                   rank, wallOffsetMicros());
  head += formatText(R"(,{"name":"thread_name","ph":"M","pid":%d,"tid":0,"args":{"name":"calls"}})", rank);
  for (int ch = 0; ch < nchannels; ++ch)
    head += formatText(R"(,{"name":"thread_name","ph":"M","pid":%d,"tid":%d,"args":{"name":"channel %d"}})",
                                     rank, ch + 1, ch);
  std::fputs(head.c_str(), t->file_);
  t->records_.reserve(kBatch);
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
  // Only the communicator's calling thread issues calls; they complete there
  // too, but for stream-ordered ones, which a progress thread ends: their
  // slots differ from any the calling thread writes meanwhile (a channel
  // holds fewer than kPending calls).
  pending_[seq % kPending] = Record{Kind::Call, true, nchannels, seq, desc, algo, -1, -1, nowSeconds(), 0};
}

void Timeline::completed(uint64_t seq, bool ok) {
  Record r = pending_[seq % kPending];
  if (r.seq != seq) return;  // more than kPending calls ago, or seen complete already
  pending_[seq % kPending].seq = 0;
  r.ok = ok;
  r.end = nowSeconds();
  push(r);
}

void Timeline::channelSpan(int ch, uint64_t seq, double start, double end) {
  push(Record{Kind::Span, true, ch, seq, 0, nullptr, -1, -1, start, end});
}

void Timeline::step(int ch, uint64_t seq, const char* prim, int recvPeer, int sendPeer, uint64_t bytes, double start,
                    double end) {
  push(Record{Kind::Step, true, ch, seq, bytes, prim, recvPeer, sendPeer, start, end});
}

void Timeline::push(const Record& r) {
  std::lock_guard<std::mutex> lock(mutex_);
  records_.push_back(r);
  if (records_.size() >= kBatch) flushLocked();
}

void Timeline::flushLocked() {
  std::string text;
  text.reserve(records_.size() * 160);
  for (const Record& r : records_) format(r, &text);
  records_.clear();
  std::fwrite(text.data(), 1, text.size(), file_);
}

namespace {

void appendInt(std::string* out, uint64_t v) {
  char buf[24];
  const auto end = std::to_chars(buf, buf + sizeof(buf), v).ptr;
  out->append(buf, end);
}

// Seconds as microseconds with three decimals, as "ts" and "dur" take them.
void appendMicros(std::string* out, double seconds) {
  const int64_t ns = std::llround(seconds * 1e9);
  if (ns < 0) out->push_back('-');
  const uint64_t a = static_cast<uint64_t>(ns < 0 ? -ns : ns);
  appendInt(out, a / 1000);
  char frac[4] = {'.', char('0' + a % 1000 / 100), char('0' + a % 100 / 10), char('0' + a % 10)};
  out->append(frac, 4);
}

}  // namespace

void Timeline::format(const Record& r, std::string* out) {
  out->append(",\n{\"name\":\"");
  if (r.kind == Kind::Span) {
    if (r.seq) {
      out->push_back('#');
      appendInt(out, r.seq);
    } else {
      out->append("p2p");
    }
    out->append("\",\"cat\":\"channel\"");
  } else if (r.kind == Kind::Step) {
    out->append(r.name);
    out->append("\",\"cat\":\"step\"");
  } else {
    auto it = described_.find(r.desc);
    if (it == described_.end()) {
      const std::string what = escaped(OpDesc::unpack(r.desc).describe());
      it = described_.emplace(r.desc, what.substr(0, what.find('('))).first;
    }
    out->append(it->second);
    out->append(" #");
    appendInt(out, r.seq);
    out->append("\",\"cat\":\"call\"");
  }
  out->append(",\"ph\":\"X\",\"pid\":");
  appendInt(out, rank_);
  out->append(",\"tid\":");
  appendInt(out, r.kind == Kind::Call ? 0 : r.nchannels + 1);
  out->append(",\"ts\":");
  appendMicros(out, r.start);
  out->append(",\"dur\":");
  appendMicros(out, r.end - r.start);
  if (r.kind == Kind::Step) {
    out->append(",\"args\":{\"seq\":");
    appendInt(out, r.seq);
    for (auto [key, peer] : {std::pair<const char*, int>{",\"from\":", r.recvPeer}, {",\"to\":", r.sendPeer}})
      if (peer >= 0) {
        out->append(key);
        appendInt(out, static_cast<uint64_t>(peer));
      }
    out->append(",\"bytes\":");
    appendInt(out, r.desc);
    out->push_back('}');
  } else if (r.kind == Kind::Call) {
    const OpDesc d = OpDesc::unpack(r.desc);
    out->append(",\"args\":{\"call\":\"");
    out->append(escaped(d.describe()));
    out->append("\",\"seq\":");
    appendInt(out, r.seq);
    out->append(",\"bytes\":");
    appendInt(out, d.count * strata_datatype_size(d.datatype));
    out->append(",\"algorithm\":\"");
    out->append(r.name);
    out->append("\",\"channels\":");
    appendInt(out, static_cast<uint64_t>(r.nchannels));
    out->append(",\"transports\":\"");
    out->append(escaped(transports_));
    out->append(r.ok ? "\",\"ok\":true}" : "\",\"ok\":false}");
  }
  out->push_back('}');
}

}  // namespace strata::timeline
