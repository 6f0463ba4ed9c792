#include "shm_slot_stores.h"

#include <algorithm>

#include "log.h"

namespace strata::shm {

bool StoreChoice::next() {
  ++ops_;
  if (ops_ <= kAlternate) return ops_ % 2 == 0;
  looking_ = ops_ >= nextLook_;
  return looking_ ? !best() : best();
}

bool StoreChoice::best() const {
  return secondsPerByte_[1] > 0 && secondsPerByte_[1] * kMargin < secondsPerByte_[0];
}

void StoreChoice::record(bool nonTemporal, uint64_t bytes, double seconds) {
  if (bytes == 0 || seconds <= 0) return;
  const bool before = best();
  secondsPerByte_[nonTemporal ? 1 : 0] = seconds / static_cast<double>(bytes);
  const bool changed = best() != before;
  if (changed)
    wait_ = kLookMin;
  else if (looking_)
    wait_ = std::min(2 * wait_, kLookMax);
  if (changed || looking_) nextLook_ = ops_ + wait_;
  looking_ = false;
}

void SlotStores::begin(const SlotTag& tag) {
  Current& c = current_;
  if (c.kind) {
    c.kind->bytes = c.bytes;
    if (c.timed) {
      c.kind->choice.record(c.nonTemporal, c.bytes, c.lastPublish - c.start);
      STRATA_TRACE(SHM, "slot stores: operation #%llu moved %llu bytes with %s stores in %.3f ms; now best: %s",
                   (unsigned long long)c.tag.seq, (unsigned long long)c.bytes,
                   c.nonTemporal ? "non-temporal" : "regular", (c.lastPublish - c.start) * 1e3,
                   c.kind->choice.best() ? "non-temporal" : "regular");
    }
  }
  Kind* kind = nullptr;
  for (Kind& k : kinds_)
    if (k.desc == tag.desc && k.bytes > 0) kind = &k;
  if (!kind) {
    // A kind not seen lately: moved once with regular stores, untimed, to
    // learn how many bytes it carries.
    kind = &kinds_[nextKind_++ % kKinds];
    *kind = Kind{tag.desc, 0, StoreChoice{}};
  }
  c = Current{tag, kind, false, kind->bytes >= minOpBytes_, 0, 0, 0};
  if (c.timed) {
    c.nonTemporal = kind->choice.next();
    c.start = c.lastPublish = nowSeconds();
  }
}

}  // namespace strata::shm
