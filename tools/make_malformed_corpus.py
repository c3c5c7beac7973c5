#!/usr/bin/env python3
"""Writes tests/fixtures/malformed/: one tiny model folder per case, plus cases.tsv.

Each malformed case is a valid base model (llama, hidden 8, 1 layer, vocab 16, bf16) with one
defect. cases.tsv says, per case, whether loading must succeed ("ok") or fail ("error"), which
file the one-line error must name, and substrings the message must contain (the field or tensor
and what is wrong). The "ok" cases keep the checks honest: the base loads, so each error comes
from its defect. Tensor values follow value(name, i) = ((7 * i + len(name)) % 13 - 6) / 8, exact
in bf16/f16/f32, so a test can check that bytes are read from the right place.

It also writes the seed corpora of the libFuzzer targets, fuzz/corpus/<target>/: valid files of
each kind and a few of the malformed ones, so fuzzing starts from both sides of every check.

Run from the repository root: python3 tools/make_malformed_corpus.py (output is committed).
"""
import json
import os
import shutil
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "tests", "fixtures", "malformed")
FUZZ = os.path.join(ROOT, "fuzz", "corpus")

BASE_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 8,
    "intermediate_size": 16,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 4,
    "vocab_size": 16,
    "max_position_embeddings": 64,
    "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0,
    "tie_word_embeddings": True,
    "hidden_act": "silu",
    "torch_dtype": "bfloat16",
    "bos_token_id": 1,
    "eos_token_id": 2,
}
BASE_GENERATION = {"bos_token_id": 1, "eos_token_id": [2, 3]}

DTYPE_SIZE = {"F32": 4, "F16": 2, "BF16": 2, "I32": 4, "I8": 1, "F64": 8}


def expected_tensors(cfg):
    """(name, shape) of every tensor the architecture reads, written from the HF model code."""
    h, f = cfg["hidden_size"], cfg["intermediate_size"]
    hd = cfg.get("head_dim") or h // cfg["num_attention_heads"]
    q, kv = cfg["num_attention_heads"] * hd, cfg.get("num_key_value_heads", cfg["num_attention_heads"]) * hd
    mt = cfg["model_type"]
    out = [("model.embed_tokens.weight", [cfg["vocab_size"], h])]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", [h]), (p + "self_attn.q_proj.weight", [q, h]),
                (p + "self_attn.k_proj.weight", [kv, h]), (p + "self_attn.v_proj.weight", [kv, h]),
                (p + "self_attn.o_proj.weight", [h, q])]
        if mt == "qwen2":
            out += [(p + "self_attn.q_proj.bias", [q]), (p + "self_attn.k_proj.bias", [kv]),
                    (p + "self_attn.v_proj.bias", [kv])]
        if mt == "qwen3":
            out += [(p + "self_attn.q_norm.weight", [hd]), (p + "self_attn.k_norm.weight", [hd])]
        out += [(p + "post_attention_layernorm.weight", [h]), (p + "mlp.gate_proj.weight", [f, h]),
                (p + "mlp.up_proj.weight", [f, h]), (p + "mlp.down_proj.weight", [h, f])]
    out.append(("model.norm.weight", [h]))
    if not cfg.get("tie_word_embeddings", False):
        out.append(("lm_head.weight", [cfg["vocab_size"], h]))
    return out


def value(name, i):
    return ((7 * i + len(name)) % 13 - 6) / 8.0


def encode(name, dtype, n):
    vals = [value(name, i) for i in range(n)]
    if dtype == "F32":
        return struct.pack(f"<{n}f", *vals)
    if dtype == "F16":
        return struct.pack(f"<{n}e", *vals)
    if dtype == "BF16":  # the values are exact in bf16: keep the top half of the f32 bits
        return b"".join(struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0])[2:] for v in vals)
    if dtype == "I32":
        return struct.pack(f"<{n}i", *[int(v * 8) for v in vals])
    raise ValueError(dtype)


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def tensors_for(cfg, dtype="BF16"):
    """[name, dtype, shape, data] for every expected tensor."""
    return [[n, dtype, s, encode(n, dtype, numel(s))] for n, s in expected_tensors(cfg)]


def header_json(tensors, metadata=None):
    h = {}
    if metadata is not None:
        h["__metadata__"] = metadata
    off = 0
    for name, dtype, shape, data in tensors:
        h[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(data)]}
        off += len(data)
    return json.dumps(h, separators=(",", ":"))


