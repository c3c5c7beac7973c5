// gemm.wgmma's barrier protocol (kernels/cuda/gemm/wgmma.cuh), step by step on the host: the
// producer refills the stage of step kt once the consumers released step kt - STAGES, and marks
// step kt - AHEAD full after issuing step kt (the rest when it is done); the consumers wait for
// step j's full barrier, run it, and release step j (PIPE 0) or step j - 1 (PIPE 1, one step
// late). The kernel's lead (gemm/pipeline.h) must let every K length finish at every STAGES and
// PIPE of the family; the lead the first PIPE 1 run had (STAGES - 1) must not (it hung on an
// H100), which shows the model can tell. At LOAD 1 the copy engine marks a step full once its bytes
// land, whatever the producer does next: a step is full as soon as it is issued, and no lead.
// SCHED 1 (gemm/wgmma_pingpong.cuh) is modelled with the barriers' phases and parity waits as the
// hardware has them, since there a wait on the wrong phase passes silently.
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

// SCHED 1: a persistent block's producer thread copies the steps of its tiles in order (tile i's K
// steps are the block's steps i kt_n ..), consumer c runs the block's tiles c, c + 2, ..., and a
// consumer starts waiting for a tile's stages only once the other has waited for all of its
// previous tile's (the turn barriers). Modelled with mbarriers as the hardware has them: a phase
// completes at its count of arrivals, and a parity wait passes while the barrier's current phase
// has the other parity, so a wait more than one phase early passes on an older phase. Under random
// interleavings every run must finish, no consumer may read a stage before its step's copy landed
// there, and no copy may land in a stage whose previous step is still read. Without the turns a
// consumer's first wait passes on an older phase in some run: the model can tell.
struct Bar {
  int count, pending, phase = 0;
  explicit Bar(int c) : count(c), pending(c) {}
  void arrive() {
    if (--pending == 0) ++phase, pending = count;
  }
  bool passed(int parity) const { return (phase & 1) != parity; }
};
struct PingpongRun {
  bool finished = false, early = false, overwrote = false;
};
PingpongRun run_pingpong(int tiles, int kt_n, int stages, int pipe, bool turns, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<Bar> full(size_t(stages), Bar(1)), empty(size_t(stages), Bar(1));
  std::vector<Bar> turn(2, Bar(1));
  std::vector<int> in_stage(size_t(stages), -1);          // the step whose copy is in each stage
  std::vector<bool> released(size_t(tiles * kt_n), false);  // a step's stage read and given back
  const int steps = tiles * kt_n;
  int produced = 0;
  struct Consumer {
    int j = 0, kt = 0;  // its j-th tile (the block's tile 2 j + c), the next K step
    bool turn_taken = false, done = false;
  } cons[2];
  PingpongRun out;
  for (;;) {
    std::vector<int> ready;  // 0: the producer; 1 + c: consumer c
    if (produced < steps) {
      const int s = produced % stages;
      if (produced < stages || empty[size_t(s)].passed((produced / stages - 1) & 1)) ready.push_back(0);
    }
    for (int c = 0; c < 2; ++c) {
      Consumer& k = cons[c];
      const int tile = 2 * k.j + c;
      if (k.done || tile >= tiles) continue;
      if (!k.turn_taken && turns) {
        const bool first = c == 0 && k.j == 0;
        if (first || (c == 1 ? turn[1].passed(k.j & 1) : turn[0].passed((k.j - 1) & 1))) ready.push_back(1 + c);
        continue;
      }
      const int step = tile * kt_n + k.kt;
      if (full[size_t(step % stages)].passed((step / stages) & 1)) ready.push_back(1 + c);
    }
    if (ready.empty()) break;
    const int a = ready[rng() % ready.size()];
    if (a == 0) {
      const int s = produced % stages;
      if (produced >= stages && !released[size_t(produced - stages)]) out.overwrote = true;
      in_stage[size_t(s)] = produced++;
      full[size_t(s)].arrive();  // the copy landed: its bytes complete the phase
      continue;
    }
    const int c = a - 1;
    Consumer& k = cons[c];
    if (!k.turn_taken && turns) {
      k.turn_taken = true;
      continue;
    }
    const int tile = 2 * k.j + c, step = tile * kt_n + k.kt;
    if (in_stage[size_t(step % stages)] != step) out.early = true;  // passed on an older phase
    const int give = pipe == 0 ? step : (k.kt > 0 ? step - 1 : -1);
    if (give >= 0) released[size_t(give)] = true, empty[size_t(give % stages)].arrive();
    if (++k.kt == kt_n) {  // the tile's last stage waited for: the other's turn, then its stores
      if (turns) turn[size_t(1 - c)].arrive();
      if (pipe == 1) released[size_t(step)] = true, empty[size_t(step % stages)].arrive();
      k.kt = 0;
      ++k.j;
      k.turn_taken = false;
      if (2 * k.j + c >= tiles) k.done = true;
    }
  }
  out.finished = produced == steps;
  for (int c = 0; c < 2; ++c) out.finished = out.finished && (cons[c].done || c >= tiles);
  return out;
}

TEST(WgmmaProtocol, PersistentConsumersTakingTurnsFinishAndNeverReadEarly) {
  for (int stages : {3, 4, 5})
    for (int pipe : {0, 1})
      for (int tiles : {1, 2, 3, 4, 7})
        for (int kt_n : {1, 2, 3, 5, 8, 13}) {
          bool broke = false;
          for (unsigned seed = 0; seed < 100; ++seed) {
            const PingpongRun ok = run_pingpong(tiles, kt_n, stages, pipe, true, seed);
            const std::string at = "STAGES " + std::to_string(stages) + " PIPE " + std::to_string(pipe) + ", " +
                                   std::to_string(tiles) + " tiles of " + std::to_string(kt_n) + " steps, seed " + std::to_string(seed);
            ASSERT_TRUE(ok.finished) << at;
            ASSERT_FALSE(ok.early) << at;
            ASSERT_FALSE(ok.overwrote) << at;
            broke = broke || run_pingpong(tiles, kt_n, stages, pipe, false, seed).early;
          }
          // Without turns, consumer 1's first stage is two or more phases on whenever its tile
          // starts that far into the ring: some run passes on an older phase.
          if (tiles > 1 && kt_n >= 2 * stages) EXPECT_TRUE(broke) << stages << " " << pipe << " " << tiles << " " << kt_n;
        }
}

}  // namespace
