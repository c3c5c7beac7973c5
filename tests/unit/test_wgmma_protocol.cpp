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
#include <random>
#include <set>
#include <vector>

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

// CLUSTER 2 at LOAD 1: two blocks, each with a producer thread and two consumer warpgroups. Each
// producer copies its A and half of B into both blocks' stage, so a step is full in a block once
// both producers issued it, and a producer may refill a stage only once every consumer warpgroup of
// both blocks released the step it held (each arrives on its own block's empty barrier and on the
// other's: four arrivals). Run under random interleavings: every run must finish, and no copy may
// land in a stage a consumer still reads. A producer that waited for its own block's consumers only
// (two arrivals) must break that in some run: the model can tell.
struct PairRun {
  bool finished = false, overwrote = false;
};
PairRun run_pair(int steps, int stages, int pipe, bool wait_for_both, unsigned seed) {
  std::mt19937 rng(seed);
  int produced[2] = {0, 0};                   // the next step each producer issues
  int consumed[2][2] = {{0, 0}, {0, 0}};      // the next step each consumer warpgroup runs
  // Per block and step: how many of its warpgroups released the step.
  std::vector<int> released[2] = {std::vector<int>(size_t(steps), 0), std::vector<int>(size_t(steps), 0)};
  PairRun out;
  for (;;) {
    std::vector<int> ready;  // actors 0, 1: producers; 2 + 2 b + w: consumer warpgroup w of block b
    for (int b = 0; b < 2; ++b) {
      const int kt = produced[b];
      if (kt < steps) {
        const int old = kt - stages;
        const bool free = old < 0 || (released[b][size_t(old)] == 2 && (!wait_for_both || released[b ^ 1][size_t(old)] == 2));
        if (free) ready.push_back(b);
      }
      for (int w = 0; w < 2; ++w) {
        const int j = consumed[b][w];
        if (j < steps && produced[0] > j && produced[1] > j) ready.push_back(2 + 2 * b + w);
      }
    }
    if (ready.empty()) break;
    const int a = ready[rng() % ready.size()];
    if (a < 2) {
      const int kt = produced[a]++;
      // Its copies land in both blocks' stage: every warpgroup there must be done with step kt - STAGES.
      if (kt >= stages)
        for (int b = 0; b < 2; ++b)
          if (released[b][size_t(kt - stages)] < 2) out.overwrote = true;
    } else {
      const int b = (a - 2) / 2, w = (a - 2) % 2;
      const int j = consumed[b][w]++;
      const int done = pipe == 0 ? j : j - 1;  // PIPE 1 releases a step once the next one is issued
      if (done >= 0) ++released[b][size_t(done)];
    }
  }
  out.finished = consumed[0][0] == steps && consumed[0][1] == steps && consumed[1][0] == steps && consumed[1][1] == steps;
  return out;
}

TEST(WgmmaProtocol, PairsSharingBFinishAndNeverOverwriteAStageInUse) {
  for (int stages : {3, 4, 5})
    for (int pipe : {0, 1})
      for (int steps : {1, 2, 3, 5, 8, 17}) {
        bool broke = false;
        for (unsigned seed = 0; seed < 200; ++seed) {
          const PairRun ok = run_pair(steps, stages, pipe, true, seed);
          ASSERT_TRUE(ok.finished) << "STAGES " << stages << " PIPE " << pipe << ", " << steps << " steps, seed " << seed;
          ASSERT_FALSE(ok.overwrote) << "STAGES " << stages << " PIPE " << pipe << ", " << steps << " steps, seed " << seed;
          broke = broke || run_pair(steps, stages, pipe, false, seed).overwrote;
        }
        // With more steps than stages some run refills a stage the other block still reads.
        if (steps > stages + 1) EXPECT_TRUE(broke) << "STAGES " << stages << " PIPE " << pipe << ", " << steps << " steps";
      }
}

}  // namespace