def safetensors(tensors, metadata=None, header=None, pad_to=8, extra_pad=0):
    """A safetensors file; `header` (str or bytes) replaces the generated JSON when given."""
    text = header if header is not None else header_json(tensors, metadata)
    raw = text.encode("utf-8") if isinstance(text, str) else text
    while (len(raw) - extra_pad) % pad_to != 0:
        raw += b" "
    raw += b" " * extra_pad
    return struct.pack("<Q", len(raw)) + raw + b"".join(t[3] for t in tensors)


def config_text(cfg):
    return json.dumps(cfg, indent=2) + "\n"


def base_files(cfg=None, tensors=None, generation=BASE_GENERATION):
    cfg = cfg if cfg is not None else dict(BASE_CONFIG)
    files = {"config.json": config_text(cfg)}
    if generation is not None:
        files["generation_config.json"] = config_text(generation)
    files["model.safetensors"] = safetensors(tensors if tensors is not None else tensors_for(cfg))
    return files


CASES = []  # (name, expect, file, needles, files)


def case(name, file, needles, files, expect="error"):
    CASES.append((name, expect, file or ".", needles, files))


def with_config(**changes):
    cfg = dict(BASE_CONFIG)
    for k, v in changes.items():
        if v is DELETE:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    return cfg


DELETE = object()


def config_case(name, needles, cfg=None, text=None, **changes):
    """A case whose config.json is broken; the weights are the valid base ones."""
    files = base_files()
    files["config.json"] = text if text is not None else config_text(cfg if cfg is not None else with_config(**changes))
    case(name, "config.json", needles, files)


def generation_case(name, needles, text):
    files = base_files()
    files["generation_config.json"] = text
    case(name, "generation_config.json", needles, files)


def st_case(name, needles, data, cfg=None):
    files = base_files(cfg)
    files["model.safetensors"] = data
    case(name, "model.safetensors", needles, files)


def base_tensors():
    return tensors_for(BASE_CONFIG)


def edited_header(edit, tensors=None):
    """The base header as a dict, changed by edit(h), re-serialised."""
    tensors = tensors if tensors is not None else base_tensors()
    h = json.loads(header_json(tensors, {"format": "pt"}))
    edit(h)
    return tensors, json.dumps(h, separators=(",", ":"))


def st_header_case(name, needles, edit, data_change=None):
    tensors, text = edited_header(edit)
    data = safetensors(tensors, header=text)
    if data_change is not None:
        data = data_change(data)
    st_case(name, needles, data)


Q = "model.layers.0.self_attn.q_proj.weight"
DOWN = "model.layers.0.mlp.down_proj.weight"
NORM = "model.norm.weight"


