// Kernel parameter structs, shared by the host launchers (C++) and the device templates (NVRTC):
// plain types only, so both sides agree on the layout. Shapes are noted per field.
#pragma once

struct EmbedParams {
  const void* table;   // [vocab, hidden] W
  const int* tokens;   // [n]
  float* out;          // [n, hidden]
  long long n, hidden;
};

struct RmsNormParams {
  const float* x;      // [rows, dim]
  const void* gamma;   // [dim] W
  float* out;          // [rows, dim]
  long long rows, dim;
  float eps;
};

struct LinearParams {
  const float* x;      // [*, in]; row t of the output reads row (rows ? rows[t] : t)
  const int* rows;     // [n] or null
  const void* w;       // [out_dim, in] W
  const void* bias;    // [out_dim] W or null
  float* out;          // [n, out_dim]
  long long n, in, out_dim;
};

struct RopeParams {
  const float* x;        // [n, heads * head_dim]
  float* out;            // [n, heads * head_dim] (may alias x)
  const int* positions;  // [n]
  const float* inv_freq; // [head_dim / 2]
  long long n, heads, head_dim;
};

struct KvWriteParams {
  const float* k;        // [n, kv_dim]
  const float* v;        // [n, kv_dim]
  float* k_cache;        // [slots, max_seq, kv_dim]
  float* v_cache;        // [slots, max_seq, kv_dim]
  const int* positions;  // [n]
  const int* slots;      // [n]
  long long n, kv_dim, max_seq;
};

struct AttentionParams {
  const float* q;        // [n, heads * head_dim]
  const float* k_cache;  // [slots, max_seq, kv_heads * head_dim]
  const float* v_cache;
  float* out;            // [n, heads * head_dim]
  const int* positions;  // [n]; token t attends to positions [0, positions[t]] of its slot
  const int* slots;      // [n]
  long long n, heads, kv_heads, head_dim, max_seq;
  float scale;
};

struct ElementwiseParams {
  const float* a;        // [count]
  const float* b;        // [count]
  float* out;            // [count]
  long long count;
};

struct CastParams {
  const float* x;        // [count]
  void* out;             // [count] OUT
  long long count;
};

struct BiasParams {
  float* out;            // [n, cols], bias added in place
  const void* bias;      // [cols] W
  long long n, cols;
};

struct GatherRowsParams {
  const float* x;        // [*, cols]
  const int* rows;       // [n]
  float* out;            // [n, cols]
  long long n, cols;
};

struct ArgmaxParams {
  const float* logits;   // [rows, vocab]
  int* out;              // [rows]
  long long rows, vocab;
};
