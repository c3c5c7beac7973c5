// gemm.wgmma's barrier protocol (kernels/cuda/gemm/wgmma.cuh), step by step on the host: the
// producer refills the stage of step kt once the consumers released step kt - STAGES, and marks
// step kt - AHEAD full after issuing step kt (the rest when it is done); the consumers wait for
// step j's full barrier, run it, and release step j (PIPE 0) or step j - 1 (PIPE 1, one step
// late). The kernel's lead (gemm/pipeline.h) must let every K length finish at every STAGES and
// PIPE of the family; the lead the first PIPE 1 run had (STAGES - 1) must not (it hung on an
// H100), which shows the model can tell. At LOAD 1 the copy engine marks a step full once its bytes
// land, whatever the producer does next: a step is full as soon as it is issued, and no lead.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "../../kernels/cuda/gemm/pipeline.h"

namespace {

// Whether the consumers get through all `steps` K steps (no barrier waits on itself).
bool finishes(int steps, int stages, int pipe, int ahead, bool tma = false) {
  int produced = -1, consumed = -1;
  bool producer_done = false;
  std::set<int> full, released;
  for (bool moved = true; moved;) {
    moved = false;
    if (produced + 1 < steps) {
      const int kt = produced + 1;
      if (kt < stages || released.count(kt - stages)) {
        produced = kt;
        if (tma) full.insert(kt);
        else if (kt >= ahead) full.insert(kt - ahead);
        moved = true;
      }
    } else if (!producer_done) {
      for (int j = std::max(steps - ahead, 0); j < steps; ++j) full.insert(j);
      producer_done = moved = true;
    }
    if (consumed + 1 < steps && full.count(consumed + 1)) {
      ++consumed;
      if (pipe == 0) released.insert(consumed);
      else if (consumed > 0) released.insert(consumed - 1);
      moved = true;
    }
  }
  return consumed == steps - 1;
}

template <int STAGES, int PIPE>
void expect_finishes() {
  for (int steps = 1; steps <= 24; ++steps) {
    EXPECT_TRUE(finishes(steps, STAGES, PIPE, WgmmaProducerAhead<STAGES, PIPE>::value))
        << "STAGES " << STAGES << " PIPE " << PIPE << ", " << steps << " K steps";
    EXPECT_TRUE(finishes(steps, STAGES, PIPE, 0, true)) << "LOAD 1, STAGES " << STAGES << " PIPE " << PIPE << ", " << steps;
    if (PIPE == 1 && steps > STAGES)
      EXPECT_FALSE(finishes(steps, STAGES, PIPE, STAGES - 1)) << "the old lead, STAGES " << STAGES << ", " << steps;
  }
}

TEST(WgmmaProtocol, EveryStagesAndPipeFinishesAtEveryKLength) {
  expect_finishes<3, 0>();
  expect_finishes<4, 0>();
  expect_finishes<5, 0>();
  expect_finishes<3, 1>();
  expect_finishes<4, 1>();
  expect_finishes<5, 1>();
}

}  // namespace