def build_cases():
    # ---- valid folders: these must load
    case("ok_base", "", [], base_files(), expect="ok")
    cfg32 = with_config(torch_dtype="float32")
    t32 = tensors_for(cfg32, "F32")
    # Header length 8k+3 puts every tensor at an odd address: must still read correctly.
    un = base_files(cfg32, t32)
    un["model.safetensors"] = safetensors(t32, {"format": "pt"}, pad_to=1, extra_pad=0)
    hdr_len = struct.unpack("<Q", un["model.safetensors"][:8])[0]
    pad = (3 - hdr_len) % 8
    un["model.safetensors"] = safetensors(t32, {"format": "pt"}, pad_to=1, extra_pad=pad)
    assert struct.unpack("<Q", un["model.safetensors"][:8])[0] % 8 == 3
    case("ok_unaligned_f32", "", [], un, expect="ok")
    f16 = base_files(with_config(torch_dtype="float16"), tensors_for(BASE_CONFIG, "F16"))
    case("ok_f16", "", [], f16, expect="ok")
    q3 = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 8, "intermediate_size": 16,
          "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 6,
          "vocab_size": 16, "max_position_embeddings": 64, "rms_norm_eps": 1e-06,
          "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},
          "tie_word_embeddings": False, "hidden_act": "silu", "dtype": "bfloat16", "eos_token_id": 2}
    case("ok_qwen3_transformers5", "", [], base_files(q3, generation=None), expect="ok")
    q2 = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 8, "intermediate_size": 16,
          "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
          "vocab_size": 16, "max_position_embeddings": 64, "rope_theta": 10000.0, "tie_word_embeddings": True,
          "use_sliding_window": False, "sliding_window": 32, "eos_token_id": [2, 3]}
    case("ok_qwen2_bias", "", [], base_files(q2, generation=None), expect="ok")
    l3 = with_config(rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                   "high_freq_factor": 4.0, "original_max_position_embeddings": 16})
    case("ok_llama3_rope", "", [], base_files(l3), expect="ok")
    # Old llama checkpoints store rotary caches that HF ignores.
    inv = base_tensors() + [["model.layers.0.self_attn.rotary_emb.inv_freq", "F32", [2], encode("x", "F32", 2)]]
    case("ok_rotary_inv_freq", "", [], base_files(tensors=inv), expect="ok")
    # Sharded: two files and an index.
    sh = {"config.json": config_text(BASE_CONFIG), "generation_config.json": config_text(BASE_GENERATION)}
    tensors = base_tensors()
    first, second = tensors[:5], tensors[5:]
    sh["model-00001-of-00002.safetensors"] = safetensors(first)
    sh["model-00002-of-00002.safetensors"] = safetensors(second)
    wm = {t[0]: "model-00001-of-00002.safetensors" for t in first}
    wm.update({t[0]: "model-00002-of-00002.safetensors" for t in second})
    index = {"metadata": {"total_size": sum(len(t[3]) for t in tensors)}, "weight_map": wm}
    sh["model.safetensors.index.json"] = config_text(index)
    case("ok_sharded", "", [], sh, expect="ok")

    # ---- safetensors framing
    st_case("st_empty_file", ["too small"], b"")
    st_case("st_seven_bytes", ["7 bytes", "too small"], b"\x10\x00\x00\x00\x00\x00\x00")
    st_case("st_header_length_huge", ["100 MB"], struct.pack("<Q", 2**63 + 5) + b"{}      ")
    st_case("st_header_length_over_limit", ["100 MB"], struct.pack("<Q", 100_000_001) + b"{}      ")
    st_case("st_header_length_past_eof", ["past the end"], struct.pack("<Q", 4096) + b"{}      ")
    st_case("st_header_not_brace", ["start with '{'"], safetensors(base_tensors(), header=" " + header_json(base_tensors())))
    st_case("st_header_array", ["start with '{'"], safetensors([], header="[]"))
    st_case("st_header_truncated_json", ["header", "invalid JSON"], safetensors([], header='{"a":{"dtype":"F32",'))
    st_case("st_header_trailing_garbage", ["invalid JSON"], safetensors([], header="{} x"))
    st_case("st_header_nul_padding", ["invalid JSON"], safetensors([], header=b"{}\x00\x00\x00\x00\x00\x00"))
    bad = header_json(base_tensors()).encode().replace(b"model.norm.weight", b"model.norm.w\xffight")
    st_case("st_bad_utf8_name", ["invalid JSON", "UTF-8"], safetensors(base_tensors(), header=bad))
    overlong = header_json(base_tensors(), {"format": "pt"}).encode().replace(b'"pt"', b'"p\xc0\xaf"')
    st_case("st_overlong_utf8", ["invalid JSON", "UTF-8"], safetensors(base_tensors(), header=overlong))
    surrogate = header_json(base_tensors(), {"format": "pt"}).encode().replace(b'"pt"', b'"\xed\xa0\x80"')
    st_case("st_encoded_surrogate", ["invalid JSON", "UTF-8"], safetensors(base_tensors(), header=surrogate))
    lone = header_json(base_tensors(), {"format": "pt"}).replace('"pt"', '"\\ud800"')
    st_case("st_lone_surrogate_escape", ["invalid JSON", "surrogate"], safetensors(base_tensors(), header=lone))
    t = base_tensors()
    dup = header_json(t).replace("{", '{"model.norm.weight":{"dtype":"BF16","shape":[8],"data_offsets":[0,16]},', 1)
    st_case("st_duplicate_tensor", ["duplicate key", "model.norm.weight"], safetensors(t, header=dup))
    st_case("st_depth_bomb", ["__metadata__", "not a string"],
            safetensors(base_tensors(), header='{"__metadata__":{"a":' + "[" * 5000 + "]" * 5000 + "}}"))

    # ---- __metadata__
    st_header_case("st_metadata_not_string", ["__metadata__", "format"], lambda h: h["__metadata__"].update(format=1))
    st_header_case("st_metadata_nested", ["__metadata__", "format"], lambda h: h["__metadata__"].update(format={"a": "b"}))
    st_header_case("st_metadata_array", ["__metadata__"], lambda h: h.update(__metadata__=["pt"]))

    # ---- tensor entries
    st_header_case("st_unknown_dtype", [Q, "unknown dtype", "Q4_K"], lambda h: h[Q].update(dtype="Q4_K"))
    st_header_case("st_dtype_lowercase", [Q, "unknown dtype", "bf16"], lambda h: h[Q].update(dtype="bf16"))
    st_header_case("st_dtype_not_string", [Q, "dtype"], lambda h: h[Q].update(dtype=2))
    st_header_case("st_missing_dtype", [Q, "dtype"], lambda h: h[Q].pop("dtype"))
    st_header_case("st_unknown_field", [Q, "unknown field", "offsets"], lambda h: h[Q].update(offsets=[0, 0]))
    st_header_case("st_entry_not_object", [Q, "expected an object"], lambda h: h.update({Q: [0, 128]}))
    st_header_case("st_shape_negative", [Q, "shape", "-8"], lambda h: h[Q].update(shape=[-8, -8]))
    st_header_case("st_shape_float", [Q, "shape", "8.0"], lambda h: h[Q].update(shape=[8.0, 8]))
    st_header_case("st_shape_string", [Q, "shape"], lambda h: h[Q].update(shape="[8, 8]"))
    st_header_case("st_shape_missing", [Q, "shape"], lambda h: h[Q].pop("shape"))
    st_case("st_shape_depth_bomb", ["\"t\"", "shape: dimension"],
            safetensors([], header='{"t":{"dtype":"F32","shape":' + "[" * 5000 + "]" * 5000 + ',"data_offsets":[0,0]}}'))
    st_header_case("st_shape_rank_9", [Q, "rank 9"], lambda h: h[Q].update(shape=[1] * 7 + [8, 8]))
    st_header_case("st_shape_numel_overflow", [Q, "overflow"], lambda h: h[Q].update(shape=[2**32, 2**32, 2**32]))
    st_header_case("st_shape_bytes_overflow", [Q, "overflow"], lambda h: h[Q].update(shape=[2**31, 2**31, 2]))
    st_header_case("st_shape_dim_too_big", [Q, "shape"], lambda h: h[Q].update(shape=[2**64 - 1]))
    st_header_case("st_shape_dim_beyond_u64", [Q, "shape"], lambda h: h[Q].update(shape=[2**64, 1]))
    st_header_case("st_offsets_one_value", [Q, "data_offsets"], lambda h: h[Q].update(data_offsets=[0]))
    st_header_case("st_offsets_three_values", [Q, "data_offsets"], lambda h: h[Q].update(data_offsets=[0, 1, 2]))
    st_header_case("st_offsets_negative", [Q, "data_offsets"], lambda h: h[Q].update(data_offsets=[-128, 0]))
    st_header_case("st_offsets_beyond_u64", [Q, "data_offsets"], lambda h: h[Q].update(data_offsets=[0, 2**64]))

    def shift_q(delta_begin, delta_end):
        return lambda h: h[Q].update(data_offsets=[h[Q]["data_offsets"][0] + delta_begin,
                                                   h[Q]["data_offsets"][1] + delta_end])

    st_header_case("st_offsets_end_before_begin", [Q, "before begin"],
                   lambda h: h[Q].update(data_offsets=[h[Q]["data_offsets"][1], h[Q]["data_offsets"][0]]))
    st_header_case("st_offsets_shape_mismatch", [Q, "data_offsets", "needs 128"], shift_q(0, -2))
    st_header_case("st_offsets_overlap", ["overlapping"], shift_q(-2, -2))
    st_header_case("st_offsets_gap", ["gap"], shift_q(2, 2))
    st_header_case("st_offsets_huge", [NORM, "data_offsets"],
                   lambda h: h[NORM].update(data_offsets=[2**63, 2**63 + 16]))
    st_header_case("st_offsets_wrap", [Q, "data_offsets"], lambda h: h[Q].update(data_offsets=[2**64 - 2, 126]))
    st_header_case("st_truncated_data", ["truncated"], lambda h: None, lambda d: d[:-10])
    st_header_case("st_truncated_whole_tensor", ["model.norm.weight", "truncated"], lambda h: None, lambda d: d[:-16])
    st_header_case("st_trailing_bytes", ["trailing bytes"], lambda h: None, lambda d: d + b"\0" * 8)
    st_header_case("st_zero_sized_past_end", ["zzz", "gap"],
                   lambda h: h.update({"zzz": {"dtype": "F32", "shape": [0], "data_offsets": [99999, 99999]}}))
    st_header_case("st_only_metadata_but_data", ["trailing bytes"], lambda h: [h.pop(k) for k in list(h) if k != "__metadata__"])

    # ---- binding the weights to the architecture
    t = [x for x in base_tensors() if x[0] != DOWN]
    st_case("bind_missing_tensor", ["missing tensor", DOWN], safetensors(t))
    t = base_tensors() + [["model.layers.0.mlp.extra_proj.weight", "BF16", [2], encode("x", "BF16", 2)]]
    st_case("bind_extra_tensor", ["unexpected tensor", "model.layers.0.mlp.extra_proj.weight"], safetensors(t))
    t = base_tensors() + [["model.layers.1.input_layernorm.weight", "BF16", [8], encode("x", "BF16", 8)]]
    st_case("bind_layer_beyond_config", ["unexpected tensor", "model.layers.1.input_layernorm.weight"], safetensors(t))
    t = [[n, d, ([16, 4] if n == Q else s), data] for n, d, s, data in base_tensors()]
    st_case("bind_misshaped_tensor", [Q, "shape [16, 4]", "expected [8, 8]"], safetensors(t))
    t = [[n, d, ([8, 8, 1] if n == Q else s), data] for n, d, s, data in base_tensors()]
    st_case("bind_extra_dim", [Q, "shape [8, 8, 1]"], safetensors(t))
    t = [[n, "I32", s, encode(n, "I32", numel(s))] if n == Q else [n, d, s, data] for n, d, s, data in base_tensors()]
    st_case("bind_int32_weight", [Q, "dtype I32"], safetensors(t))
    t = [[n, "I8", s, bytes(numel(s))] if n == "model.norm.weight" else [n, d, s, data]
         for n, d, s, data in base_tensors()]
    st_case("bind_int8_norm", ["model.norm.weight", "dtype I8"], safetensors(t))
    untied = with_config(tie_word_embeddings=False)
    files = base_files()
    files["config.json"] = config_text(untied)
    case("bind_untied_without_lm_head", "model.safetensors", ["missing tensor", "lm_head.weight"], files)
    t = base_tensors() + [["lm_head.weight", "BF16", [16, 4], encode("lm_head.weight", "BF16", 64)]]
    st_case("bind_tied_lm_head_misshaped", ["unexpected tensor", "lm_head.weight"], safetensors(t))
    q2_no_bias = {"model_type": "qwen2", "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
                  "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "vocab_size": 16,
                  "max_position_embeddings": 64, "tie_word_embeddings": True}
    files = base_files()
    files["config.json"] = config_text(q2_no_bias)  # qwen2 always has q/k/v biases; the llama weights lack them
    case("bind_qwen2_missing_bias", "model.safetensors", ["missing tensor", "model.layers.0.self_attn.q_proj.bias"], files)
    files = base_files()
    files["config.json"] = config_text(with_config(num_attention_heads=4, num_key_value_heads=2))
    case("bind_config_heads_disagree", "model.safetensors", [Q, "expected [16, 8]"], files)

    # ---- sharded checkpoints
    def sharded(mutate):
        files = dict(sh)
        idx = json.loads(files["model.safetensors.index.json"])
        mutate(files, idx)
        if "model.safetensors.index.json" in files and isinstance(idx, dict):
            files["model.safetensors.index.json"] = config_text(idx)
        return files

    S1, S2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    case("shard_missing_file", S2, ["cannot open"], sharded(lambda f, i: f.pop(S2)))
    case("shard_path_traversal", "model.safetensors.index.json", ["weight_map", "bad file name", "../"],
         sharded(lambda f, i: i["weight_map"].update({DOWN: "../" + S2})))
    case("shard_absolute_path", "model.safetensors.index.json", ["weight_map", "bad file name"],
         sharded(lambda f, i: i["weight_map"].update({DOWN: "/etc/passwd"})))
    case("shard_empty_file_name", "model.safetensors.index.json", ["weight_map", "bad file name"],
         sharded(lambda f, i: i["weight_map"].update({DOWN: ""})))
    case("shard_file_name_not_string", "model.safetensors.index.json", ["weight_map", DOWN],
         sharded(lambda f, i: i["weight_map"].update({DOWN: 2})))
    # The index says shard 1 holds a tensor that shard 2 stores.
    case("shard_tensor_in_other_shard", S2, [DOWN, "not listed"],
         sharded(lambda f, i: i["weight_map"].update({DOWN: S1})))
    both = dict(sh)
    first_plus = first + [x for x in second if x[0] == DOWN]
    both[S1] = safetensors(first_plus)
    case("shard_tensor_in_two_shards", S1, [DOWN, "not listed"], both)
    case("shard_index_lists_absent_tensor", "model.safetensors.index.json", ["model.layers.0.mlp.ghost.weight", S1],
         sharded(lambda f, i: i["weight_map"].update({"model.layers.0.mlp.ghost.weight": S1})))
    case("shard_index_no_weight_map", "model.safetensors.index.json", ["weight_map", "missing"],
         sharded(lambda f, i: i.pop("weight_map")))
    case("shard_index_empty_weight_map", "model.safetensors.index.json", ["weight_map"],
         sharded(lambda f, i: i.update(weight_map={})))
    case("shard_index_weight_map_array", "model.safetensors.index.json", ["weight_map"],
         sharded(lambda f, i: i.update(weight_map=[S1, S2])))
    files = dict(sh)
    files["model.safetensors.index.json"] = '{"weight_map": {"a": "' + S1 + '", "a": "' + S2 + '"}}\n'
    case("shard_index_duplicate_key", "model.safetensors.index.json", ["duplicate key"], files)
    files = dict(sh)
    files["model.safetensors.index.json"] = '{"weight_map": {'
    case("shard_index_truncated", "model.safetensors.index.json", ["invalid JSON"], files)
    files = dict(sh)
    files["model.safetensors.index.json"] = "[1, 2]"
    case("shard_index_not_object", "model.safetensors.index.json", ["expected a JSON object"], files)
    files = dict(sh)
    files[S2] = files[S2][:-4]
    case("shard_truncated", S2, ["truncated"], files)

    # ---- config.json
    files = base_files()
    del files["config.json"]
    case("cfg_missing", "config.json", ["missing"], files)
    config_case("cfg_empty", ["invalid JSON"], text="")
    config_case("cfg_not_json", ["invalid JSON"], text="model_type: llama\n")
    config_case("cfg_not_object", ["expected a JSON object"], text="[1, 2, 3]\n")
    config_case("cfg_bad_utf8", ["invalid JSON", "UTF-8"],
                text=config_text(with_config(architectures=["Llama\u00e9"])).replace("\\u00e9", "\udce9"))
    config_case("cfg_depth_bomb", ["nested deeper"], text='{"a": ' + "[" * 10000 + "]" * 10000 + "}")
    config_case("cfg_duplicate_key", ["duplicate key", "hidden_size"],
                text=config_text(BASE_CONFIG).replace('"hidden_size": 8,', '"hidden_size": 8, "hidden_size": 4096,'))
    config_case("cfg_nan", ["invalid JSON"], text=config_text(BASE_CONFIG).replace("1e-05", "NaN"))
    config_case("cfg_model_type_missing", ["model_type", "missing"], model_type=DELETE)
    config_case("cfg_model_type_gpt2", ["model_type", "gpt2"], model_type="gpt2")
    config_case("cfg_model_type_number", ["model_type", "expected a string"], model_type=3)
    config_case("cfg_hidden_size_missing", ["hidden_size", "missing"], hidden_size=DELETE)
    config_case("cfg_hidden_size_null", ["hidden_size", "missing"], hidden_size=None)
    config_case("cfg_hidden_size_string", ["hidden_size", "expected an integer"], hidden_size="8")
    config_case("cfg_hidden_size_fraction", ["hidden_size", "expected an integer"], hidden_size=8.5)
    config_case("cfg_hidden_size_bool", ["hidden_size", "expected an integer"], hidden_size=True)
    config_case("cfg_hidden_size_zero", ["hidden_size", "out of range"], hidden_size=0)
    config_case("cfg_hidden_size_negative", ["hidden_size", "out of range"], hidden_size=-8)
    config_case("cfg_hidden_size_absurd", ["hidden_size", "out of range"], hidden_size=2**40)
    config_case("cfg_hidden_size_beyond_i64", ["hidden_size"], hidden_size=2**70)
    config_case("cfg_hidden_size_1e300", ["hidden_size"], text=config_text(BASE_CONFIG).replace('"hidden_size": 8', '"hidden_size": 1e300'))
    config_case("cfg_hidden_size_1e999", ["invalid JSON", "1e999", "hidden_size"], text=config_text(BASE_CONFIG).replace('"hidden_size": 8', '"hidden_size": 1e999'))
    config_case("cfg_vocab_absurd", ["vocab_size", "out of range"], vocab_size=2**62)
    config_case("cfg_layers_absurd", ["num_hidden_layers", "out of range"], num_hidden_layers=10**9)
    config_case("cfg_intermediate_absurd", ["intermediate_size", "out of range"], intermediate_size=10**12)
    config_case("cfg_heads_zero", ["num_attention_heads", "out of range"], num_attention_heads=0)
    config_case("cfg_kv_heads_zero", ["num_key_value_heads", "out of range"], num_key_value_heads=0)
    config_case("cfg_gqa_not_divisible", ["num_key_value_heads", "does not divide"], num_attention_heads=4,
                num_key_value_heads=3)
    config_case("cfg_kv_heads_more_than_heads", ["num_key_value_heads", "does not divide"], num_key_value_heads=4)
    config_case("cfg_head_dim_not_derivable", ["head_dim", "not divisible"], head_dim=DELETE, num_attention_heads=3,
                num_key_value_heads=1)
    config_case("cfg_head_dim_odd", ["head_dim", "odd"], head_dim=5)
    config_case("cfg_head_dim_absurd", ["head_dim", "out of range"], head_dim=1 << 20)
    config_case("cfg_max_positions_missing", ["max_position_embeddings", "missing"], max_position_embeddings=DELETE)
    config_case("cfg_max_positions_absurd", ["max_position_embeddings", "out of range"], max_position_embeddings=2**40)
    config_case("cfg_rms_eps_negative", ["rms_norm_eps"], rms_norm_eps=-1e-5)
    config_case("cfg_rms_eps_string", ["rms_norm_eps", "expected a number"], rms_norm_eps="1e-5")
    config_case("cfg_hidden_act_gelu", ["hidden_act", "gelu"], hidden_act="gelu")
    config_case("cfg_rope_theta_string", ["rope_theta", "expected a number"], rope_theta="10000")
    config_case("cfg_rope_theta_zero", ["rope_theta"], rope_theta=0)
    config_case("cfg_rope_scaling_not_object", ["rope_scaling", "expected an object"], rope_scaling="llama3")
    config_case("cfg_rope_scaling_yarn", ["rope_scaling", "yarn"], rope_scaling={"rope_type": "yarn", "factor": 4.0})
    config_case("cfg_rope_llama3_no_factor", ["rope_scaling", "factor", "missing"],
                rope_scaling={"rope_type": "llama3", "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                              "original_max_position_embeddings": 16})
    config_case("cfg_rope_llama3_no_original_max", ["rope_scaling", "original_max_position_embeddings"],
                rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0})
    config_case("cfg_rope_llama3_freq_order", ["rope_scaling", "low_freq_factor"],
                rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0,
                              "original_max_position_embeddings": 16})
    config_case("cfg_rope_linear_factor_huge", ["rope_scaling", "factor"], rope_scaling={"type": "linear", "factor": 1e9})
    config_case("cfg_rope_parameters_no_theta", ["rope_parameters", "rope_theta", "missing"], rope_theta=DELETE,
                rope_parameters={"rope_type": "default"})
    config_case("cfg_rope_parameters_array", ["rope_parameters", "expected an object"], rope_parameters=[10000.0])
    config_case("cfg_rope_parameters_dynamic", ["rope_parameters", "dynamic"],
                rope_parameters={"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0})
    config_case("cfg_tie_not_bool", ["tie_word_embeddings", "true or false"], tie_word_embeddings="yes")
    config_case("cfg_torch_dtype_int8", ["torch_dtype", "int8"], torch_dtype="int8")
    config_case("cfg_eos_out_of_vocab", ["eos_token_id", "outside the vocabulary"], eos_token_id=16)
    config_case("cfg_eos_negative", ["eos_token_id", "-1"], eos_token_id=-1)
    config_case("cfg_eos_list_bad_member", ["eos_token_id"], eos_token_id=[2, "3"])
    config_case("cfg_eos_object", ["eos_token_id"], eos_token_id={"id": 2})
    config_case("cfg_eos_list_too_long", ["eos_token_id", "more than"], eos_token_id=[2] * 100)
    config_case("cfg_bos_empty_list", ["bos_token_id"], bos_token_id=[])
    config_case("cfg_bos_out_of_vocab", ["bos_token_id", "outside the vocabulary"], bos_token_id=99)
    config_case("cfg_sliding_window_zero", ["sliding_window", "out of range"], model_type="mistral", sliding_window=0)

    # ---- generation_config.json
    generation_case("gen_not_json", ["invalid JSON"], "{eos_token_id: 2}")
    generation_case("gen_not_object", ["expected a JSON object"], "2\n")
    generation_case("gen_eos_out_of_vocab", ["eos_token_id", "outside the vocabulary"], '{"eos_token_id": [2, 16]}')
    generation_case("gen_eos_string", ["eos_token_id"], '{"eos_token_id": "</s>"}')
    generation_case("gen_bos_empty_list", ["bos_token_id"], '{"bos_token_id": []}')
    generation_case("gen_bos_out_of_vocab", ["bos_token_id", "outside the vocabulary"], '{"bos_token_id": 16}')
    generation_case("gen_duplicate_key", ["duplicate key", "eos_token_id"], '{"eos_token_id": 2, "eos_token_id": 3}')

    # ---- the folder itself
    files = base_files()
    del files["model.safetensors"]
    case("folder_no_weights", "", ["no model.safetensors"], files)
    files = base_files()
    del files["config.json"]
    files["config.json/README"] = "config.json is a folder here\n"
    case("folder_config_is_dir", "config.json", ["not a regular file"], files)
    files = base_files()
    del files["model.safetensors"]
    files["model.safetensors/README"] = "model.safetensors is a folder here\n"
    case("folder_weights_is_dir", "model.safetensors", ["not a regular file"], files)


def fuzz_seeds():
    """{target: {seed name: bytes}} for fuzz/corpus/<target>/."""
    by_name = {c[0]: c[4] for c in CASES}
    seeds = {"safetensors": {}, "config": {}, "shard_index": {}, "model": {}}

    def raw(content):
        return content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content

    # safetensors: small valid files of several shapes and a sample of defects (kept under 4 KB).
    two = [["a", "F32", [2, 3], encode("a", "F32", 6)], ["b", "BF16", [4], encode("b", "BF16", 4)]]
    st = seeds["safetensors"]
    st["valid_two_tensors"] = safetensors(two, {"format": "pt"})
    st["valid_unpadded"] = safetensors(two, pad_to=1)
    st["valid_empty"] = safetensors([])
    st["valid_zero_sized"] = safetensors([["z", "F16", [0, 4], b""], ["s", "F32", [], encode("s", "F32", 1)]])
    st["valid_all_dtypes"] = safetensors([[f"t{d}", d, [2], bytes(2 * DTYPE_SIZE.get(d, 1))]
                                          for d in ["F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U64",
                                                    "U32", "U16", "U8", "BOOL", "F8_E4M3", "F8_E5M2", "F8_E8M0"]])
    st["valid_rank8"] = safetensors([["r", "U8", [1, 1, 1, 1, 1, 1, 2, 2], bytes(4)]])
    for name in ["ok_base", "st_offsets_gap", "st_offsets_overlap", "st_truncated_data", "st_shape_numel_overflow",
                 "st_metadata_not_string", "st_duplicate_tensor", "st_unknown_dtype", "st_header_length_huge"]:
        st[name] = by_name[name]["model.safetensors"]

    cfg = seeds["config"]
    for name in ["ok_base", "ok_qwen3_transformers5", "ok_qwen2_bias", "ok_llama3_rope", "cfg_gqa_not_divisible",
                 "cfg_rope_llama3_freq_order", "cfg_head_dim_not_derivable", "cfg_eos_out_of_vocab", "cfg_bos_empty_list"]:
        cfg[name] = raw(by_name[name]["config.json"])
    cfg["generation_ok"] = raw(by_name["ok_base"]["generation_config.json"])
    cfg["generation_bad"] = raw(by_name["gen_eos_out_of_vocab"]["generation_config.json"])
    cfg["mistral"] = raw(config_text(with_config(model_type="mistral", sliding_window=32)))

    idx = seeds["shard_index"]
    idx["ok_sharded"] = raw(by_name["ok_sharded"]["model.safetensors.index.json"])
    for name in ["shard_path_traversal", "shard_file_name_not_string", "shard_index_duplicate_key"]:
        idx[name] = raw(by_name[name]["model.safetensors.index.json"])

    # model: two bytes of config length, config.json, then model.safetensors (see fuzz_model.cpp).
    for name in ["ok_base", "ok_qwen3_transformers5", "ok_qwen2_bias", "bind_missing_tensor", "bind_extra_tensor",
                 "bind_int32_weight", "bind_misshaped_tensor", "bind_untied_without_lm_head"]:
        c = raw(by_name[name]["config.json"])
        seeds["model"][name] = struct.pack("<H", len(c)) + c + by_name[name]["model.safetensors"]
    return seeds


def main():
    build_cases()
    names = [c[0] for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    lines = ["# Written by tools/make_malformed_corpus.py; do not edit by hand.",
             "# case<TAB>expect (ok|error)<TAB>file the error names (case-relative; '.': the folder)<TAB>substrings..."]
    for name, expect, file, needles, files in CASES:
        d = os.path.join(OUT, name)
        for rel, content in files.items():
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as fh:
                fh.write(content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content)
        for n in needles:
            assert "\t" not in n and "\n" not in n
        lines.append("\t".join([name, expect, file] + needles))
    with open(os.path.join(OUT, "cases.tsv"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(OUT) for f in fs)
    print(f"wrote {len(CASES)} cases, {total} bytes, to {os.path.normpath(OUT)}", file=sys.stderr)
    count = 0
    for target, files in fuzz_seeds().items():
        # Only the corpora this script writes are replaced; other targets' seeds are hand-made.
        if os.path.isdir(os.path.join(FUZZ, target)):
            shutil.rmtree(os.path.join(FUZZ, target))
        os.makedirs(os.path.join(FUZZ, target))
        for name, content in files.items():
            assert len(content) <= 8192, (target, name, len(content))
            with open(os.path.join(FUZZ, target, name), "wb") as fh:
                fh.write(content)
            count += 1
    print(f"wrote {count} fuzz seeds to {os.path.normpath(FUZZ)}", file=sys.stderr)


if __name__ == "__main__":
    main()
